/*
 * fakescr.c: a recording fake of libscr.so for the bindings' unit tests
 * (bindings_test.go). It is not MPI and not SCR: each function appends one
 * line describing its call and arguments to the file $FAKESCR_LOG, and
 * returns what the script $FAKESCR_SCRIPT tells it to, so that a test
 * sees exactly what the Fortran and Python layers pass to the C API and
 * what they make of its answers.
 *
 * Script: one line per scripted call, "FUNC key=value ...". The n-th call
 * of FUNC follows the n-th line naming FUNC; a call with no line left
 * takes the defaults (rc=0, flag=0, no string). Keys:
 *   rc=N       the return code (SCR_* functions)
 *   flag=N     stored through the flag pointer (Have_restart,
 *              Need_checkpoint, Should_exit, MPI_Initialized)
 *   len=N      the string result is N 'x' characters
 *   out=TEXT   the string result is TEXT, the rest of the line
 * The string result goes to the name or file buffer, or is SCR_Config's
 * malloc'd return value (NULL when the line gives none). Route_file with
 * no string copies the name, as SCR does outside a phase.
 *
 * Log: "FUNC arg=value ...": strings as [text], pointers as NULL or ptr.
 * SCR_Config also logs inuse=N, the bytes malloc holds at the call, so a
 * test can see whether the caller frees the strings it is given.
 */
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct answer {
  int rc;
  int flag;
  int has_flag;
  int has_str;
  char str[8192];
};

/* Calls so far, per function name, to pick each call's script line. */
#define MAX_FUNCS 32
static struct {
  char name[64];
  int calls;
} counts[MAX_FUNCS];

static int next_call(const char* fn)
{
  for (int i = 0; i < MAX_FUNCS; i++) {
    if (counts[i].name[0] == '\0') {
      snprintf(counts[i].name, sizeof(counts[i].name), "%s", fn);
    }
    if (strcmp(counts[i].name, fn) == 0) {
      return counts[i].calls++;
    }
  }
  fprintf(stderr, "fakescr: too many functions\n");
  abort();
}

/* script returns the answer for this call of fn. */
static struct answer script(const char* fn)
{
  struct answer a = {0};
  int n = next_call(fn);
  const char* path = getenv("FAKESCR_SCRIPT");
  if (path == NULL) {
    return a;
  }
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "fakescr: cannot open script %s\n", path);
    abort();
  }
  char line[8192];
  size_t fnlen = strlen(fn);
  while (fgets(line, sizeof(line), f) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, fn, fnlen) != 0 || (line[fnlen] != ' ' && line[fnlen] != '\0')) {
      continue;
    }
    if (n-- > 0) {
      continue;
    }
    char* p = line + fnlen;
    while (*p == ' ') {
      p++;
    }
    while (*p != '\0') {
      if (strncmp(p, "out=", 4) == 0) {
        a.has_str = 1;
        snprintf(a.str, sizeof(a.str), "%s", p + 4);
        break;
      }
      if (strncmp(p, "rc=", 3) == 0) {
        a.rc = atoi(p + 3);
      } else if (strncmp(p, "flag=", 5) == 0) {
        a.flag = atoi(p + 5);
        a.has_flag = 1;
      } else if (strncmp(p, "len=", 4) == 0) {
        int len = atoi(p + 4);
        if (len < 0 || len >= (int)sizeof(a.str)) {
          fprintf(stderr, "fakescr: len=%d too long\n", len);
          abort();
        }
        a.has_str = 1;
        memset(a.str, 'x', len);
        a.str[len] = '\0';
      } else {
        fprintf(stderr, "fakescr: unknown key in %s\n", line);
        abort();
      }
      p += strcspn(p, " ");
      while (*p == ' ') {
        p++;
      }
    }
    break;
  }
  fclose(f);
  return a;
}

