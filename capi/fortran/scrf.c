/*
 * scrf.c: the Fortran 77 interface of ckpt's SCR-compatible API (libscrf).
 *
 * A Fortran program that includes scrf.h calls SCR_INIT(IERROR) and the
 * other fifteen subroutines; gfortran (and Intel, Cray, NVIDIA, which
 * follow the same convention) link such a call to the lower-case name
 * with one trailing underscore, pass every argument by reference, and
 * append one hidden length per CHARACTER argument after the declared
 * arguments. Since gfortran 8 those lengths are size_t; declaring them
 * size_t here is right for that ABI and also for older compilers on
 * little-endian 64-bit machines, where an int length lands in the low
 * half of the register.
 *
 * Fortran strings are not terminated: an input string is copied without
 * its trailing blanks and terminated before it reaches the C function; an
 * output string is filled from the C result and padded with blanks. An
 * output too long for the caller's variable is cut at its length and the
 * call reports failure in IERROR, as SCR's own libscrf does.
 *
 * IERROR is what the C function returned (SCR_SUCCESS or 1), or 1 when a
 * string could not be converted.
 */
#include <stdlib.h>
#include <string.h>

#include "scr.h"

/* The value SCR's calls return on failure; scr.h leaves it unnamed. */
#define SCRF_FAILURE 1

/*
 * fstr_dup returns a malloc'd, terminated copy of the Fortran string f of
 * length len without its trailing blanks, or NULL when memory runs out.
 * Leading blanks are kept: they are part of a name as the program wrote it.
 */
static char* fstr_dup(const char* f, size_t len)
{
  while (len > 0 && f[len - 1] == ' ') {
    len--;
  }
  char* c = malloc(len + 1);
  if (c == NULL) {
    return NULL;
  }
  memcpy(c, f, len);
  c[len] = '\0';
  return c;
}

/*
 * fstr_set fills the Fortran string f of length len with the C string c
 * (blanks when c is NULL) padded with blanks. It returns SCRF_FAILURE when
 * c does not fit, after storing as much of it as fits.
 */
static int fstr_set(char* f, size_t len, const char* c)
{
  size_t n = c == NULL ? 0 : strlen(c);
  int rc = SCR_SUCCESS;
  if (n > len) {
    n = len;
    rc = SCRF_FAILURE;
  }
  if (n > 0) {
    memcpy(f, c, n);
  }
  memset(f + n, ' ', len - n);
  return rc;
}

/*
 * fstr_result is IERROR for a call that returned rc and the string c: f
 * receives c when the call succeeded, blanks when it failed (whatever C
 * left in its buffer then is not a result).
 */
static int fstr_result(int rc, const char* c, char* f, size_t len)
{
  if (rc != SCR_SUCCESS) {
    fstr_set(f, len, NULL);
    return rc;
  }
  return fstr_set(f, len, c);
}

/*
 * config_is_query reports whether an SCR_Config string asks for a value:
 * it does when one of its blank-separated items has no '=' ("KEY", or
 * "CKPT=0 TYPE"); "KEY=VALUE" and "KEY=" set and unset.
 */
static int config_is_query(const char* s)
{
  while (*s != '\0') {
    while (*s == ' ') {
      s++;
    }
    if (*s == '\0') {
      break;
    }
    int has_eq = 0;
    for (; *s != '\0' && *s != ' '; s++) {
      if (*s == '=') {
        has_eq = 1;
      }
    }
    if (!has_eq) {
      return 1;
    }
  }
  return 0;
}

/* The subroutines that take no string. */

void scr_init_(int* ierror)
{
  *ierror = SCR_Init();
}

void scr_finalize_(int* ierror)
{
  *ierror = SCR_Finalize();
}

void scr_should_exit_(int* flag, int* ierror)
{
  *ierror = SCR_Should_exit(flag);
}

void scr_need_checkpoint_(int* flag, int* ierror)
{
  *ierror = SCR_Need_checkpoint(flag);
}

void scr_start_checkpoint_(int* ierror)
{
  *ierror = SCR_Start_checkpoint();
}

