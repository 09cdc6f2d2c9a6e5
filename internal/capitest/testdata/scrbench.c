/*
 * scrbench: measures ckpt's SCR-compatible API against MPI's own limits,
 * in one run (BenchmarkCAPI in bench_test.go drives it).
 *
 * Usage: mpirun -np N scrbench calls ITERATIONS
 *        mpirun -np N scrbench checkpoint MIB COUNT
 *
 * calls: the mean time of MPI_Barrier and MPI_Allreduce (the limits: no
 * collective call can cost less than one of them), then of
 * SCR_Need_checkpoint, SCR_Route_file in an output phase, and an empty
 * SCR_Start_output/SCR_Complete_output pair for each flag. Each is timed
 * over ITERATIONS calls on every rank; the figure is the slowest rank's
 * mean. Prints lines "call NAME SECONDS_PER_CALL".
 *
 * checkpoint: COUNT checkpoints of MIB MiB per rank, each one file
 * written with write(2) from a buffer filled once; prints
 * "checkpoint K SECONDS" for each, the slowest rank's time from
 * SCR_Start_checkpoint to the return of SCR_Complete_checkpoint (under
 * ckpt run, where each rank is an MPI singleton, every rank prints its
 * own: the harness takes the largest).
 *
 * Exits non-zero when any SCR call fails.
 */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scr.h"

static int rank, ranks;

static void check(int rc, const char* what)
{
  if (rc != SCR_SUCCESS) {
    fprintf(stderr, "rank %d: %s failed\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* slowest is the largest of every rank's t. */
static double slowest(double t)
{
  double max = 0;
  MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

static void report(const char* name, double total, int n)
{
  double t = slowest(total) / n;
  if (rank == 0) {
    printf("call %s %.9f\n", name, t);
    fflush(stdout);
  }
}

static void calls(int n)
{
  double t0;
  int x = 1, y = 0, flag = 0;
  char file[SCR_MAX_FILENAME];

  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (int i = 0; i < n; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  report("MPI_Barrier", MPI_Wtime() - t0, n);

  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (int i = 0; i < n; i++) {
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  }
  report("MPI_Allreduce", MPI_Wtime() - t0, n);

  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (int i = 0; i < n; i++) {
    check(SCR_Need_checkpoint(&flag), "SCR_Need_checkpoint");
  }
  report("SCR_Need_checkpoint", MPI_Wtime() - t0, n);

  /* Route_file registers each name in the open dataset, which is then
   * abandoned (nothing was written). */
  check(SCR_Start_output("route", SCR_FLAG_OUTPUT), "SCR_Start_output");
  double total = 0;
  for (int i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "out/rank%d.%d", rank, i);
    double t = MPI_Wtime();
    check(SCR_Route_file(name, file), "SCR_Route_file");
    total += MPI_Wtime() - t;
  }
  report("SCR_Route_file", total, n);
  if (SCR_Complete_output(0) == SCR_SUCCESS) {
    fprintf(stderr, "rank %d: SCR_Complete_output(0) succeeded\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  static const struct {
    const char* name;
    int flags;
  } pairs[] = {
    {"empty_output_pair_FLAG_NONE", SCR_FLAG_NONE},
    {"empty_output_pair_FLAG_OUTPUT", SCR_FLAG_OUTPUT},
    {"empty_output_pair_FLAG_CHECKPOINT", SCR_FLAG_CHECKPOINT},
  };
  for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
    /* a checkpoint, even empty, is committed on every node: fewer */
    int m = pairs[p].flags == SCR_FLAG_CHECKPOINT ? n / 20 + 1 : n;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < m; i++) {
      char name[64];
      snprintf(name, sizeof name, "%s.%d", pairs[p].name, i);
      check(SCR_Start_output(name, pairs[p].flags), "SCR_Start_output");
      check(SCR_Complete_output(1), "SCR_Complete_output");
    }
    report(pairs[p].name, MPI_Wtime() - t0, m);
  }
}

static void checkpoints(long mib, int count)
{
  size_t size = (size_t)mib << 20, chunk = 8u << 20;
  char* buf = malloc(chunk);
  if (buf == NULL) {
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < chunk; i++) {
    buf[i] = (char)(i * 131 + rank * 7 + (i >> 13));
  }
  for (int k = 0; k < count; k++) {
    char file[SCR_MAX_FILENAME], name[64];
    int flag;
    /* Start together: under ckpt run each rank is an MPI singleton, and
     * SCR_Need_checkpoint is the collective that joins them. */
    MPI_Barrier(MPI_COMM_WORLD);
    check(SCR_Need_checkpoint(&flag), "SCR_Need_checkpoint");
    double t0 = MPI_Wtime();
    check(SCR_Start_checkpoint(), "SCR_Start_checkpoint");
    snprintf(name, sizeof name, "rank_%d.ckpt", rank);
    check(SCR_Route_file(name, file), "SCR_Route_file");
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int valid = fd >= 0;
    for (size_t off = 0; valid && off < size; off += chunk) {
      buf[0] = (char)k; /* every checkpoint's bytes differ */
      size_t n = size - off < chunk ? size - off : chunk;
      valid = write(fd, buf, n) == (ssize_t)n;
    }
    if (fd >= 0 && close(fd) != 0) {
      valid = 0;
    }
    check(SCR_Complete_checkpoint(valid), "SCR_Complete_checkpoint");
    double t = slowest(MPI_Wtime() - t0);
    if (rank == 0) {
      printf("checkpoint %d %.6f\n", k, t);
      fflush(stdout);
    }
  }
  free(buf);
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc < 3) {
    if (rank == 0) {
      fprintf(stderr, "usage: scrbench calls ITERATIONS | checkpoint MIB COUNT\n");
    }
    MPI_Finalize();
    return 2;
  }
  check(SCR_Init(), "SCR_Init");
  if (strcmp(argv[1], "calls") == 0) {
    calls(atoi(argv[2]));
  } else if (strcmp(argv[1], "checkpoint") == 0 && argc == 4) {
    checkpoints(atol(argv[2]), atoi(argv[3]));
  } else {
    fprintf(stderr, "scrbench: unknown mode %s\n", argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check(SCR_Finalize(), "SCR_Finalize");
  MPI_Finalize();
  return 0;
}
