#!/usr/bin/env bash
# nix/driver-workspace/Cargo.lock, derived from the root Cargo.lock: cargo
# resolves the driver's workspace (nix/driver-workspace/Cargo.toml and the
# crates it names) starting from the root lock, which keeps every version the
# root pins and drops what the driver's crates do not use.
#
#   bash scripts/driver-lock.sh           write it
#   bash scripts/driver-lock.sh --check   exit 1, saying what differs, when it is stale
#
# Run after any change to Cargo.lock or to a driver crate's manifest.
# Needs cargo and the locked crates' manifests in cargo's cache (any build of
# this workspace leaves them there); it never reaches a registry.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
lock=$repo/nix/driver-workspace/Cargo.lock
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp "$repo/nix/driver-workspace/Cargo.toml" "$repo/Cargo.lock" "$scratch/"
members=$(sed -n 's/^members = \[\(.*\)\]$/\1/p' "$scratch/Cargo.toml" | tr ',' '\n' | tr -d '" ')
[ -n "$members" ] || { echo "driver-lock: no one-line members = [...] in nix/driver-workspace/Cargo.toml" >&2; exit 1; }
for member in $members; do
  mkdir -p "$scratch/$(dirname "$member")"
  cp -r "$repo/$member" "$scratch/$member"
done
(cd "$scratch" && cargo metadata --offline --format-version 1 >/dev/null) || {
  echo "driver-lock: cargo could not resolve the driver's workspace from Cargo.lock offline;" >&2
  echo "driver-lock: build the workspace once (cargo build --locked) to fill cargo's cache, then run again" >&2
  exit 1
}
if [ "${1:-}" = --check ]; then
  if ! diff -u "$lock" "$scratch/Cargo.lock"; then
    echo "driver-lock: nix/driver-workspace/Cargo.lock is stale: run bash scripts/driver-lock.sh" >&2
    exit 1
  fi
  exit 0
fi
cp "$scratch/Cargo.lock" "$lock"
echo "driver-lock: wrote nix/driver-workspace/Cargo.lock ($(grep -c '^\[\[package\]\]' "$lock") packages; the root's has $(grep -c '^\[\[package\]\]' "$repo/Cargo.lock"))"
