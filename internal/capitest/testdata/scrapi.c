/*
 * scrapi: drives ckpt's SCR-compatible API through the sequences an SCR
 * application uses, and exits non-zero on any wrong byte or unexpected
 * return value (where SCR's own examples print and exit 0).
 *
 * Usage: mpirun -np N scrapi COMMAND ARGS... [COMMAND ARGS...]...
 * The commands run in order, between SCR_Init and SCR_Finalize (see
 * usage() for the list). Arguments of the form config:KEY=VALUE are
 * passed to SCR_Config before SCR_Init.
 *
 * Every file this program writes has a 16-byte header (magic, dataset
 * number, rank, payload size: little-endian uint32) and a payload that is
 * a function of the dataset number and the rank (pattern()), so that a
 * reader, here or in the Go test, can check every byte of it.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scr.h"

#define MAGIC 0x53435254u
#define HEADER 16

static int rank, ranks;
static int errors;          /* wrong bytes and unexpected returns, this rank */
static int tolerate_wrong;  /* a wrong byte makes the restart invalid, not an error */

#define fail(...)                                        \
  do {                                                   \
    fprintf(stderr, "rank %d: ERROR: ", rank);           \
    fprintf(stderr, __VA_ARGS__);                        \
    fputc('\n', stderr);                                 \
    errors++;                                            \
  } while (0)

/* The payload's size and bytes for dataset k on rank r: sizes differ by
 * rank and dataset so that a file of another rank or dataset is noticed. */
static uint32_t payload_size(uint32_t k, uint32_t r) { return 5000 + 997 * r + 13 * k; }

static unsigned char pattern(uint32_t k, uint32_t r, uint32_t i)
{
  uint32_t x = i * 2654435761u + k * 40503u + r * 2246822519u;
  return (unsigned char)((x >> 24) ^ (x >> 11));
}

static void put32(unsigned char* p, uint32_t v)
{
  p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24;
}

/* record builds the header and payload of dataset k for rank r. */
static unsigned char* record(uint32_t k, uint32_t r, size_t* len)
{
  uint32_t n = payload_size(k, r);
  unsigned char* buf = malloc(HEADER + n);
  put32(buf, MAGIC); put32(buf + 4, k); put32(buf + 8, r); put32(buf + 12, n);
  for (uint32_t i = 0; i < n; i++) buf[HEADER + i] = pattern(k, r, i);
  *len = HEADER + n;
  return buf;
}

static int write_at(const char* path, off_t off, uint32_t k, int truncate)
{
  size_t len;
  unsigned char* buf = record(k, rank, &len);
  int fd = open(path, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0), 0644);
  int ok = fd >= 0;
  if (!ok) fail("open %s for writing: %s", path, strerror(errno));
  size_t done = 0;
  while (ok && done < len) {
    ssize_t w = pwrite(fd, buf + done, len - done, off + done);
    if (w <= 0) { fail("write %s: %s", path, strerror(errno)); ok = 0; break; }
    done += w;
  }
  if (fd >= 0 && (fsync(fd) != 0 || close(fd) != 0)) { fail("close %s: %s", path, strerror(errno)); ok = 0; }
  free(buf);
  return ok;
}

/* check_at reads the record at off in path and reports whether it is
 * dataset k's record of this rank, byte for byte (and, with whole, the
 * file's only contents). A wrong byte is an
 * error unless tolerate_wrong is set: then the caller votes invalid. */
