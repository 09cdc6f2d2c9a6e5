#!/usr/bin/env bash
# install.sh PREFIX: installs the Python module scr (ckpt's SCR-compatible
# API, through ctypes) as PREFIX/lib/python/scr/. It finds libscr.so two
# directories above itself, in PREFIX/lib, or where CKPT_LIBSCR says.
# A program then runs with PYTHONPATH=PREFIX/lib/python.
set -euo pipefail

die() { echo "capi/python/install.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: install.sh PREFIX"
prefix=$1
here=$(cd "$(dirname "$0")" && pwd)

dest="$prefix/lib/python/scr"
mkdir -p "$dest"
install -m 0644 "$here"/scr/*.py "$dest/"
