#!/usr/bin/env bash
# install-capi.sh PREFIX: builds and installs ckpt's SCR-compatible API
# (docs/C-API.md): PREFIX/lib/libckptscr.so (the Go core, c-shared),
# PREFIX/lib/libscr.so (the MPI layer, built with mpicc), PREFIX/include/scr.h,
# then the Fortran and Python bindings when their build scripts exist.
# An application then builds with
#   mpicc -I PREFIX/include app.c -L PREFIX/lib -Wl,-rpath,PREFIX/lib -lscr
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 PREFIX" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
prefix="$(cd "$1" && pwd)"

export PATH="$PATH:/usr/local/go/bin"
need() {
  command -v "$1" >/dev/null 2>&1 || { echo "install-capi.sh: $1 not found: $2" >&2; exit 1; }
}
need go "install Go (https://go.dev/dl)"
need mpicc "install MPI with its compiler wrappers (Debian: openmpi-bin libopenmpi-dev)"
need gcc "install a C compiler for cgo (Debian: gcc)"
# mpicc exists but its compiler may not: one clear line rather than a wall.
if ! mpicc --version >/dev/null 2>&1 && ! mpicc -v >/dev/null 2>&1; then
  echo "install-capi.sh: mpicc does not run: install its C compiler" >&2
  exit 1
fi

mkdir -p "$prefix/lib" "$prefix/include"
cd "$root"
CGO_ENABLED=1 GOFLAGS="${GOFLAGS:--buildvcs=false}" \
  go build -buildmode=c-shared -o "$prefix/lib/libckptscr.so" ./cmd/libscr
# go build writes the exports' header beside the library: ours is capi/ckptscr.h.
rm -f "$prefix/lib/libckptscr.h"
mpicc -O2 -Wall -shared -fPIC -I capi/include -I capi capi/scr.c \
  -L "$prefix/lib" -lckptscr -Wl,-rpath,'$ORIGIN' -o "$prefix/lib/libscr.so"
cp capi/include/scr.h "$prefix/include/scr.h"

if [ -x capi/fortran/build.sh ] || [ -f capi/fortran/build.sh ]; then
  bash capi/fortran/build.sh "$prefix"
fi
if [ -x capi/python/install.sh ] || [ -f capi/python/install.sh ]; then
  bash capi/python/install.sh "$prefix"
fi
echo "installed ckpt's SCR API in $prefix"