static int check_at(const char* path, off_t off, uint32_t k, int whole)
{
  size_t len;
  unsigned char* want = record(k, rank, &len);
  unsigned char* got = malloc(len + 1);
  int ok = 1;
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    fail("open %s for reading: %s", path, strerror(errno));
    ok = 0;
  } else {
    ssize_t n = pread(fd, got, len + 1, off);
    close(fd);
    struct stat st;
    if (n < (ssize_t)len) {
      fprintf(stderr, "rank %d: %s: %zd bytes at %lld, want %zu\n", rank, path, n, (long long)off, len);
      ok = 0;
    } else if (memcmp(got, want, len) != 0) {
      size_t i = 0;
      while (got[i] == want[i]) i++;
      fprintf(stderr, "rank %d: %s: wrong byte at %zu (dataset %u): %#x, want %#x\n",
              rank, path, (size_t)off + i, k, got[i], want[i]);
      ok = 0;
    } else if (whole && stat(path, &st) == 0 && (size_t)st.st_size != len) {
      fprintf(stderr, "rank %d: %s: %lld bytes, want %zu\n", rank, path, (long long)st.st_size, len);
      ok = 0;
    }
    if (!ok && !tolerate_wrong) errors++;
  }
  free(want);
  free(got);
  return ok;
}

/* number returns the number after the last '.' of a dataset name
 * ("ckpt.7" → 7), the dataset number its files were written with. */
static uint32_t number(const char* name)
{
  const char* dot = strrchr(name, '.');
  return dot ? (uint32_t)strtoul(dot + 1, NULL, 10) : 0;
}

static void expect_rc(const char* call, int rc, int want)
{
  if (rc != want) fail("%s returned %d, want %d", call, rc, want);
}

