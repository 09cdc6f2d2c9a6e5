/* An unmodified program for ckpt run --transparent's tests and demo: a 1D
 * heat stencil (explicit finite differences) that knows nothing of ckpt. It
 * prints a checksum of its grid every 10 steps and at the end.
 *
 *   stencil GATE [CELLS [STEPS [PAUSE_US]]]
 *
 * Given a file name as GATE ("-": none), it waits half-way until that file
 * exists, so that a test can checkpoint it, or fail its node, at a known
 * point however fast the machine is; PAUSE_US pauses every step, to make a
 * small grid last. Its output depends on neither. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long long checksum(const double *a, int n) {
	unsigned long long h = 1469598103934665603ULL; /* FNV-1a */
	for (int i = 0; i < n; i++) {
		unsigned long long x;
		memcpy(&x, &a[i], sizeof x);
		h = (h ^ x) * 1099511628211ULL;
	}
	return h;
}

int main(int argc, char **argv) {
	const char *gate = argc > 1 && strcmp(argv[1], "-") != 0 ? argv[1] : NULL;
	int n = argc > 2 ? atoi(argv[2]) : 1 << 16;
	int steps = argc > 3 ? atoi(argv[3]) : 200;
	int pause = argc > 4 ? atoi(argv[4]) : 0;
	double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
	if (!a || !b || n < 3) {
		fprintf(stderr, "stencil: bad size %d\n", n);
		return 1;
	}
	for (int i = 0; i < n; i++)
		a[i] = (double)(i % 97) / 97.0;
	for (int s = 1; s <= steps; s++) {
		b[0] = a[0];
		b[n - 1] = a[n - 1];
		for (int i = 1; i < n - 1; i++)
			b[i] = a[i] + 0.25 * (a[i - 1] - 2 * a[i] + a[i + 1]);
		double *t = a;
		a = b;
		b = t;
		if (s % 10 == 0) {
			printf("step %d checksum %016llx\n", s, checksum(a, n));
			fflush(stdout);
		}
		if (pause > 0)
			usleep(pause);
		if (gate && s == steps / 2)
			while (access(gate, F_OK) != 0)
				usleep(10000);
	}
	printf("final checksum %016llx\n", checksum(a, n));
	return 0;
}
