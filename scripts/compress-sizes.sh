#!/usr/bin/env bash
# What `cuda-compress-mode` does to a wheel's size: builds one cell of the demo
# once per mode, in the sandbox, and prints the audit's size report of each as
# one markdown table (docs/reports/sizes.md records a run).
#
# For each mode, in a throwaway worktree of HEAD: `cuda-compress-mode = MODE`
# goes into the demo's [tool.cuwheel], `cuwheel lock` relocks (reusing every
# pin: the script checks that only config-sha256 changed, so the toolchains
# are the demo's), and `nix build .#wheels.CELL` builds the cell's kernels,
# binding, link, wheel and audit; the audit's JSON gives the wheel's size and
# each arch's bytes. The cell's toolchains must be fetched (README command 1
# does it for the default cell).
#
# Usage: bash scripts/compress-sizes.sh [CELL]   (MODES="none size" to choose;
# WHEELS=DIR keeps each mode's wheel in DIR/MODE/, e.g. for tests/gpu/run.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
cell=${1:-cu130-py313-torch211}
modes=${MODES:-none speed balance size}
venv=target/demo-venv
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
cargo build --release --locked --quiet
cuwheel=$repo/target/release/cuwheel
nix=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters ''
  --max-jobs auto)

work=$(mktemp -d -t cuwheel-sizes.XXXXXX)
cleanup() {
  git -C "$repo" worktree remove --force "$work/tree" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add --quiet --detach "$work/tree" HEAD
project=$work/tree/examples/demo-ext

rows=()
for mode in $modes; do
  git -C "$work/tree" checkout --quiet -- examples/demo-ext
  python3 - "$project/pyproject.toml" "$mode" <<'EOF'
import re, sys
path, mode = sys.argv[1], sys.argv[2]
text = open(path).read()
# The key goes right after [tool.cuwheel]'s baseline: a top-level compile key.
new, n = re.subn(r'(?m)^(baseline = .*)$', r'\1\ncuda-compress-mode = "%s"' % mode, text, count=1)
if n != 1:
    sys.exit(f"sizes: no `baseline = ...` line in {path}")
open(path, "w").write(new)
EOF
  before=$(grep -v '"config-sha256"' "$project/cuwheel.lock" | sha256sum)
  start=$(date +%s)
  "$cuwheel" lock --project "$project" --python "$venv/bin/python" >/dev/null
  after=$(grep -v '"config-sha256"' "$project/cuwheel.lock" | sha256sum)
  if [ "$before" != "$after" ]; then
    echo "sizes: relocking for cuda-compress-mode = $mode changed a pin, not only config-sha256" >&2
    git -C "$work/tree" diff --stat >&2
    exit 1
  fi
  lock_s=$(( $(date +%s) - start ))
  start=$(date +%s)
  "${nix[@]}" build "$work/tree#wheels.$cell" -o "$work/result-$mode"
  build_s=$(( $(date +%s) - start ))
  if [ -n "${WHEELS:-}" ]; then
    mkdir -p "$WHEELS/$mode"
    cp "$work/result-$mode"/*.whl "$WHEELS/$mode/"
  fi
  echo "sizes: $mode: relock ${lock_s} s, build ${build_s} s" >&2
  rows+=("$(python3 - "$work/result-$mode/audit.json" "$mode" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
if isinstance(report, list):
    report = report[0]
size = report["size"]
kib = lambda b: f"{b / 1024:.1f}"
archs = "; ".join(
    f"{a['arch']} {kib(a['stored_bytes'])} → {kib(a['deflated_bytes'])}" for a in size["archs"]
)
stored = sum(a["stored_bytes"] for a in size["archs"])
deflated = sum(a["deflated_bytes"] for a in size["archs"])
print(f"| `{sys.argv[2]}` | {size['wheel_bytes']} | {kib(stored)} | {kib(deflated)} | {archs} | "
      f"{'PASSED' if report['passed'] else 'FAILED'} |")
EOF
)")
done

echo "cell $cell, $(git -C "$repo" rev-parse --short HEAD)"
echo
echo "| cuda-compress-mode | wheel (bytes) | images stored (KiB) | images deflated (KiB) | per arch: stored → deflated (KiB) | audit |"
echo "|---|---:|---:|---:|---|---|"
printf '%s\n' "${rows[@]}"
