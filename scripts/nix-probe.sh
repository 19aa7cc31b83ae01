#!/usr/bin/env bash
# Records what the Nix on PATH prints for the commands cuwheel reads, as
# unit-test fixtures for crates/cuwheel-nix (its path-info, narinfo and
# derivation parsers are tested against every version's real output).
# Usage: bash scripts/nix-probe.sh OUT_DIR [STORE_DIR]
#   OUT_DIR    where the files go (nix-VERSION/ is made under it)
#   STORE_DIR  a store of its own (`--store DIR`); the system store if left out
# Writes: version.txt, config.txt (`nix config show` / `show-config`),
# probe.drv (a .drv file as Nix wrote it), derivation-show.json,
# path-info.json (a present and a missing path), path-info-cache.json (the
# same from a binary cache), cache.narinfo, query.txt (nix-store --query).
set -euo pipefail
out=$1
store=()
[ $# -gt 1 ] && store=(--store "$2")
nix=(nix --extra-experimental-features 'nix-command flakes' "${store[@]}")
version=$("${nix[@]}" --version | awk '{ print $NF }')
dir=$out/nix-$(echo "$version" | cut -d. -f1-2)
mkdir -p "$dir"
echo "$version" > "$dir/version.txt"
minor=$(echo "$version" | cut -d. -f2)
json_format=()
[ "$minor" -ge 33 ] && json_format=(--json-format 1)

if [ "$minor" -ge 20 ]; then "${nix[@]}" config show; else "${nix[@]}" show-config; fi |
  grep -E '^(sandbox|sandbox-fallback|trusted-users|substituters|trusted-substituters|experimental-features|build-users-group|require-sigs|max-jobs) =' \
  > "$dir/config.txt"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
drv=$(nix-instantiate "${store[@]}" --expr 'derivation {
  name = "probe"; system = "x86_64-linux"; builder = "/bin/sh";
  args = [ "-c" "cat $src > $out" ]; src = builtins.toFile "probe.txt" "cuwheel probe\n"; }')
file=$(nix-store "${store[@]}" --query --references "$drv")
real() { if [ ${#store[@]} -gt 0 ]; then echo "${store[1]}$1"; else echo "$1"; fi; }
cp "$(real "$drv")" "$dir/probe.drv"
if [ "$minor" -ge 15 ]; then show=(derivation show); else show=(show-derivation); fi
"${nix[@]}" "${show[@]}" "$drv" > "$dir/derivation-show.json"
missing=/nix/store/00000000000000000000000000000000-missing
"${nix[@]}" path-info --json "${json_format[@]}" --sigs "$file" "$missing" \
  > "$dir/path-info.json" || true
# Plain --json too, where --json-format exists (to record the deprecation).
if [ "$minor" -ge 33 ]; then
  "${nix[@]}" path-info --json --json-format 2 --sigs "$file" "$missing" \
    > "$dir/path-info-format2.json" || true
  "${nix[@]}" path-info --json --sigs "$file" 2> "$dir/path-info-plain-json.stderr" >/dev/null || true
fi
{
  for q in --references --hash --size --deriver; do
    echo "# nix-store --query $q"
    nix-store "${store[@]}" --query "$q" "$drv"
  done
} > "$dir/query.txt"

nix-store --generate-binary-cache-key probe-1 "$tmp/key.sec" "$tmp/key.pub"
"${nix[@]}" copy --derivation --to "file://$tmp/cache?compression=zstd&secret-key=$tmp/key.sec" "$drv"
cp "$tmp/cache/${drv:11:32}.narinfo" "$dir/cache.narinfo"
"${nix[@]}" path-info --store "file://$tmp/cache" --json "${json_format[@]}" --sigs "$file" "$missing" \
  > "$dir/path-info-cache.json" || true
echo "nix-probe: recorded Nix $version into $dir"
