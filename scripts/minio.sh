#!/usr/bin/env bash
# Prints the path of a MinIO server binary for the tests of the S3 storage
# backend (internal/storage/s3), building it first if there is none yet:
#
#   export CKPT_MINIO="$(scripts/minio.sh)"
#
# The binary is built from the Go module proxy with
# `go install github.com/minio/minio@$CKPT_MINIO_VERSION`, which takes 3-6
# minutes, into the cache directory $CKPT_MINIO_DIR (default:
# ${XDG_CACHE_HOME:-~/.cache}/ckpt/minio), one subdirectory per version.
# Later runs print the cached binary at once. Progress goes to stderr;
# stdout has only the path.
#
# The version is pinned (MinIO publishes no semantic versions, so it is the
# module proxy's pseudo-version of one commit): "latest" would rebuild, and
# test, whatever MinIO released last, and a cache could not tell it is
# stale. To move the pin, find the new version with
# `go list -m github.com/minio/minio@latest`, check that the S3 tests pass
# against it, and change the default below.
#
# MinIO is licensed under the AGPL; the tests only run it as a separate
# server process and never link it into ckpt.
set -euo pipefail

version="${CKPT_MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
dir="${CKPT_MINIO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ckpt/minio}/$version"
bin="$dir/minio"

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

# Go lives in /usr/local/go on this project's machines; a non-login shell may
# not have it on PATH.
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "minio.sh: go not found: install Go (https://go.dev/dl)" >&2; exit 1; }

mkdir -p "$dir"
# Build into a directory of our own and move the binary into place at the
# end, so that an interrupted or concurrent build never leaves a partial
# binary at $bin.
tmp="$(mktemp -d "$dir/.build-XXXXXX")"
log="$tmp/build.log"
ticker=""
trap 'if [ -n "$ticker" ]; then kill "$ticker" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT

echo "minio.sh: building github.com/minio/minio@$version into $dir (takes 3-6 minutes)..." >&2
start=$SECONDS
( while sleep 15; do echo "minio.sh: still building ($((SECONDS - start))s)..." >&2; done ) &
ticker=$!
if ! GOBIN="$tmp" go install "github.com/minio/minio@$version" >"$log" 2>&1; then
  echo "minio.sh: go install failed:" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
kill "$ticker" 2>/dev/null || true
ticker=""
mv -f "$tmp/minio" "$bin"
echo "minio.sh: built $("$bin" --version 2>/dev/null | head -n 1) in $((SECONDS - start))s" >&2
echo "$bin"
