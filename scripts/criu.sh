#!/usr/bin/env bash
# Prints the path of a working CRIU (checkpoint/restore in userspace) for
# ckpt's transparent mode (ckpt run --transparent, docs/TRANSPARENT.md) and
# its tests:
#
#   export CKPT_CRIU="$(scripts/criu.sh)"
#
# The system's criu serves when it is 4.1 or newer (4.2 when
# CKPT_CRIU_SUITE=sid): older ones cannot dump
# on kernels from 6.13 on ("vdso: Failed to fill self vdso symtable": the
# [vvar_vclock] mapping, handled from CRIU 4.1 on), and Debian bookworm's is
# 3.17. Otherwise CRIU is taken from Debian's archive: criu and every library
# it needs, from $CKPT_CRIU_SUITE (default trixie, whose criu is 4.1; sid has
# 4.2), fetched with `apt-get download` through a private sources list (the
# machine's own apt configuration is neither read nor changed), unpacked with
# `dpkg-deb -x` into the cache directory $CKPT_CRIU_DIR (default:
# ${XDG_CACHE_HOME:-~/.cache}/ckpt/criu), one subdirectory per suite. The
# printed path is then a wrapper that runs that criu through the glibc it was
# built for (its own loader, its own libraries first): it needs glibc 2.38 or
# newer, and the system's may be older.
#
# CRIU 4.1 waits forever for hardware breakpoints that never fire on some
# virtual machines (ours among them); the wrapper sets CRIU_FAULT=130, which
# makes it do without them, for 4.1.x. CRIU 4.2 finds out by itself.
#
# Later runs print the cached wrapper at once. Progress goes to stderr;
# stdout has only the path. Exit status 1, with the reason, when no working
# CRIU can be had: a test that needs one must not pass silently.
set -euo pipefail

suite="${CKPT_CRIU_SUITE:-trixie}"
dir="${CKPT_CRIU_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ckpt/criu}/$suite"
wrapper="$dir/criu"
arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"

say() { echo "criu.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# version_of CRIU prints CRIU's version (4.1.1), or nothing.
version_of() {
  "$1" --version 2>/dev/null | sed -n 's/^Version: *//p' | head -n 1
}

# The oldest system criu that serves: 4.1, or 4.2 when sid's is asked for
# (4.1 cannot dump a TCP socket on kernels from 6.16, which ckpt run
# --transparent --netns needs; docs/TRANSPARENT.md, CRIU versions).
need_minor=1
[ "$suite" = sid ] && need_minor=2

# recent VERSION succeeds for 4.$need_minor and newer.
recent() {
  local major minor
  IFS=. read -r major minor _ <<<"$1"
  [ -n "$major" ] && { [ "$major" -gt 4 ] || { [ "$major" -eq 4 ] && [ "${minor:-0}" -ge "$need_minor" ]; }; }
}

if [ -x "$wrapper" ] && v="$(version_of "$wrapper")" && [ -n "$v" ]; then
  echo "$wrapper"
  exit 0
fi

if sys="$(command -v criu 2>/dev/null)"; then
  v="$(version_of "$sys" || true)"
  if [ -n "$v" ] && recent "$v"; then
    echo "$sys"
    exit 0
  fi
  say "the system's criu ($sys) is ${v:-unusable}; CRIU 4.$need_minor or newer is needed here: taking Debian $suite's"
fi

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null && command -v apt-cache >/dev/null ||
  die "no criu 4.1 or newer, and no apt-get/dpkg-deb to fetch Debian's: install CRIU 4.1 or newer (https://criu.org)"

mkdir -p "$dir"
# Work in a directory of our own and move the result into place at the end,
# so that an interrupted or concurrent run never leaves a half-unpacked tree
# behind the wrapper.
tmp="$(mktemp -d "$dir/.fetch-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS

# A private apt: its own sources list, package lists, cache and an empty
# status (nothing "installed", so that every dependency is listed).
mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial" "$tmp/apt/sources.list.d" "$tmp/debs" "$tmp/root"
: >"$tmp/apt/status"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cat >"$tmp/apt/sources.list" <<EOF
deb [signed-by=$keyring] http://deb.debian.org/debian $suite main
EOF
apt_opts=(
  -o "Dir::Etc::SourceList=$tmp/apt/sources.list"
  -o "Dir::Etc::SourceParts=$tmp/apt/sources.list.d"
  -o "Dir::State::Lists=$tmp/apt/lists"
  -o "Dir::State::Status=$tmp/apt/status"
  -o "Dir::Cache=$tmp/apt/cache"
  -o "APT::Architecture=$arch"
  -o "APT::Sandbox::User=root"
  -o "Debug::NoLocking=1"
)

say "fetching Debian $suite's package lists..."
if ! apt-get "${apt_opts[@]}" -qq update >"$tmp/update.log" 2>&1; then
  tail -n 20 "$tmp/update.log" >&2
  die "apt-get update of Debian $suite failed"
fi

# criu and its libraries, recursively; packages that hold no library criu
# loads (the shell, dpkg, debconf, perl...) are fetched too, but are small.
mapfile -t pkgs < <(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests \
  --no-conflicts --no-breaks --no-replaces --no-enhances criu 2>/dev/null |
  sed -n 's/^\([a-z0-9][a-z0-9.+-]*\)$/\1/p' | sort -u)
[ "${#pkgs[@]}" -gt 0 ] || die "Debian $suite has no package criu"
# Only the ones that ship shared libraries or criu itself matter.
want=()
for p in "${pkgs[@]}"; do
  case "$p" in
    criu | libc6 | lib*) want+=("$p") ;;
  esac