void scr_complete_checkpoint_(const int* valid, int* ierror)
{
  *ierror = SCR_Complete_checkpoint(*valid);
}

void scr_complete_restart_(const int* valid, int* ierror)
{
  *ierror = SCR_Complete_restart(*valid);
}

void scr_complete_output_(const int* valid, int* ierror)
{
  *ierror = SCR_Complete_output(*valid);
}

/*
 * SCR_CONFIG(CONFIG, VAL, IERROR): VAL receives the queried value, or
 * blanks when there is none. A set or unset succeeds with VAL blank; a
 * query for a parameter that has no value fails. (SCR's libscrf reports
 * failure for every set as well, and never frees the value it queried;
 * SCR_Config's result is malloc'd for a query, so it is freed here.)
 */
void scr_config_(const char* config, char* val, int* ierror,
                 size_t config_len, size_t val_len)
{
  char* c = fstr_dup(config, config_len);
  if (c == NULL) {
    fstr_set(val, val_len, NULL);
    *ierror = SCRF_FAILURE;
    return;
  }
  const char* v = SCR_Config(c);
  if (v == NULL) {
    fstr_set(val, val_len, NULL);
    *ierror = config_is_query(c) ? SCRF_FAILURE : SCR_SUCCESS;
  } else {
    *ierror = fstr_set(val, val_len, v);
    free((void*)v);
  }
  free(c);
}

/*
 * SCR_HAVE_RESTART(FLAG, NAME, IERROR): NAME receives the checkpoint's
 * name when FLAG is 1, and blanks otherwise.
 */
void scr_have_restart_(int* flag, char* name, int* ierror, size_t name_len)
{
  char buf[SCR_MAX_FILENAME] = "";
  *flag = 0;
  int rc = SCR_Have_restart(flag, buf);
  *ierror = fstr_result(rc, *flag ? buf : NULL, name, name_len);
}

void scr_start_restart_(char* name, int* ierror, size_t name_len)
{
  char buf[SCR_MAX_FILENAME] = "";
  *ierror = fstr_result(SCR_Start_restart(buf), buf, name, name_len);
}

/*
 * SCR_START_OUTPUT(NAME, FLAGS, IERROR): a blank NAME reaches the library
 * as "", which names the dataset scr.dataset.<id>.
 */
void scr_start_output_(const char* name, const int* flags, int* ierror,
                       size_t name_len)
{
  char* c = fstr_dup(name, name_len);
  if (c == NULL) {
    *ierror = SCRF_FAILURE;
    return;
  }
  *ierror = SCR_Start_output(c, *flags);
  free(c);
}

/* SCR_ROUTE_FILE(NAME, FILE, IERROR): FILE is blank when routing fails. */
void scr_route_file_(const char* name, char* file, int* ierror,
                     size_t name_len, size_t file_len)
{
  char* c = fstr_dup(name, name_len);
  if (c == NULL) {
    fstr_set(file, file_len, NULL);
    *ierror = SCRF_FAILURE;
    return;
  }
  char buf[SCR_MAX_FILENAME] = "";
  int rc = SCR_Route_file(c, buf);
  free(c);
  *ierror = fstr_result(rc, buf, file, file_len);
}

/* call_named converts NAME and hands it to one of the calls taking a name. */
static void call_named(int (*fn)(const char*), const char* name,
                       int* ierror, size_t name_len)
{
  char* c = fstr_dup(name, name_len);
  if (c == NULL) {
    *ierror = SCRF_FAILURE;
    return;
  }
  *ierror = fn(c);
  free(c);
}

void scr_current_(const char* name, int* ierror, size_t name_len)
{
  call_named(SCR_Current, name, ierror, name_len);
}

void scr_drop_(const char* name, int* ierror, size_t name_len)
{
  call_named(SCR_Drop, name, ierror, name_len);
}

void scr_delete_(const char* name, int* ierror, size_t name_len)
{
  call_named(SCR_Delete, name, ierror, name_len);
}
