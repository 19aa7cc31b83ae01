#!/usr/bin/env bash
# One row of docs/reports/differential.md: a corpus package's wheel built by
# cuwheel (cell cu130-py312-torch211, arch 9.0, from scripts/corpus.sh)
# against the wheel its maintainers' build gives with the same nvcc, torch,
# Python and arch, and the package's GPU check run on both. A script whose
# results are recorded, not a test.
#
#   bash scripts/differential.sh PACKAGE            (on the build machine)
#       1. our wheel: $WORK/corpus/gpu/wheels/<dist>-*.whl, built first with
#          `REPRODUCE=0 scripts/corpus.sh run PACKAGE` when missing;
#       2. the sdist, through scripts/corpus/sdist.py, checked against the
#          sha256 pinned in scripts/corpus.sh;
#       3. both, with the scripts the GPU machine needs and the wheels its
#          check imports (the check's `# needs:` line), into a bundle,
#          $WORK/PACKAGE/bundle. Where this machine has nvcc and a GPU, the
#          device step follows at once; otherwise the bundle is copied to one
#          that has (nvcc 13.0, torch 2.11.0+cu130, Python 3.12) and there:
#   bash BUNDLE/differential.sh device BUNDLE
#       4. the upstream wheel (differential/upstream.sh: pip wheel .
#          --no-build-isolation --no-deps, TORCH_CUDA_ARCH_LIST=9.0, with
#          the minimal patch it prints; fast-transformers, torch-scatter,
#          torch-sparse and torch-spline-conv, of many modules each, through
#          `setup.py build_ext -j bdist_wheel`, see there);
#       5. differential/compare.py: kernels per arch, SASS with addresses
#          normalized, resources, LDL/STL, dynamic symbols, DT_NEEDED,
#          METADATA (BUNDLE/compare/summary.txt and details.txt);
#       6. scripts/corpus/gpu.sh on our wheel, then on upstream's, one after
#          the other on the same machine (BUNDLE/gpu-ours.txt,
#          BUNDLE/gpu-upstream.txt); then the summary.
#
# Environment: WORK (default ${TMPDIR:-/tmp}/cuwheel-differential), GPU=0
# (the device step builds and compares, and runs no GPU check),
# CUOBJDUMP (default cuobjdump; it needs nvdisasm on PATH or NVDISASM_PATH).
set -euo pipefail

die() {
  echo "differential: $*" >&2
  exit 1
}

