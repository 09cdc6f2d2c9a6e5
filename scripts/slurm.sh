#!/usr/bin/env bash
# Installs what the tests of ckpt run --launcher srun against a real Slurm
# cluster need (internal/slurmtest): Slurm's daemons and clients and MUNGE,
# from the distribution's packages (Debian and Ubuntu: slurm-wlm, munge),
# unless they are on PATH already. Needs root and apt-get; takes about a
# minute and a half on a fresh Debian 12 machine.
#
#   scripts/slurm.sh && CKPT_REQUIRE_SLURM=1 go test ./internal/slurmtest ./cmd/ckpt
#
# The packages' own services (slurmctld, slurmd, munge under systemd) are
# not used: the tests start a cluster of their own, with its own
# configuration, key and ports, in a temporary directory, and stop it.
set -euo pipefail

need=(munged slurmctld slurmd slurmstepd srun salloc sinfo squeue scontrol scancel)
missing=()
for p in "${need[@]}"; do
  # The daemons live in /usr/sbin, which a non-root PATH may lack.
  command -v "$p" >/dev/null || [ -x "/usr/sbin/$p" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "slurm.sh: ${missing[*]} missing: installing slurm-wlm and munge..." >&2
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "slurm.sh: need root and apt-get to install slurm-wlm and munge (or install Slurm and MUNGE yourself)" >&2
  exit 1
fi
start=$SECONDS
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
echo "slurm.sh: installed $(slurmd -V) in $((SECONDS - start))s" >&2
