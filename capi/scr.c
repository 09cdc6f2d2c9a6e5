/*
 * scr.c: the MPI half of ckpt's SCR API (libscr.so). It does only what
 * needs MPI: the rank and size of MPI_COMM_WORLD, broadcasting rank 0's
 * coordinator address at SCR_Init, checking that names, flags and
 * configuration strings are the same on every rank, the AND of the
 * ranks' valid flags, handing every rank rank 0's Need_checkpoint and
 * Should_exit answers, and MPI_Abort. Everything else is Go
 * (internal/scr, through cmd/libscr's exports in ckptscr.h).
 *
 * The library works on a duplicate of MPI_COMM_WORLD, so that its
 * collectives never match the application's. Under ckpt run, whose ranks
 * are MPI singletons (each its own MPI_COMM_WORLD of one), the rank and
 * size are ckpt run's and these collectives go through ckpt's coordinator
 * instead (via_ckpt).
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scr.h"
#include "ckptscr.h"

#define FAILURE 1
#define MISUSE 2

static MPI_Comm comm = MPI_COMM_NULL;
static int my_rank, my_size;
static int via_ckpt; /* collectives through ckpt, not MPI */

/* mpi_ready says whether MPI is initialized and not finalized. */
static int mpi_ready(void)
{
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

static void abort_job(void)
{
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1); /* MPI_Abort does not return; this is for an MPI that does */
}

/* fail_call prints "SCR_<call>: ..." and aborts the job. */
static void fail_call(const char* call, const char* fmt, ...)
{
  va_list ap;
  fprintf(stderr, "%s: ", call);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort_job();
}

/* ret turns a Go return code into the SCR call's: a misuse aborts. */
static int ret(int rc)
{
  if (rc == MISUSE) {
    abort_job();
  }
  return rc == 0 ? SCR_SUCCESS : FAILURE;
}

/* the communicator of the calls made before SCR_Init (SCR_Config) */
static MPI_Comm world(void) { return comm != MPI_COMM_NULL ? comm : MPI_COMM_WORLD; }

/* hash63 is FNV-1a of s, in 63 bits (so that its negation fits). */
static long long hash63(const char* s)
{
  unsigned long long h = 14695981039346656037ull;
  for (; *s; s++) {
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  }
  return (long long)(h >> 1);
}

/* same_everywhere says whether s has the same hash on every rank: one
 * MPI_Allreduce, the MIN of the hash and of its negation (-min(-h) is
 * the MAX). A mismatch is then explained by same_string's slow path. */
static int same_everywhere(MPI_Comm c, const char* s)
{
  long long h[2], m[2];
  h[0] = hash63(s);
  h[1] = -h[0];
  MPI_Allreduce(h, m, 2, MPI_LONG_LONG, MPI_MIN, c);
  return m[0] == -m[1];
}

/* same_string aborts unless s (NULL counts as "") is rank 0's on every rank. */
static void same_string(const char* call, const char* what, const char* s)
{
  if (via_ckpt) {
    if (ckptscr_same((char*)call, (char*)what, (char*)s) == MISUSE) {
      abort_job();
    }
    return;
  }
  MPI_Comm c = world();
  int rank;
  MPI_Comm_rank(c, &rank);
  if (s == NULL) {
    s = "";
  }
  if (same_everywhere(c, s)) {
    return;
  }
  /* Some rank differs: rank 0's string, to name the one that does. */
  int len = (int)strlen(s);
  MPI_Bcast(&len, 1, MPI_INT, 0, c);
  char* root = malloc((size_t)len + 1);
  if (root == NULL) {
    fail_call(call, "out of memory");
  }
  if (rank == 0) {
    memcpy(root, s, (size_t)len + 1);
  }
  MPI_Bcast(root, len + 1, MPI_CHAR, 0, c);
  int differ = strcmp(root, s) != 0, any = 0;
  MPI_Allreduce(&differ, &any, 1, MPI_INT, MPI_LOR, c);
  if (any) {
    if (differ) {
      fail_call(call, "the %s differs across ranks: rank %d has \"%s\", rank 0 \"%s\"", what, rank, s, root);
    }
    /* the rank that differs aborts the job; the others wait for it */
    MPI_Barrier(c);
    abort_job();
  }
  free(root);
}

static void same_int(const char* call, const char* what, int v)
{
  char buf[32];
  snprintf(buf, sizeof buf, "%d", v);
  same_string(call, what, buf);
}

/* routed_files counts the names SCR_Route_file routed since the last
 * SCR_Start_output or SCR_Start_checkpoint (zero or not is what counts:
 * no file on any rank lets the dataset skip its commit). */
