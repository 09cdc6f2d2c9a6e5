#!/usr/bin/env bash
# build.sh PREFIX: builds ckpt's Fortran interface to the SCR API against
# the libscr.so already in PREFIX/lib: PREFIX/lib/libscrf.so (the
# sixteen SCR_* subroutines of SCR's libscrf, and the procedures of
# module scr), PREFIX/include/scrf.h and PREFIX/include/scr.mod.
#
# A Fortran program then builds with
#   mpif90 -I PREFIX/include app.f90 -L PREFIX/lib -Wl,-rpath,PREFIX/lib -lscrf -lscr
#
# The compilers are $CC and $FC when set, else the MPI wrappers mpicc and
# mpif90, else cc and gfortran. scr.mod is read only by the compiler (and
# compiler version) that wrote it: build with the one the application uses.
set -euo pipefail

die() { echo "capi/fortran/build.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: build.sh PREFIX"
prefix=$1
here=$(cd "$(dirname "$0")" && pwd)

pick() { # pick VAR candidates...: $VAR when set, else the first candidate found
  local var=$1; shift
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  for c in "$@"; do
    if command -v "$c" >/dev/null; then echo "$c"; return; fi
  done
}
cc=$(pick CC mpicc cc gcc)
fc=$(pick FC mpif90 gfortran)
command -v "${cc:-none}" >/dev/null || die "no C compiler ${cc:+($cc not found) }(set CC, or install mpicc or gcc)"
command -v "${fc:-none}" >/dev/null || die "no Fortran compiler ${fc:+($fc not found) }(set FC, or install mpif90 or gfortran)"
[ -f "$prefix/lib/libscr.so" ] || die "$prefix/lib/libscr.so is missing: install the C library first (scripts/install-capi.sh)"

prefix=$(cd "$prefix" && pwd)
mkdir -p "$prefix/include"
obj=$(mktemp -d)
trap 'rm -rf "$obj"' EXIT

"$cc" -fPIC -O2 -Wall -I "$here/../include" -c "$here/scrf.c" -o "$obj/scrf.o" ||
  die "$cc failed to compile scrf.c"
# The module file is written to the directory the compiler runs in.
(cd "$obj" && "$fc" -fPIC -O2 -c "$here/scr.f90" -o scr.o) ||
  die "$fc failed to compile scr.f90"
# $ORIGIN: libscrf finds the libscr beside it wherever PREFIX is moved.
"$fc" -shared -o "$obj/libscrf.so" "$obj/scrf.o" "$obj/scr.o" \
  -L "$prefix/lib" -lscr -Wl,-rpath,'$ORIGIN' ||
  die "$fc failed to link libscrf.so"

install -m 0755 "$obj/libscrf.so" "$prefix/lib/libscrf.so"
install -m 0644 "$here/scrf.h" "$prefix/include/scrf.h"
install -m 0644 "$obj/scr.mod" "$prefix/include/scr.mod"
