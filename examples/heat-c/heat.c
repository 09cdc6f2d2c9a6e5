/*
 * heat: 2-D heat distribution on a plate, a C MPI application that
 * checkpoints through the SCR API (ckpt's libscr.so, or LLNL's SCR).
 *
 * The plate is an NX x NY grid split by rows across the ranks. Its top
 * edge is held at 100 degrees and the other edges at 0; each iteration
 * replaces every inner point by the mean of its four neighbours (Jacobi),
 * after exchanging the boundary rows with the neighbouring ranks.
 *
 * Every iteration the program asks SCR_Need_checkpoint whether to
 * checkpoint (SCR_CHECKPOINT_INTERVAL, _SECONDS or _OVERHEAD decide); a
 * checkpoint is dataset "heat.<iteration>" with one file per rank holding
 * its rows and a checksum. On start it restarts from the newest
 * checkpoint that reads back whole, and it stops early when
 * SCR_Should_exit says so (ckpt halt, SCR_HALT_SECONDS). At the end it
 * writes the plate's temperatures as an output dataset, result/rank_<r>.txt
 * under the prefix, and prints a summary.
 *
 * Build: mpicc -O2 -I PREFIX/include heat.c -o heat \
 *          -L PREFIX/lib -Wl,-rpath,PREFIX/lib -lscr
 * Run:   SCR_CHECKPOINT_INTERVAL=100 mpirun -np 4 ./heat 256 256 1000
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scr.h"

#define HOT 100.0

static int rank, ranks;

/* Plate is this rank's rows, with one halo row above and one below. */
typedef struct {
  int nx, ny;      /* the whole plate */
  int row0, rows;  /* this rank's first row and row count */
  double* t;       /* (rows + 2) x nx temperatures */
  double* next;
} Plate;

#define AT(p, buf, i, j) ((buf)[(size_t)(i) * (p)->nx + (j)])