/* agree reports whether every rank holds the same string. */
static int agree(const char* s)
{
  char mine[SCR_MAX_FILENAME] = {0}, root[SCR_MAX_FILENAME] = {0};
  strncpy(mine, s, sizeof(mine) - 1);
  memcpy(root, mine, sizeof(root));
  MPI_Bcast(root, sizeof(root), MPI_CHAR, 0, MPI_COMM_WORLD);
  int same = strcmp(root, mine) == 0, all;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

/* write_dataset writes dataset "<base>.<k>" with one file per rank,
 * "<base>.<k>/rank_<r>.ckpt", flagged flags. */
static void write_dataset(const char* base, uint32_t k, int flags)
{
  char name[SCR_MAX_FILENAME], rel[SCR_MAX_FILENAME], file[SCR_MAX_FILENAME];
  snprintf(name, sizeof(name), "%s.%u", base, k);
  expect_rc("SCR_Start_output", SCR_Start_output(name, flags), SCR_SUCCESS);
  snprintf(rel, sizeof(rel), "%s/rank_%d.ckpt", name, rank);
  int valid = 0;
  if (SCR_Route_file(rel, file) != SCR_SUCCESS) fail("SCR_Route_file(%s) failed in an output phase", rel);
  else valid = write_at(file, 0, k, 1);
  expect_rc("SCR_Complete_output", SCR_Complete_output(valid), SCR_SUCCESS);
}

/* restart runs SCR's restart loop: take the newest checkpoint offered,
 * read and check this rank's file, vote, and go on to the next older one
 * while the vote fails. It then checks that the checkpoint restored is
 * want ("none": no checkpoint at all). shared names the one file every
 * rank reads its record from at rank*stride (NULL: a file per rank). */
static void restart(const char* want, const char* shared)
{
  char restored[SCR_MAX_FILENAME] = "none";
  for (int attempt = 0; attempt < 100; attempt++) {
    int flag = -1;
    char name[SCR_MAX_FILENAME] = {0}, again[SCR_MAX_FILENAME] = {0};
    expect_rc("SCR_Have_restart", SCR_Have_restart(&flag, name), SCR_SUCCESS);
    if (flag != 0 && flag != 1) { fail("SCR_Have_restart set flag %d", flag); return; }
    if (!flag) break;
    if (!agree(name)) fail("SCR_Have_restart named %s here, another name on another rank", name);
    expect_rc("SCR_Start_restart", SCR_Start_restart(again), SCR_SUCCESS);
    if (strcmp(name, again) != 0) fail("SCR_Start_restart named %s, SCR_Have_restart %s", again, name);
    char rel[SCR_MAX_FILENAME], file[SCR_MAX_FILENAME];
    uint32_t k = number(name);
    int valid = 0;
    if (shared) {
      snprintf(rel, sizeof(rel), "%s/%s", name, shared);
    } else {
      snprintf(rel, sizeof(rel), "%s/rank_%d.ckpt", name, rank);
    }
    if (SCR_Route_file(rel, file) != SCR_SUCCESS) {
      fprintf(stderr, "rank %d: SCR_Route_file(%s) failed in the restart of %s\n", rank, rel, name);
      if (!tolerate_wrong) errors++;
    } else {
      off_t off = 0;
      if (shared) {
        for (int r = 0; r < rank; r++) off += HEADER + payload_size(k, r);
      }
      valid = check_at(file, off, k, !shared);
    }
    int all = 0;
    MPI_Allreduce(&valid, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    expect_rc("SCR_Complete_restart", SCR_Complete_restart(valid), all ? SCR_SUCCESS : 1);
    if (rank == 0) printf("restart: %s %s\n", name, all ? "valid" : "invalid");
    if (all) { strcpy(restored, name); break; }
  }
  if (strcmp(restored, want) != 0) fail("restarted from %s, want %s", restored, want);
  if (rank == 0) printf("restarted from %s\n", restored);
}

/* reject takes the newest checkpoint, which must be want, reads it (it
 * must be right), and has the last rank alone vote it invalid:
 * SCR_Complete_restart must fail on every rank. */
static void reject(const char* want)
{
  int flag = 0;
  char name[SCR_MAX_FILENAME] = {0}, file[SCR_MAX_FILENAME], rel[SCR_MAX_FILENAME];
  expect_rc("SCR_Have_restart", SCR_Have_restart(&flag, name), SCR_SUCCESS);
  if (!flag || strcmp(name, want) != 0) { fail("SCR_Have_restart offered %s (flag %d), want %s", name, flag, want); return; }
  expect_rc("SCR_Start_restart", SCR_Start_restart(NULL), SCR_SUCCESS);
  snprintf(rel, sizeof(rel), "%s/rank_%d.ckpt", name, rank);
  int valid = 0;
  if (SCR_Route_file(rel, file) != SCR_SUCCESS) fail("SCR_Route_file(%s) failed in a restart", rel);
  else valid = check_at(file, 0, number(name), 1);
  if (rank == ranks - 1) valid = 0;
  expect_rc("SCR_Complete_restart (one rank voted invalid)", SCR_Complete_restart(valid), 1);
}

/* need calls SCR_Need_checkpoint n times, taking a checkpoint (unnamed,
 * SCR_Start_checkpoint) whenever it says so, and checks the calls that
 * said so against want, a string of 0 and 1 ("-": any). */
static void need(int n, const char* want)
{
  char got[1024] = {0};
  if (n >= (int)sizeof(got)) n = sizeof(got) - 1;
  for (int i = 0; i < n; i++) {
    int flag = -1;
    expect_rc("SCR_Need_checkpoint", SCR_Need_checkpoint(&flag), SCR_SUCCESS);
    got[i] = flag == 1 ? '1' : flag == 0 ? '0' : '?';
    if (flag == 1) {
      char file[SCR_MAX_FILENAME], rel[64];
      expect_rc("SCR_Start_checkpoint", SCR_Start_checkpoint(), SCR_SUCCESS);
      snprintf(rel, sizeof(rel), "need_%d.ckpt", rank);
      int valid = SCR_Route_file(rel, file) == SCR_SUCCESS && write_at(file, 0, i, 1);
      expect_rc("SCR_Complete_checkpoint", SCR_Complete_checkpoint(valid), SCR_SUCCESS);
    }
  }
  if (!agree(got)) fail("SCR_Need_checkpoint answered %s here, otherwise on another rank", got);
  if (rank == 0) printf("need: %s\n", got);
  if (strcmp(want, "-") != 0 && strcmp(got, want) != 0) fail("SCR_Need_checkpoint answered %s, want %s", got, want);
}

/* need_null: rank r calls SCR_Need_checkpoint and SCR_Should_exit with
 * a NULL flag, the others with a flag: every rank's call must fail (none
 * waits for the rank whose call failed), and the next calls succeed. */
static void need_null(int r)
{
  int flag = -1;
  expect_rc("SCR_Need_checkpoint (a NULL flag on one rank)", SCR_Need_checkpoint(rank == r ? NULL : &flag), 1);
  if (rank != r && flag != 0) fail("SCR_Need_checkpoint failed but set the flag to %d, want 0", flag);
  expect_rc("SCR_Should_exit (a NULL flag on one rank)", SCR_Should_exit(rank == r ? NULL : &flag), 1);
  expect_rc("SCR_Need_checkpoint", SCR_Need_checkpoint(&flag), SCR_SUCCESS);
  if (rank == 0) printf("need-null: every rank failed\n");
}

/* checkpoint_numbered writes an unnamed checkpoint of dataset k. */
static void checkpoint_numbered(uint32_t k)
{
  char file[SCR_MAX_FILENAME], rel[64];
  expect_rc("SCR_Start_checkpoint", SCR_Start_checkpoint(), SCR_SUCCESS);
  snprintf(rel, sizeof(rel), "timed_%d.ckpt", rank);
  int valid = SCR_Route_file(rel, file) == SCR_SUCCESS && write_at(file, 0, k, 1);
  expect_rc("SCR_Complete_checkpoint", SCR_Complete_checkpoint(valid), SCR_SUCCESS);
}

/* need_after takes a checkpoint, then calls SCR_Need_checkpoint until it
 * says yes (for at most limit seconds), rounds times. With min > 0, the
 * yes must not come before min seconds have passed since the checkpoint
 * started: measured from before SCR_Start_checkpoint, the time this rank
 * sees is never shorter than the library's, however slow the machine. */
static void need_after(double min, double limit, int rounds)
{
  for (int round = 0; round < rounds; round++) {
    double t0 = MPI_Wtime();
    checkpoint_numbered(round);
    int flag = 0, calls = 0;
    while (!flag) {
      expect_rc("SCR_Need_checkpoint", SCR_Need_checkpoint(&flag), SCR_SUCCESS);
      calls++;
      int stop = MPI_Wtime() - t0 > limit;
      MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (!flag && stop) { fail("SCR_Need_checkpoint said no for %.0f s (%d calls)", limit, calls); return; }
      if (!flag) usleep(20000);
    }
    double waited = MPI_Wtime() - t0;
    if (rank == 0) printf("need_after: yes after %.2f s, %d calls\n", waited, calls);
    if (min > 0 && waited < min) fail("SCR_Need_checkpoint said yes %.3f s after the checkpoint began, before %.3f s", waited, min);
  }
}

/* output writes an output dataset: every rank routes file (in which %r
 * stands for the rank), and writes record k there. */
static void output(const char* name, int flags, const char* file, uint32_t k)
{
  char rel[SCR_MAX_FILENAME] = {0}, path[SCR_MAX_FILENAME];
  const char* r = strstr(file, "%r");
  if (r) snprintf(rel, sizeof(rel), "%.*s%d%s", (int)(r - file), file, rank, r + 2);
  else snprintf(rel, sizeof(rel), "%s", file);
  expect_rc("SCR_Start_output", SCR_Start_output(name, flags), SCR_SUCCESS);
  int valid = 0;
  if (SCR_Route_file(rel, path) != SCR_SUCCESS) fail("SCR_Route_file(%s) failed in an output phase", rel);
  else valid = write_at(path, 0, k, 1);
  expect_rc("SCR_Complete_output", SCR_Complete_output(valid), SCR_SUCCESS);
}

/* shared writes dataset name with one file, "<name>/<file>", that every
 * rank routes and writes its record into, one after the other in rank
 * order. As shared-file applications do (SCR's test_api --shared-file
 * among them), rank 0 creates the file at its full size; the others open
 * it once it exists, without creating it. */
static void shared(const char* name, int flags, const char* file)
{
  char rel[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
  uint32_t k = number(name);
  snprintf(rel, sizeof(rel), "%s/%s", name, file);
  expect_rc("SCR_Start_output", SCR_Start_output(name, flags), SCR_SUCCESS);
  off_t off = 0, total = 0;
  for (int r = 0; r < ranks; r++) {
    if (r == rank) off = total;
    total += HEADER + payload_size(k, r);
  }
  int valid = 0;
  if (SCR_Route_file(rel, path) != SCR_SUCCESS) fail("SCR_Route_file(%s) failed in an output phase", rel);
  int created = 1;
  if (rank == 0) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    created = fd >= 0 && ftruncate(fd, total) == 0;
    if (!created) fail("create %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
  }
  MPI_Bcast(&created, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (created) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) {
      fail("open %s, which rank 0 created: %s", path, strerror(errno));
    } else {
      close(fd);
      valid = write_at(path, off, k, 0);
    }
  }
  expect_rc("SCR_Complete_output", SCR_Complete_output(valid), SCR_SUCCESS);
}

static void should_exit(int want)
{
  int flag = -1;
  expect_rc("SCR_Should_exit", SCR_Should_exit(&flag), SCR_SUCCESS);
  if (flag != want) fail("SCR_Should_exit set %d, want %d", flag, want);
}

/* wait_exit tells the test it is running (rank 0 creates ready), then
 * loops as an application's time steps do, for at most limit seconds:
 * SCR_Need_checkpoint, a checkpoint when it says yes, SCR_Should_exit,
 * until that says yes. */
static void wait_exit(const char* ready, double limit)
{
  if (rank == 0) {
    FILE* f = fopen(ready, "w");
    if (!f) fail("create %s: %s", ready, strerror(errno));
    else fclose(f);
  }
  double t0 = MPI_Wtime();
  for (uint32_t step = 1;; step++) {
    int flag = 0;
    expect_rc("SCR_Need_checkpoint", SCR_Need_checkpoint(&flag), SCR_SUCCESS);
    if (flag) checkpoint_numbered(step);
    expect_rc("SCR_Should_exit", SCR_Should_exit(&flag), SCR_SUCCESS);
    if (flag) break;
    int stop = MPI_Wtime() - t0 > limit;
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop) { fail("SCR_Should_exit said no for %.0f s", limit); return; }
    usleep(50000);
  }
  if (rank == 0) printf("should_exit: yes\n");
}

/* misuse makes one mistake SCR aborts on. It must not return. */
static void misuse(const char* what)
{
  char name[64], file[SCR_MAX_FILENAME];
  int flag;
  if (!strcmp(what, "complete-output-idle")) {
    SCR_Complete_output(1);
  } else if (!strcmp(what, "start-restart-without-restart")) {
    SCR_Start_restart(NULL);
  } else if (!strcmp(what, "start-output-twice")) {
    SCR_Start_output("twice.1", SCR_FLAG_CHECKPOINT);
    SCR_Start_output("twice.2", SCR_FLAG_CHECKPOINT);
  } else if (!strcmp(what, "need-in-output")) {
    SCR_Start_output("need.1", SCR_FLAG_CHECKPOINT);
    SCR_Need_checkpoint(&flag);
  } else if (!strcmp(what, "complete-restart-idle")) {
    SCR_Complete_restart(1);
  } else if (!strcmp(what, "names-differ")) {
    snprintf(name, sizeof(name), "differ.%d", rank);
    SCR_Start_output(name, SCR_FLAG_CHECKPOINT);
  } else if (!strcmp(what, "flags-differ")) {
    SCR_Start_output("flags.1", rank == ranks - 1 ? SCR_FLAG_OUTPUT : SCR_FLAG_CHECKPOINT);
  } else if (!strcmp(what, "current-names-differ")) {
    snprintf(name, sizeof(name), "ckpt.%d", rank + 1);
    SCR_Current(name);
  } else if (!strcmp(what, "route-outside-prefix")) {
    SCR_Start_output("outside.1", SCR_FLAG_OUTPUT);
    SCR_Route_file("/nonexistent-outside-the-prefix/file", file);
  } else {
    fail("no misuse called %s", what);
    return;
  }
  /* A rank that gets here may only be waiting for the others to abort. */
  MPI_Barrier(MPI_COMM_WORLD);
  fail("misuse %s: the library returned instead of aborting", what);
}

/* disabled checks SCR_ENABLE=0: SCR_Init failed, and every later call
 * fails too. */
static void disabled(void)
{
  int flag = 0;
  char name[SCR_MAX_FILENAME], file[SCR_MAX_FILENAME];
  expect_rc("SCR_Have_restart (disabled)", SCR_Have_restart(&flag, name), 1);
  expect_rc("SCR_Start_restart (disabled)", SCR_Start_restart(name), 1);
  expect_rc("SCR_Complete_restart (disabled)", SCR_Complete_restart(1), 1);
  expect_rc("SCR_Need_checkpoint (disabled)", SCR_Need_checkpoint(&flag), 1);
  expect_rc("SCR_Start_checkpoint (disabled)", SCR_Start_checkpoint(), 1);
  expect_rc("SCR_Complete_checkpoint (disabled)", SCR_Complete_checkpoint(1), 1);
  expect_rc("SCR_Start_output (disabled)", SCR_Start_output("off.1", SCR_FLAG_OUTPUT), 1);
  expect_rc("SCR_Route_file (disabled)", SCR_Route_file("off.1/file", file), 1);
  expect_rc("SCR_Complete_output (disabled)", SCR_Complete_output(1), 1);
  expect_rc("SCR_Current (disabled)", SCR_Current("off.1"), 1);
  expect_rc("SCR_Drop (disabled)", SCR_Drop("off.1"), 1);
  expect_rc("SCR_Delete (disabled)", SCR_Delete("off.1"), 1);
  expect_rc("SCR_Should_exit (disabled)", SCR_Should_exit(&flag), 1);
  expect_rc("SCR_Finalize (disabled)", SCR_Finalize(), 1);
}

/* config checks a query: SCR_Config("KEY") returns want in memory the
 * caller frees ("-": NULL). */
static void config_query(const char* key, const char* want)
{
  const char* got = SCR_Config(key);
  if (!strcmp(want, "-")) {
    if (got) fail("SCR_Config(%s) returned %s, want NULL", key, got);
  } else if (!got || strcmp(got, want) != 0) {
    fail("SCR_Config(%s) returned %s, want %s", key, got ? got : "NULL", want);
  }
  free((void*)got);
}

static void usage(void)
{
  fprintf(stderr,
          "usage: scrapi [config:KEY=VALUE]... COMMAND ARGS...\n"
          "  write FIRST LAST FLAGS   datasets ckpt.FIRST..ckpt.LAST, a file per rank\n"
          "  restart NAME|none        the restart loop; it must restore NAME\n"
          "  restart-shared NAME FILE the restart loop over one shared file\n"
          "  tolerate                 later wrong bytes make a restart invalid, not an error\n"
          "  reject NAME              NAME offered, read, voted invalid by the last rank\n"
          "  current|drop|delete NAME SCR_Current, SCR_Drop, SCR_Delete\n"
          "  need N PATTERN           SCR_Need_checkpoint N times; answers must be PATTERN\n"
          "  need-after MIN LIMIT ROUNDS  a checkpoint, then Need_checkpoint until yes\n"
          "  need-null RANK           a NULL flag on RANK: every rank's call fails\n"
          "  output NAME FLAGS FILE K  an output dataset of one file per rank (%%r: rank)\n"
          "  shared NAME FLAGS FILE   one file every rank writes its record into\n"
          "  should-exit 0|1          SCR_Should_exit must set this\n"
          "  wait-exit READY LIMIT    create READY, then SCR_Should_exit until yes\n"
          "  misuse WHAT              a mistake the library must abort on\n"
          "  config KEY VALUE|-       SCR_Config(KEY) must return VALUE\n"
          "  version                  SCR_Get_version is SCR_VERSION\n"
          "  disabled                 (first) SCR_ENABLE=0: every call fails\n");
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  setvbuf(stdout, NULL, _IOLBF, 0);

  int a = 1;
  for (; a < argc && !strncmp(argv[a], "config:", 7); a++) {
    const char* got = SCR_Config(argv[a] + 7);
    if (got) fail("SCR_Config(%s) set and returned %s, want NULL", argv[a] + 7, got);
  }
  if (a < argc && !strcmp(argv[a], "disabled")) {
    expect_rc("SCR_Init (SCR_ENABLE=0)", SCR_Init(), 1);
    disabled();
    goto end;
  }
  expect_rc("SCR_Init", SCR_Init(), SCR_SUCCESS);

#define NEED(n)                                                              \
  if (a + (n) >= argc) { usage(); fail("%s needs %d arguments", argv[a], n); break; }
  for (; a < argc; a++) {
    const char* cmd = argv[a];
    if (!strcmp(cmd, "write")) {
      NEED(3);
      uint32_t first = atoi(argv[a + 1]), last = atoi(argv[a + 2]);
      int flags = atoi(argv[a + 3]);
      for (uint32_t k = first; k <= last; k++) write_dataset("ckpt", k, flags);
      a += 3;
    } else if (!strcmp(cmd, "restart")) {
      NEED(1);
      restart(argv[++a], NULL);
    } else if (!strcmp(cmd, "restart-shared")) {
      NEED(2);
      restart(argv[a + 1], argv[a + 2]);
      a += 2;
    } else if (!strcmp(cmd, "tolerate")) {
      tolerate_wrong = 1;
    } else if (!strcmp(cmd, "reject")) {
      NEED(1);
      reject(argv[++a]);
    } else if (!strcmp(cmd, "current")) {
      NEED(1);
      expect_rc("SCR_Current", SCR_Current(argv[++a]), SCR_SUCCESS);
    } else if (!strcmp(cmd, "drop")) {
      NEED(1);
      expect_rc("SCR_Drop", SCR_Drop(argv[++a]), SCR_SUCCESS);
    } else if (!strcmp(cmd, "delete")) {
      NEED(1);
      expect_rc("SCR_Delete", SCR_Delete(argv[++a]), SCR_SUCCESS);
    } else if (!strcmp(cmd, "need")) {
      NEED(2);
      need(atoi(argv[a + 1]), argv[a + 2]);
      a += 2;
    } else if (!strcmp(cmd, "need-null")) {
      NEED(1);
      need_null(atoi(argv[++a]));
    } else if (!strcmp(cmd, "need-after")) {
      NEED(3);
      need_after(atof(argv[a + 1]), atof(argv[a + 2]), atoi(argv[a + 3]));
      a += 3;
    } else if (!strcmp(cmd, "output")) {
      NEED(4);
      output(argv[a + 1], atoi(argv[a + 2]), argv[a + 3], atoi(argv[a + 4]));
      a += 4;
    } else if (!strcmp(cmd, "shared")) {
      NEED(3);
      shared(argv[a + 1], atoi(argv[a + 2]), argv[a + 3]);
      a += 3;
    } else if (!strcmp(cmd, "should-exit")) {
      NEED(1);
      should_exit(atoi(argv[++a]));
    } else if (!strcmp(cmd, "wait-exit")) {
      NEED(2);
      wait_exit(argv[a + 1], atof(argv[a + 2]));
      a += 2;
    } else if (!strcmp(cmd, "misuse")) {
      NEED(1);
      misuse(argv[++a]);
    } else if (!strcmp(cmd, "config")) {
      NEED(2);
      config_query(argv[a + 1], argv[a + 2]);
      a += 2;
    } else if (!strcmp(cmd, "version")) {
      const char* v = SCR_Get_version();
      if (!v || strcmp(v, SCR_VERSION) != 0) fail("SCR_Get_version returned %s, want %s", v ? v : "NULL", SCR_VERSION);
    } else {
      usage();
      fail("unknown command %s", cmd);
      break;
    }
  }
  expect_rc("SCR_Finalize", SCR_Finalize(), SCR_SUCCESS);

end:;
  int total = 0;
  MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (total) printf("scrapi: FAILED: %d errors\n", total);
    else printf("scrapi: OK\n");
  }
  MPI_Finalize();
  return total ? 1 : 0;
}
