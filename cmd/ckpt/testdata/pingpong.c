/* An unmodified program of two ranks (CKPT_RANK 0 and 1, on two nodes)
 * that hold one TCP connection for their whole run and pass a counter
 * over it: rank 1 connects to rank 0 at HOST:PORT once, sends the
 * counter, rank 0 steps it and sends it back, STEPS times; each prints
 * every value. After rank 1 sent step STEPS*2/3+1 it waits for the file
 * GATE before reading the answer, which waits meanwhile in its socket:
 * a test checkpoints the pair, fails a node and restores them there,
 * whatever the machine's speed. A connection reset or closed makes a
 * rank exit 1; it never connects again.
 *
 * usage: pingpong GATE HOST PORT STEPS */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void full(int fd, void *b, size_t n, int writing) {
	char *p = b;
	while (n > 0) {
		ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
		if (k <= 0) {
			fprintf(stderr, "the connection %s\n", k == 0 ? "closed" : "failed");
			exit(1);
		}
		p += k;
		n -= (size_t)k;
	}
}

int main(int argc, char **argv) {
	if (argc != 5 || !getenv("CKPT_RANK")) {
		fprintf(stderr, "usage: CKPT_RANK=R pingpong GATE HOST PORT STEPS\n");
		return 2;
	}
	const char *gate = argv[1];
	int rank = atoi(getenv("CKPT_RANK")), steps = atoi(argv[4]);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", argv[2]);
		return 2;
	}
	int fd;
	if (rank == 0) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0) {
			perror("listen");
			return 1;
		}
		fd = accept(l, NULL, NULL);
		close(l);
	} else {
		for (;;) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
				break;
			close(fd);
			usleep(50000);
		}
	}
	long v = 7;
	for (int i = 1; i <= steps; i++) {
		if (rank == 1) {
			full(fd, &v, sizeof v, 1);
			if (i == steps * 2 / 3 + 1)
				while (access(gate, F_OK) != 0)
					usleep(20000);
			full(fd, &v, sizeof v, 0);
		} else {
			full(fd, &v, sizeof v, 0);
			v = (v * 31 + i) % 1000003;
			full(fd, &v, sizeof v, 1);
		}
		printf("rank %d step %d %ld\n", rank, i, v);
		fflush(stdout);
		usleep(20000);
	}
	printf("rank %d final %ld\n", rank, v);
	return 0;
}