static int routed_files;

/* all_valid is the AND of valid over every rank; any_files (if not NULL)
 * says whether some rank routed a file in the phase that ends. One
 * MPI_Allreduce: the MIN of valid and of minus the rank's file count. */
static int all_valid(int valid, int* any_files)
{
  int files = any_files != NULL ? routed_files : 0;
  if (via_ckpt) {
    int all = 0, any = 1;
    if (ckptscr_all_valid(valid, files, &all, &any) != 0) {
      all = 0;
    }
    if (any_files != NULL) {
      *any_files = any;
    }
    return all;
  }
  int mine[2] = {valid != 0, -files}, min[2];
  MPI_Allreduce(mine, min, 2, MPI_INT, MPI_MIN, comm);
  if (any_files != NULL) {
    *any_files = min[1] < 0;
  }
  return min[0];
}

/* root_answer hands every rank rank 0's flag and the worst of the
 * ranks' return codes rc, so that every rank returns alike: one
 * MPI_Allreduce, the MAX of the codes and of the flag rank 0 alone
 * contributes. */
static int root_answer(int rc, int* flag)
{
  if (via_ckpt) {
    int worst = rc;
    if (ckptscr_root_answer(rc, flag, &worst) != 0) {
      return FAILURE;
    }
    return worst;
  }
  int mine[2] = {rc, my_rank == 0 && rc == 0 ? *flag != 0 : 0}, max[2];
  MPI_Allreduce(mine, max, 2, MPI_INT, MPI_MAX, comm);
  *flag = max[1];
  return max[0];
}

/* initialized says whether SCR_Init succeeded; a call before it is left
 * to the Go side, which reports the misuse (or SCR_ENABLE=0's failure). */
static int initialized(void) { return comm != MPI_COMM_NULL; }

const char* SCR_Config(const char* config)
{
  if (mpi_ready()) {
    same_string("SCR_Config", "configuration string", config);
  }
  char* out = NULL;
  int rc = ckptscr_config((char*)config, &out);
  if (rc == MISUSE) {
    abort_job();
  }
  return out;
}

const char* SCR_Configf(const char* format, ...)
{
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(NULL, 0, format, ap);
  va_end(ap);
  if (n < 0) {
    return NULL;
  }
  char* s = malloc((size_t)n + 1);
  if (s == NULL) {
    return NULL;
  }
  va_start(ap, format);
  vsnprintf(s, (size_t)n + 1, format, ap);
  va_end(ap);
  const char* out = SCR_Config(s);
  free(s);
  return out;
}

int SCR_Init(void)
{
  if (!mpi_ready()) {
    fprintf(stderr, "SCR_Init: MPI is not initialized: call MPI_Init first\n");
    return FAILURE;
  }
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  int mpi_rank, mpi_size;
  MPI_Comm_rank(c, &mpi_rank);
  MPI_Comm_size(c, &mpi_size);
  if (ckptscr_identity(mpi_rank, mpi_size, &my_rank, &my_size, &via_ckpt) != 0) {
    MPI_Comm_free(&c);
    return FAILURE;
  }
  if (via_ckpt) {
    /* ckpt run's ranks: its coordinator is in the environment */
    char none[1] = {0};
    int rc = ckptscr_init_start(my_rank, my_size, 1, none, 1);
    if (rc == 0) {
      rc = ckptscr_init_join(my_rank, my_size, none);
    }
    if (rc != 0) {
      MPI_Comm_free(&c);
      return ret(rc);
    }
    comm = c;
    return SCR_SUCCESS;
  }

  /* Do all ranks run on rank 0's host? Then the coordinator listens on
   * loopback only. */
  char host[MPI_MAX_PROCESSOR_NAME + 1] = {0}, root[MPI_MAX_PROCESSOR_NAME + 1] = {0};
  int len = 0;
  MPI_Get_processor_name(host, &len);
  memcpy(root, host, sizeof root);
  MPI_Bcast(root, sizeof root, MPI_CHAR, 0, c);
  int same = strcmp(root, host) == 0, one_host = 0;
  MPI_Allreduce(&same, &one_host, 1, MPI_INT, MPI_LAND, c);

  char info[512];
  int rc = ckptscr_init_start(my_rank, my_size, one_host, info, (int)sizeof info);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, c);
  if (worst == MISUSE) {
    abort_job();
  }
  if (worst != 0) {
    /* SCR_ENABLE=0, or a rank could not start: every rank fails alike. */
    if (worst != 1 || ckptscr_enabled()) {
      ckptscr_init_abandon();
    }
    MPI_Comm_free(&c);
    return FAILURE;
  }
  MPI_Bcast(info, (int)sizeof info, MPI_CHAR, 0, c);
  rc = ckptscr_init_join(my_rank, my_size, info);
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, c);
  if (worst != 0) {
    ckptscr_init_abandon();
    MPI_Comm_free(&c);
    return ret(worst);
  }
  comm = c;
  return SCR_SUCCESS;
}

