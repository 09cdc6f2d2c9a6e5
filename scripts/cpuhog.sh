#!/usr/bin/env bash
# Runs a command beside one busy loop per core, as on a machine shared with
# other builds and jobs, which is where the tests must pass too:
#
#   scripts/cpuhog.sh go test -race ./...
#
# The loops run at the command's priority and end with the command, or
# after $CKPT_HOG_SECONDS (default 3600) whatever happens to this script.
# $CKPT_HOG_PROCS sets their number (default: the number of cores). The
# exit status is the command's.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: scripts/cpuhog.sh COMMAND [ARG...]" >&2; exit 2; }
procs="${CKPT_HOG_PROCS:-$(nproc)}"
limit="${CKPT_HOG_SECONDS:-3600}"

pids=()
stop() {
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
  done
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq "$procs"); do
  timeout "$limit" sh -c 'while :; do :; done' &
  pids+=($!)
done
echo "cpuhog: $procs busy loops beside: $*" >&2
"$@"