device() {
  local dir
  dir=$(cd "${1:?usage: differential.sh device BUNDLE}" && pwd)
  local name
  name=$(cat "$dir/package")
  # Packages of many extension modules, which setup.py builds one after the
  # other: all at once instead (upstream.sh says how), to fit a device call.
  local jobs=1
  case "$name" in
  pytorch-fast-transformers | torch-scatter | torch-sparse | torch-spline-conv) jobs=16 ;;
  esac
  rm -rf "$dir/upstream" "$dir/compare" "$dir"/gpu-*
  EXT_JOBS=$jobs bash "$dir/differential/upstream.sh" "$name" "$dir"/sdist/*.tar.gz "$dir/upstream"
  local ours theirs
  ours=$(ls "$dir"/ours/*.whl)
  theirs=$(ls "$dir"/upstream/*.whl)
  python3 "$dir/differential/compare.py" "$ours" "$theirs" "$dir/compare" >/dev/null
  local side
  for side in ours upstream; do
    [ "${GPU:-1}" != 0 ] || break
    mkdir -p "$dir/gpu-$side/wheels" "$dir/gpu-$side/deps"
    cp "$dir/$side"/*.whl "$dir/gpu-$side/wheels/"
    cp "$dir"/deps/*.whl "$dir/gpu-$side/deps/" 2>/dev/null || true
    bash "$dir/corpus/gpu.sh" "$dir/gpu-$side" >"$dir/gpu-$side.txt" 2>&1 || true
  done
  echo "== $name: ours $(basename "$ours"), upstream $(basename "$theirs")"
  echo "-- what upstream's setup.py needed to build for arch 9.0 with nvcc 13 ($dir/upstream/$name.patch):"
  grep -E '^[-+][^-+]' "$dir/upstream/$name.patch" || echo "(nothing)"
  echo "-- the wheels compared ($dir/compare/details.txt holds what differs):"
  cat "$dir/compare/summary.txt"
  [ "${GPU:-1}" != 0 ] || return 0
  echo "-- GPU checks, ours | upstream:"
  paste -d'|' <(grep -E ': (PASS|FAIL)' "$dir/gpu-ours.txt") <(grep -E ': (PASS|FAIL)' "$dir/gpu-upstream.txt")
  grep -hE 'checks passed$' "$dir/gpu-ours.txt" "$dir/gpu-upstream.txt" | sed 's/^/   /'
}

if [ "${1:-}" = device ]; then
  device "${2:-}"
  exit
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: bash scripts/differential.sh PACKAGE | device BUNDLE}
pin=$(sed -n "s/^$name \([^ ]*\) \([0-9a-f]\{64\}\)$/\1 \2/p" "$repo/scripts/corpus.sh")
[ -n "$pin" ] || die "$name is not a corpus package (bash scripts/corpus.sh list)"
read -r version sha256 <<<"$pin"
work=${WORK:-${TMPDIR:-/tmp}/cuwheel-differential}
mkdir -p "$work"
work=$(cd "$work" && pwd)
dist=$(echo "$name" | tr '-' '_')
wheel=$(ls "$work"/corpus/gpu/wheels/"$dist"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  echo "differential: no wheel of ours for $name yet: scripts/corpus.sh run $name (REPRODUCE=0)" >&2
  WORK=$work/corpus REPRODUCE=0 bash "$repo/scripts/corpus.sh" run "$name"
  wheel=$(ls "$work"/corpus/gpu/wheels/"$dist"-*.whl 2>/dev/null | head -n 1 || true)
  [ -n "$wheel" ] || die "scripts/corpus.sh built no wheel of $name (logs in $work/corpus)"
fi
bundle=$work/$name/bundle
rm -rf "$bundle"
mkdir -p "$bundle/ours" "$bundle/sdist" "$bundle/differential" "$bundle/corpus"
cp "$wheel" "$bundle/ours/"
python3 "$repo/scripts/corpus/sdist.py" "$name" "$version" "$sha256" "$bundle/sdist" >/dev/null
cp "$repo/scripts/differential/upstream.sh" "$repo/scripts/differential/compare.py" "$bundle/differential/"
cp "$0" "$bundle/differential.sh"
cp -r "$repo/scripts/corpus/gpu.sh" "$repo/scripts/corpus/checks" "$bundle/corpus/"
# What the check imports beyond torch (its `# needs:` line), as cp312 wheels:
# the GPU machine has no network.
read -r check extra <<<"$(sed -n "s/^  $dist) echo \"\\?\([a-z_ ]*\).*/\1/p" "$repo/scripts/corpus/gpu.sh")"
needs=$(sed -n 's/^# needs: //p' "$repo/scripts/corpus/checks/${check:-none}.py" 2>/dev/null || true)
mkdir -p "$bundle/deps"
# The corpus wheels the check loads beside this one (torch-sparse's needs
# torch-scatter's), ours on both sides.
for other in $extra; do
  cp "$(ls "$work"/corpus/gpu/wheels/"$other"-*.whl | head -n 1)" "$bundle/deps/" ||
    die "the check of $name needs our $other wheel: scripts/differential.sh ${other//_/-} first"
done
# shellcheck disable=SC2086
[ -z "$needs" ] || python3 -m pip download -q --disable-pip-version-check --only-binary :all: \
  --python-version 3.12 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  -d "$bundle/deps" $needs
echo "$name" >"$bundle/package"
if command -v nvcc >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  device "$bundle"
else
  echo "differential: bundle ready: $bundle ($(du -sh "$bundle" | cut -f1)); this machine has no nvcc or GPU."
  echo "On the GPU machine (nvcc 13.0, torch 2.11.0+cu130, Python 3.12): bash BUNDLE/differential.sh device BUNDLE"
fi
