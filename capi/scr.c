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

/* all_valid is the AND of valid over every rank. */
static int all_valid(int valid)
{
  if (via_ckpt) {
    int all = 0;
    if (ckptscr_all_valid(valid, &all) != 0) {
      return 0;
    }
    return all;
  }
  int mine = valid != 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
  return all;
}

/* from_root hands every rank rank 0's flag. */
static void from_root(int* flag)
{
  if (via_ckpt) {
    ckptscr_from_root(flag);
    return;
  }
  MPI_Bcast(flag, 1, MPI_INT, 0, comm);
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
  return ret(ckptscr_route_file((char*)name, file));
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
    valid = all_valid(valid);
  }
  return ret(ckptscr_complete_restart(valid));
}

/* root_flag hands every rank rank 0's flag once f set it. */
static int root_flag(int (*f)(int*), int* flag)
{
  if (flag == NULL) {
    return FAILURE;
  }
  int rc = f(flag);
  if (rc == 0) {
    from_root(flag);
  }
  return ret(rc);
}

int SCR_Need_checkpoint(int* flag) { return root_flag(ckptscr_need_checkpoint, flag); }

int SCR_Should_exit(int* flag) { return root_flag(ckptscr_should_exit, flag); }

int SCR_Start_checkpoint(void)
{
  return ret(ckptscr_start_output(NULL, SCR_FLAG_CHECKPOINT, 1));
}

int SCR_Complete_checkpoint(int valid)
{
  if (initialized() && ckptscr_enabled()) {
    valid = all_valid(valid);
  }
  return ret(ckptscr_complete_output(valid, 1));
}

int SCR_Start_output(const char* name, int flags)
{
  if (initialized() && ckptscr_enabled()) {
    if (name != NULL && strlen(name) >= SCR_MAX_FILENAME) {
      fail_call("SCR_Start_output", "the name is %zu bytes, SCR_MAX_FILENAME is %d", strlen(name), SCR_MAX_FILENAME);
    }
    same_string("SCR_Start_output", "dataset name", name);
    same_int("SCR_Start_output", "flags", flags);
  }
  return ret(ckptscr_start_output((char*)name, flags, 0));
}

int SCR_Complete_output(int valid)
{
  if (initialized() && ckptscr_enabled()) {
    valid = all_valid(valid);
  }
  return ret(ckptscr_complete_output(valid, 0));
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
