#!/usr/bin/env bash
# On the build machine: builds the demo's wheel cells named as arguments
# (default cu130-abi3-torch211, the wheel the GPU machine's torch 2.11+cu130 loads)
# in the Nix sandbox and copies their wheels, and nothing else, into
# gpu-payload/ (git-ignored), for the device tool to carry: see
# tests/gpu/README.md. Fails when the wheels together pass 60 MiB, since a
# call carries at most 64 MiB, the working tree included.
#
# usage: bash scripts/gpu-prepare.sh [CELL...]   (e.g. cu130-abi3-torch211 cu130-py312-torch211)
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "gpu-prepare: $*" >&2
  exit 1
}

payload=gpu-payload
links=target/gpu-prepare # the out-links keep the built wheels from Nix's garbage collector
limit_bytes=$((60 * 1024 * 1024))
cells=("$@")
[ ${#cells[@]} -gt 0 ] || cells=(cu130-abi3-torch211)

command -v nix >/dev/null || die "nix is missing; bash scripts/demo.sh installs it and builds the toolchains"
# Sandbox on with no fallback and no binary cache, whatever nix.conf says;
# independent derivations in parallel, one per core.
nix=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters ''
  --max-jobs auto)

rm -rf "$payload"
mkdir -p "$payload" "$links"
shopt -s nullglob
for cell in "${cells[@]}"; do
  [[ "$cell" =~ ^[A-Za-z0-9._-]+$ ]] || die "'$cell' is not a cell name (like cu130-abi3-torch211)"
  link=$links/$cell
  "${nix[@]}" build --print-build-logs ".#wheels.$cell" -o "$link" ||
    die "building .#wheels.$cell failed (see above); list the cells with: nix eval --json .#wheels --apply builtins.attrNames"
  found=("$link"/*.whl)
  [ ${#found[@]} -eq 1 ] || die "$link (.#wheels.$cell) holds ${#found[@]} *.whl files, expected exactly one"
  target=$payload/$(basename "${found[0]}")
  [ ! -e "$target" ] || die "two cells built the same wheel name $(basename "$target"); name each cell once"
  install -m 0644 "${found[0]}" "$target"
done

total=0
echo "gpu-prepare: $payload/:"
for wheel in "$payload"/*.whl; do
  size=$(stat -c %s "$wheel")
  total=$((total + size))
  echo "  $(basename "$wheel")  $size bytes ($(awk -v b="$size" 'BEGIN { printf "%.1f", b / 1048576 }') MiB)  sha256 $(sha256sum "$wheel" | cut -d' ' -f1)"
done
echo "  total $total bytes ($(awk -v b="$total" 'BEGIN { printf "%.1f", b / 1048576 }') MiB)"
[ "$total" -le "$limit_bytes" ] ||
  die "the wheels come to $total bytes, over 60 MiB (the device tool carries at most 64 MiB a call, the working tree included); name fewer cells and carry them in separate calls"
echo "gpu-prepare: done; on the GPU machine: bash tests/gpu/run.sh $payload/*.whl (carry: [\"$payload\"])"