int SCR_Finalize(void)
{
  if (!initialized()) {
    return ret(ckptscr_finalize());
  }
  int rc = ckptscr_finalize();
  if (rc == MISUSE) {
    abort_job();
  }
  /* rank 0's coordinator stops once every rank has left it */
  MPI_Barrier(comm);
  if (my_rank == 0) {
    int crc = ckptscr_finalize_coordinator();
    if (rc == 0) {
      rc = crc;
    }
  }
  MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
  return ret(rc);
}

int SCR_Route_file(const char* name, char* file)
{
  int rc = ret(ckptscr_route_file((char*)name, file));
  if (rc == SCR_SUCCESS) {
    routed_files++;
  }
  return rc;
}

int SCR_Have_restart(int* flag, char* name)
{
  return ret(ckptscr_have_restart(flag, name));
}

int SCR_Start_restart(char* name)
{
  return ret(ckptscr_start_restart(name));
}

int SCR_Complete_restart(int valid)
{
  if (initialized() && ckptscr_enabled()) {
    valid = all_valid(valid, NULL);
  }
  return ret(ckptscr_complete_restart(valid));
}

/* root_flag calls f on every rank and hands every rank rank 0's flag;
 * a rank whose call failed (or whose flag is NULL) makes every rank's
 * fail, rather than leaving the others waiting for it. */
static int root_flag(int (*f)(int*), int* flag)
{
  int mine = 0;
  int rc = flag != NULL ? f(&mine) : FAILURE;
  if (rc == MISUSE) {
    abort_job();
  }
  if (initialized() && ckptscr_enabled()) {
    rc = root_answer(rc, &mine);
  }
  if (flag != NULL) {
    *flag = rc == 0 ? mine : 0;
  }
  return ret(rc);
}

int SCR_Need_checkpoint(int* flag) { return root_flag(ckptscr_need_checkpoint, flag); }

int SCR_Should_exit(int* flag) { return root_flag(ckptscr_should_exit, flag); }

int SCR_Start_checkpoint(void)
{
  routed_files = 0;
  return ret(ckptscr_start_output(NULL, SCR_FLAG_CHECKPOINT, 1));
}

int SCR_Complete_checkpoint(int valid)
{
  int any_files = 1;
  if (initialized() && ckptscr_enabled()) {
    valid = all_valid(valid, &any_files);
  }
  return ret(ckptscr_complete_output(valid, 1, any_files));
}

int SCR_Start_output(const char* name, int flags)
{
  routed_files = 0;
  if (initialized() && ckptscr_enabled()) {
    if (name != NULL && strlen(name) >= SCR_MAX_FILENAME) {
      fail_call("SCR_Start_output", "the name is %zu bytes, SCR_MAX_FILENAME is %d", strlen(name), SCR_MAX_FILENAME);
    }
    /* one collective for both in the common case */
    char both[SCR_MAX_FILENAME + 16];
    snprintf(both, sizeof both, "%d %s", flags, name != NULL ? name : "");
    if (via_ckpt || !same_everywhere(comm, both)) {
      same_string("SCR_Start_output", "dataset name", name);
      same_int("SCR_Start_output", "flags", flags);
    }
  }
  return ret(ckptscr_start_output((char*)name, flags, 0));
}

int SCR_Complete_output(int valid)
{
  int any_files = 1;
  if (initialized() && ckptscr_enabled()) {
    valid = all_valid(valid, &any_files);
  }
  return ret(ckptscr_complete_output(valid, 0, any_files));
}

/* named checks that name is rank 0's, then calls f. */
static int named(const char* call, const char* name, int (*f)(char*))
{
  if (initialized() && ckptscr_enabled()) {
    same_string(call, "name", name);
  }
  return ret(f((char*)name));
}

int SCR_Current(const char* name) { return named("SCR_Current", name, ckptscr_current); }

int SCR_Drop(const char* name)
{
  named("SCR_Drop", name, ckptscr_drop);
  return ckptscr_enabled() ? SCR_SUCCESS : FAILURE;
}

int SCR_Delete(const char* name) { return named("SCR_Delete", name, ckptscr_delete); }

char* SCR_Get_version(void)
{
  static char version[] = SCR_VERSION;
  return version;
}