static void plate_init(Plate* p, int nx, int ny)
{
  p->nx = nx;
  p->ny = ny;
  int base = ny / ranks, extra = ny % ranks;
  p->rows = base + (rank < extra);
  p->row0 = rank * base + (rank < extra ? rank : extra);
  size_t n = (size_t)(p->rows + 2) * nx;
  p->t = calloc(n, sizeof(double));
  p->next = calloc(n, sizeof(double));
  if (!p->t || !p->next) {
    fprintf(stderr, "heat: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* The top edge (global row 0) is hot; it lives in rank 0's first row. */
  if (p->row0 == 0)
    for (int j = 0; j < nx; j++) AT(p, p->t, 1, j) = AT(p, p->next, 1, j) = HOT;
}

/* step exchanges the halo rows and makes one Jacobi sweep; it returns the
 * largest change of any point on this rank. */
static double step(Plate* p)
{
  int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int down = rank < ranks - 1 ? rank + 1 : MPI_PROC_NULL;
  MPI_Sendrecv(&AT(p, p->t, 1, 0), p->nx, MPI_DOUBLE, up, 0,
               &AT(p, p->t, p->rows + 1, 0), p->nx, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(&AT(p, p->t, p->rows, 0), p->nx, MPI_DOUBLE, down, 1,
               &AT(p, p->t, 0, 0), p->nx, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  double change = 0;
  for (int i = 1; i <= p->rows; i++) {
    int g = p->row0 + i - 1;
    for (int j = 0; j < p->nx; j++) {
      double v = AT(p, p->t, i, j);
      if (g > 0 && g < p->ny - 1 && j > 0 && j < p->nx - 1)
        v = 0.25 * (AT(p, p->t, i - 1, j) + AT(p, p->t, i + 1, j) + AT(p, p->t, i, j - 1) + AT(p, p->t, i, j + 1));
      double d = v > AT(p, p->t, i, j) ? v - AT(p, p->t, i, j) : AT(p, p->t, i, j) - v;
      if (d > change) change = d;
      AT(p, p->next, i, j) = v;
    }
  }
  double* swap = p->t;
  p->t = p->next;
  p->next = swap;
  return change;
}

/* checksum is FNV-1a over the bytes of this rank's rows. */
static uint64_t checksum(const Plate* p)
{
  const unsigned char* b = (const unsigned char*)&AT(p, p->t, 1, 0);
  size_t n = (size_t)p->rows * p->nx * sizeof(double);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* A checkpoint file: this header, then the rows, then their checksum. */
typedef struct {
  char magic[8];
  int32_t iter, rank, ranks, nx, ny, rows;
} Header;

static const char magic[8] = "HEATCKP";

static int save(const Plate* p, int iter)
{
  char name[64], rel[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
  snprintf(name, sizeof(name), "heat.%d", iter);
  snprintf(rel, sizeof(rel), "%s/rank_%d.dat", name, rank);
  if (SCR_Start_output(name, SCR_FLAG_CHECKPOINT) != SCR_SUCCESS) return 0;
  int valid = 0;
  if (SCR_Route_file(rel, path) == SCR_SUCCESS) {
    FILE* f = fopen(path, "wb");
    if (f) {
      Header h = {{0}, iter, rank, ranks, p->nx, p->ny, p->rows};
      memcpy(h.magic, magic, sizeof(magic));
      uint64_t sum = checksum(p);
      size_t n = (size_t)p->rows * p->nx;
      valid = fwrite(&h, sizeof(h), 1, f) == 1 && fwrite(&AT(p, p->t, 1, 0), sizeof(double), n, f) == n &&
              fwrite(&sum, sizeof(sum), 1, f) == 1;
      valid = (fclose(f) == 0) && valid;
    }
  }
  /* Complete_output is the AND over the ranks: a checkpoint one rank
   * failed to write is not one. */
  return SCR_Complete_output(valid) == SCR_SUCCESS;
}

/* load reads this rank's file of checkpoint name into p and returns its
 * iteration, or -1 if the file is missing, of another shape, or fails its
 * checksum. */
static int load(Plate* p, const char* name)
{
  char rel[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
  snprintf(rel, sizeof(rel), "%s/rank_%d.dat", name, rank);
  if (SCR_Route_file(rel, path) != SCR_SUCCESS) return -1;
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  Header h;
  uint64_t sum = 0;
  size_t n = (size_t)p->rows * p->nx;
  int ok = fread(&h, sizeof(h), 1, f) == 1 && memcmp(h.magic, magic, sizeof(magic)) == 0 && h.rank == rank &&
           h.ranks == ranks && h.nx == p->nx && h.ny == p->ny && h.rows == p->rows &&
           fread(&AT(p, p->t, 1, 0), sizeof(double), n, f) == n && fread(&sum, sizeof(sum), 1, f) == 1 &&
           sum == checksum(p);
  fclose(f);
  return ok ? h.iter : -1;
}

/* restart tries the checkpoints newest first until one reads back whole
 * on every rank, and returns its iteration (0: none). */
static int restart(Plate* p)
{
  for (;;) {
    int have = 0;
    char name[SCR_MAX_FILENAME];
    if (SCR_Have_restart(&have, name) != SCR_SUCCESS || !have) return 0;
    SCR_Start_restart(name);
    int iter = load(p, name);
    if (SCR_Complete_restart(iter >= 0) == SCR_SUCCESS) {
      if (rank == 0) printf("heat: restarted from %s\n", name);
      return iter;
    }
    if (rank == 0) printf("heat: %s did not read back, trying an older one\n", name);
  }
}

/* write_result writes the plate as text, an output dataset at
 * result/rank_<r>.txt under the prefix. */
static void write_result(const Plate* p, int iter)
{
  char rel[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
  snprintf(rel, sizeof(rel), "result/rank_%d.txt", rank);
  SCR_Start_output("result", SCR_FLAG_OUTPUT);
  int valid = 0;
  if (SCR_Route_file(rel, path) == SCR_SUCCESS) {
    FILE* f = fopen(path, "w");
    if (f) {
      fprintf(f, "# iteration %d, rows %d to %d of %d, %d columns\n", iter, p->row0, p->row0 + p->rows - 1, p->ny, p->nx);
      for (int i = 1; i <= p->rows; i++)
        for (int j = 0; j < p->nx; j++) fprintf(f, "%.6f%c", AT(p, p->t, i, j), j == p->nx - 1 ? '\n' : ' ');
      valid = fclose(f) == 0;
    }
  }
  SCR_Complete_output(valid);
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc < 4) {
    if (rank == 0) fprintf(stderr, "usage: heat NX NY ITERATIONS [--fail-at N]\n");
    MPI_Finalize();
    return 2;
  }
  int nx = atoi(argv[1]), ny = atoi(argv[2]), iterations = atoi(argv[3]);
  /* --fail-at N: the last rank dies after iteration N, to show a restart. */
  int fail_at = argc >= 6 && !strcmp(argv[4], "--fail-at") ? atoi(argv[5]) : -1;
  if (nx < 3 || ny < ranks || iterations < 0) {
    if (rank == 0) fprintf(stderr, "heat: need NX >= 3, NY >= ranks, ITERATIONS >= 0\n");
    MPI_Finalize();
    return 2;
  }

  if (SCR_Init() != SCR_SUCCESS && rank == 0)
    fprintf(stderr, "heat: SCR_Init failed (SCR_ENABLE=0?): running without checkpoints\n");

  Plate p;
  plate_init(&p, nx, ny);
  int iter = restart(&p), checkpoints = 0;
  double change = 0;
  while (iter < iterations) {
    change = step(&p);
    iter++;
    int need = 0;
    SCR_Need_checkpoint(&need);
    if (need && save(&p, iter)) checkpoints++;
    int exit_now = 0;
    SCR_Should_exit(&exit_now);
    if (exit_now) {
      if (rank == 0) printf("heat: asked to stop at iteration %d\n", iter);
      break;
    }
    if (iter == fail_at && rank == ranks - 1) {
      fprintf(stderr, "heat: rank %d fails after iteration %d\n", rank, iter);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &change, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  /* The plate's total heat, summed in rank order so that it is the same
   * bits on every run with the same ranks. */
  double local = 0, total = 0;
  for (int i = 1; i <= p.rows; i++)
    for (int j = 0; j < nx; j++) local += AT(&p, p.t, i, j);
  double* all = rank == 0 ? malloc(ranks * sizeof(double)) : NULL;
  MPI_Gather(&local, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < ranks; r++) total += all[r];
    free(all);
  }
  uint64_t sum = checksum(&p), sums = 0;
  MPI_Reduce(&sum, &sums, 1, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD);

  if (iter == iterations) write_result(&p, iter);
  if (rank == 0)
    printf("heat: iteration %d of %d, %d checkpoints, last change %.3e, total heat %.6f, state %016llx\n", iter,
           iterations, checkpoints, change, total, (unsigned long long)sums);
  SCR_Finalize();
  free(p.t);
  free(p.next);
  MPI_Finalize();
  return 0;
}