done
say "downloading ${#want[@]} packages (criu and its libraries)..."
if ! (cd "$tmp/debs" && apt-get "${apt_opts[@]}" -qq download "${want[@]}") >"$tmp/download.log" 2>&1; then
  tail -n 20 "$tmp/download.log" >&2
  die "apt-get download from Debian $suite failed"
fi
for deb in "$tmp"/debs/*.deb; do
  dpkg-deb -x "$deb" "$tmp/root"
done

root="$dir/root"
bin="$root/usr/sbin/criu"
[ -x "$tmp/root/usr/sbin/criu" ] || die "Debian $suite's criu package has no usr/sbin/criu"
loader="$(cd "$tmp/root" && { ls -d lib64/ld-linux-*.so.* usr/lib64/ld-linux-*.so.* lib/*/ld-linux-*.so.* usr/lib/*/ld-linux-*.so.* 2>/dev/null || true; } | head -n 1)"
[ -n "$loader" ] || die "Debian $suite's libc6 has no loader"
libpath="$root/lib/$(uname -m)-linux-gnu:$root/usr/lib/$(uname -m)-linux-gnu:$root/lib:$root/usr/lib"

# The wrapper runs criu with its own loader and libraries: the system's
# glibc may be older than the one criu was built against.
v="$(env -i "$tmp/root/$loader" --library-path "${libpath//$root/$tmp/root}" "$tmp/root/usr/sbin/criu" --version 2>/dev/null |
  sed -n 's/^Version: *//p' | head -n 1)" || true
[ -n "$v" ] || die "Debian $suite's criu does not run here, even with its own glibc"
fault=""
case "$v" in
  4.1 | 4.1.*) fault="export CRIU_FAULT=\"\${CRIU_FAULT:-130}\" # 4.1 waits for hardware breakpoints that never fire on some VMs" ;;
esac
cat >"$tmp/criu" <<EOF
#!/bin/sh
# CRIU $v from Debian $suite, run with the glibc it was built for.
# Written by ckpt's scripts/criu.sh; delete $dir to fetch it again.
$fault
exec "$root/$loader" --library-path "$libpath" "$bin" "\$@"
EOF
chmod +x "$tmp/criu"

rm -rf "$root" "$wrapper"
mv "$tmp/root" "$root"
mv "$tmp/criu" "$wrapper"
v="$(version_of "$wrapper")" || true
[ -n "$v" ] || die "the wrapper $wrapper does not run"
say "CRIU $v from Debian $suite in $dir ($((SECONDS - start))s)"
echo "$wrapper"
