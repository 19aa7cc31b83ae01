#!/usr/bin/env bash
# CI from nothing on this machine: `.ci/run` with CI=true on a fresh clone of
# HEAD, in a private mount namespace where /nix is an empty directory (no
# store path, no Nix database) and cuwheel's, Nix's, pip's and cargo's
# download caches are empty. Only what CI's machine also has is kept: Debian's
# `nix-bin`, rustup's Rust, Python, and the registries' clients. Prints each
# phase's time (`.ci/run`'s own lines) and each test module's
# (`tests/run.sh`), then the total; the figures go to docs/reports/ci.md.
#
# Usage: scripts/ci-cold.sh [--keep]
#   --keep   keep target/ci-cold/ (its store alone is tens of GB) afterwards
# Needs root, nothing else building (the figures are wall times), and about
# 50 GB free. Log: target/ci-cold/ci.log.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
keep=false
for arg in "$@"; do
  case "$arg" in
    --keep) keep=true ;;
    *) echo "ci-cold: unknown argument '$arg'; usage: scripts/ci-cold.sh [--keep]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "ci-cold: run me as root (.ci/run makes build users; the namespace needs mounts)" >&2; exit 1; }

work=$repo/target/ci-cold
rm -rf "$work"
mkdir -p "$work/nix" "$work/cache" "$work/cargo/bin"
git clone -q "$repo" "$work/clone"
# rustup's proxies (cargo, rustc, …) without the registry they sit beside.
cp -al "${CARGO_HOME:-$HOME/.cargo}/bin/." "$work/cargo/bin/"

echo "ci-cold: .ci/run on $(git rev-parse --short HEAD), /nix empty, caches empty (log: target/ci-cold/ci.log)"
start=$(date +%s)
rc=0
unshare --mount --fork -- bash -c '
  set -e
  work=$1
  mount --make-rprivate /
  mount --bind "$work/nix" /nix
  cd "$work/clone"
  export CI=true XDG_CACHE_HOME=$work/cache PIP_CACHE_DIR=$work/cache/pip \
    UV_CACHE_DIR=$work/cache/uv CARGO_HOME=$work/cargo PATH=$work/cargo/bin:$PATH
  exec bash .ci/run
' ci-cold "$work" >"$work/ci.log" 2>&1 || rc=$?
took=$(($(date +%s) - start))
grep -E '^ci: |^demo: |^newcomer: |^  [a-z0-9_:-]+ +[0-9.]+ s ' "$work/ci.log" || true
echo "ci-cold: .ci/run exited $rc after $took s ($((took / 60)) min $((took % 60)) s)"
if [ "$keep" = false ]; then
  rm -rf "$work/nix" "$work/clone" "$work/cache" "$work/cargo"
fi
exit "$rc"
