#!/usr/bin/env bash
# Builds cells of the demo's matrix (examples/demo-ext) beyond the few CI
# builds, and checks each the way a user would meet it: the audit the build
# ran, then pip's choice for a glibc 2.28 platform (RHEL 8's) from an index
# that `cuwheel publish` wrote and a server on loopback serves. Prints a
# Markdown report (docs/reports/matrix.md records one run).
#
# usage: scripts/demo-matrix.sh [CELL...]   (default: every cell `cuwheel plan` lists)
#
# Needs what scripts/demo.sh needs, and the archives the lock pins that no
# registry carries (the CPython 3.12 headers): examples/demo-ext/archives,
# or $CUWHEEL_ARCHIVES. Each cell costs its toolchains
# (a torch wheel is 0.5-0.9 GB, a new CUDA toolkit a few minutes to unpack)
# and its kernels; everything built is kept in the Nix store.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
project=examples/demo-ext

cargo build --release --locked --quiet
cuwheel=$PWD/target/release/cuwheel
python=${PYTHON:-python3}
"$python" -m pip --version >/dev/null || { echo "demo-matrix: $python has no pip; set PYTHON to one that has" >&2; exit 1; }

if [ $# -gt 0 ]; then
  cells=("$@")
else
  mapfile -t cells < <("$cuwheel" plan --no-store --project "$project" | sed -n 's/^  \(cu[0-9]*-[^ ]*\)  .*/\1/p')
fi
fetch_cells=()
for cell in "${cells[@]}"; do fetch_cells+=(--cell "$cell"); done
"$cuwheel" fetch --project "$project" --python "$python" --archives examples/demo-ext/archives "${fetch_cells[@]}" >&2

nix=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters '' --max-jobs auto)
attrs=()
for cell in "${cells[@]}"; do attrs+=(".#wheels.$cell"); done
start=$(date +%s)
"${nix[@]}" build --no-link "${attrs[@]}" >&2
echo "demo-matrix: built ${#cells[@]} cells in $(( $(date +%s) - start )) s" >&2

work=$(mktemp -d)
server_pid=
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "| cell | wheel | bytes | sha256 | audit |"
echo "|---|---|---|---|---|"
wheels=()
for cell in "${cells[@]}"; do
  result=$("${nix[@]}" eval --raw ".#wheels.$cell.outPath")
  wheel=$(ls "$result"/*.whl)
  wheels+=("$wheel")
  name=${wheel##*/}
  size=$(stat -c %s "$wheel")
  sha=$(sha256sum "$wheel" | cut -d' ' -f1)
  verdict=$(head -1 "$result/audit.txt" | sed 's/^[^:]*: //')
  platform=$(sed -n 's/^  platform: //p' "$result/audit.txt")
  echo "| $cell | \`$name\` | $size | \`$sha\` | $verdict; $platform |"
done

# The index, served on loopback for the time of the checks.
"$cuwheel" publish --to "$work/index" "${wheels[@]}" >"$work/publish.log"
port=$(( 20000 + RANDOM % 20000 ))
"$python" -m http.server --bind 127.0.0.1 --directory "$work/index" "$port" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do
  curl -fs "http://127.0.0.1:$port/" >/dev/null && break
  sleep 0.2
done

echo
echo "pip's choice for a glibc 2.28 platform of the wheel's architecture (\`pip download --platform manylinux_2_28_<arch>\`, the cell's own index):"
echo
failed=0
for i in "${!cells[@]}"; do
  cell=${cells[$i]}
  name=${wheels[$i]##*/}
  version=$(echo "$name" | cut -d- -f2)
  tag=$(echo "$name" | cut -d- -f3)
  abi=$(echo "$name" | cut -d- -f4)
  label=${version#*+}
  variant=cu${label##*cu}
  abi_args=()
  case "$abi" in
    abi3) py=3.12 ;;  # any CPython from 3.9 on
    *t) py="${tag:2:1}.${tag:3}"; abi_args=(--abi "$abi") ;;
    *) py="${tag:2:1}.${tag:3}" ;;
  esac
  case "$name" in
    *_aarch64.whl) arch=aarch64 ;;
    *) arch=x86_64 ;;
  esac
  dest="$work/pick-$cell"
  if "$python" -m pip download --quiet --no-deps --no-cache-dir --disable-pip-version-check \
      --only-binary=:all: --implementation cp --python-version "$py" "${abi_args[@]}" \
      --platform "manylinux_2_28_$arch" --dest "$dest" \
      --index-url "http://127.0.0.1:$port/$variant/" "demo-ext==$version" 2>"$work/pip.err" \
      && [ -f "$dest/$name" ]; then
    echo "- $cell (Python $py, $arch, $variant/): picked \`$name\`"
  else
    echo "- $cell (Python $py, $variant/): NOT picked: $(tail -1 "$work/pip.err")"
    failed=1
  fi
done
exit $failed
