/*
 * smoke.c: the C API's end-to-end path under mpirun, for internal/scr's
 * TestSmokeMPI. A first run (no checkpoint yet) writes checkpoints 1..N,
 * each rank a file with its rank and the step; a second run must find
 * checkpoint N, read back every byte, and exit non-zero on any mismatch.
 * Usage: smoke N, or smoke misuse (SCR_Start_checkpoint twice: the job
 * must abort with the call's message).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scr.h"

#define BYTES 100000

static void fill(char* buf, int rank, int step)
{
  for (int i = 0; i < BYTES; i++) {
    buf[i] = (char)(rank * 31 + step * 7 + i);
  }
}

static void die(int rank, const char* what)
{
  fprintf(stderr, "smoke: rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = argc > 1 ? atoi(argv[1]) : 3;
  static char buf[BYTES], want[BYTES];

  if (SCR_Init() != SCR_SUCCESS) die(rank, "SCR_Init failed");
  if (argc > 1 && strcmp(argv[1], "misuse") == 0) {
    SCR_Start_checkpoint();
    SCR_Start_checkpoint(); /* aborts the job */
    fprintf(stderr, "smoke: rank %d: the second SCR_Start_checkpoint returned\n", rank);
    MPI_Finalize();
    return 0;
  }
  int have = 0;
  char name[SCR_MAX_FILENAME];
  if (SCR_Have_restart(&have, name) != SCR_SUCCESS) die(rank, "SCR_Have_restart failed");
  if (have) {
    char got[SCR_MAX_FILENAME];
    if (SCR_Start_restart(got) != SCR_SUCCESS) die(rank, "SCR_Start_restart failed");
    if (strcmp(got, name) != 0) die(rank, "Start_restart's name differs from Have_restart's");
    char file[SCR_MAX_FILENAME], path[64];
    int step = -1;
    if (sscanf(name, "scr.dataset.%d", &step) != 1) die(rank, "unexpected dataset name");
    snprintf(path, sizeof path, "ckpt.%d/rank_%d.ckpt", step, rank);
    int valid = 0;
    if (SCR_Route_file(path, file) == SCR_SUCCESS) {
      FILE* f = fopen(file, "rb");
      if (f != NULL && fread(buf, 1, BYTES, f) == BYTES) {
        fill(want, rank, step);
        valid = memcmp(buf, want, BYTES) == 0;
      }
      if (f != NULL) fclose(f);
    }
    if (SCR_Complete_restart(valid) != SCR_SUCCESS) die(rank, "SCR_Complete_restart: not valid");
    if (rank == 0) printf("restarted from %s\n", name);
  } else {
    for (int step = 1; step <= n; step++) {
      if (SCR_Start_checkpoint() != SCR_SUCCESS) die(rank, "SCR_Start_checkpoint failed");
      char path[64], file[SCR_MAX_FILENAME];
      snprintf(path, sizeof path, "ckpt.%d/rank_%d.ckpt", step, rank);
      if (SCR_Route_file(path, file) != SCR_SUCCESS) die(rank, "SCR_Route_file failed");
      fill(buf, rank, step);
      FILE* f = fopen(file, "wb");
      int valid = f != NULL && fwrite(buf, 1, BYTES, f) == BYTES;
      if (f != NULL && fclose(f) != 0) valid = 0;
      if (SCR_Complete_checkpoint(valid) != SCR_SUCCESS) die(rank, "SCR_Complete_checkpoint failed");
    }
    if (rank == 0) printf("wrote %d checkpoints\n", n);
  }
  if (SCR_Finalize() != SCR_SUCCESS) die(rank, "SCR_Finalize failed");
  MPI_Finalize();
  return 0;
}