/* record appends one line to $FAKESCR_LOG. */
static void record(const char* format, ...)
{
  const char* path = getenv("FAKESCR_LOG");
  if (path == NULL) {
    return;
  }
  FILE* f = fopen(path, "a");
  if (f == NULL) {
    fprintf(stderr, "fakescr: cannot open log %s\n", path);
    abort();
  }
  va_list ap;
  va_start(ap, format);
  vfprintf(f, format, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

/* str and ptr describe arguments for the log. The returned text lives in
 * one of a few static buffers, enough for one log line's arguments. */
static const char* str(const char* s)
{
  static char bufs[4][4200];
  static int i;
  if (s == NULL) {
    return "NULL";
  }
  char* b = bufs[i++ % 4];
  snprintf(b, sizeof(bufs[0]), "[%s]", s);
  return b;
}

static const char* ptr(const void* p)
{
  return p == NULL ? "NULL" : "ptr";
}

int SCR_Init(void)
{
  record("SCR_Init");
  return script("SCR_Init").rc;
}

int SCR_Finalize(void)
{
  record("SCR_Finalize");
  return script("SCR_Finalize").rc;
}

const char* SCR_Config(const char* config)
{
  struct mallinfo2 mi = mallinfo2();
  record("SCR_Config config=%s inuse=%zu", str(config), mi.uordblks);
  struct answer a = script("SCR_Config");
  return a.has_str ? strdup(a.str) : NULL;
}

int SCR_Route_file(const char* name, char* file)
{
  record("SCR_Route_file name=%s file=%s", str(name), ptr(file));
  struct answer a = script("SCR_Route_file");
  if (file != NULL) {
    snprintf(file, 1024, "%s", a.has_str ? a.str : (name ? name : ""));
  }
  return a.rc;
}

int SCR_Have_restart(int* flag, char* name)
{
  record("SCR_Have_restart flag=%s name=%s", ptr(flag), ptr(name));
  struct answer a = script("SCR_Have_restart");
  if (flag != NULL) {
    *flag = a.flag;
  }
  if (name != NULL && a.has_str) {
    snprintf(name, 1024, "%s", a.str);
  }
  return a.rc;
}

int SCR_Start_restart(char* name)
{
  record("SCR_Start_restart name=%s", ptr(name));
  struct answer a = script("SCR_Start_restart");
  if (name != NULL && a.has_str) {
    snprintf(name, 1024, "%s", a.str);
  }
  return a.rc;
}

int SCR_Complete_restart(int valid)
{
  record("SCR_Complete_restart valid=%d", valid);
  return script("SCR_Complete_restart").rc;
}

int SCR_Need_checkpoint(int* flag)
{
  record("SCR_Need_checkpoint flag=%s", ptr(flag));
  struct answer a = script("SCR_Need_checkpoint");
  if (flag != NULL) {
    *flag = a.flag;
  }
  return a.rc;
}

int SCR_Start_checkpoint(void)
{
  record("SCR_Start_checkpoint");
  return script("SCR_Start_checkpoint").rc;
}

int SCR_Complete_checkpoint(int valid)
{
  record("SCR_Complete_checkpoint valid=%d", valid);
  return script("SCR_Complete_checkpoint").rc;
}

int SCR_Start_output(const char* name, int flags)
{
  record("SCR_Start_output name=%s flags=%d", str(name), flags);
  return script("SCR_Start_output").rc;
}

int SCR_Complete_output(int valid)
{
  record("SCR_Complete_output valid=%d", valid);
  return script("SCR_Complete_output").rc;
}

int SCR_Current(const char* name)
{
  record("SCR_Current name=%s", str(name));
  return script("SCR_Current").rc;
}

int SCR_Drop(const char* name)
{
  record("SCR_Drop name=%s", str(name));
  return script("SCR_Drop").rc;
}

int SCR_Delete(const char* name)
{
  record("SCR_Delete name=%s", str(name));
  return script("SCR_Delete").rc;
}

char* SCR_Get_version(void)
{
  record("SCR_Get_version");
  return "v3.1.0";
}

int SCR_Should_exit(int* flag)
{
  record("SCR_Should_exit flag=%s", ptr(flag));
  struct answer a = script("SCR_Should_exit");
  if (flag != NULL) {
    *flag = a.flag;
  }
  return a.rc;
}

/* MPI_Initialized lets the Python module's check that MPI is up be
 * tested: the real libscr reaches libmpi's through its dependencies. */
int MPI_Initialized(int* flag)
{
  record("MPI_Initialized");
  struct answer a = script("MPI_Initialized");
  *flag = a.has_flag ? a.flag : 1;
  return 0;
}
