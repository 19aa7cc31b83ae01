#!/usr/bin/env bash
# Checks docs/guide/adding-a-toolchain-source.md: applies its toy toolkit
# source's diff to a scratch worktree of HEAD, then shows
#   1. the files the diff touches (a module, its Nix file, the list);
#   2. the toy's unit test passing;
#   3. the demo's CUDA 13.0 toolkit locked again twice, from the lock's
#      facts.toolkits and its cuda130 entry removed (so `cuwheel lock` lists
#      the toolkits again and resolves cuda130 anew, reusing everything
#      else): before the diff by the PyPI source (`cuda-wheels`), after it
#      by the toy listed first (`cuda-pinned`, release 13.0.3.0, the newest
#      13.0 PyPI has): the same wheels;
#   4. both built with `nix build .#toolchains.cuda130`, through
#      nix/cuda-wheels.nix and nix/cuda-pinned.nix: the same store path.
# Needs what README command 1 set up (Nix, its store holding the demo's
# cu130 toolkit, the download cache). Builds the toy's cuwheel in
# target/toy (a debug build; the first one compiles every dependency).
# Prints a report; exits non-zero when any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
repo=$PWD
page=docs/guide/adding-a-toolchain-source.md
lock=examples/demo-ext/cuwheel.lock
work=$(mktemp -d -t cuwheel-toy.XXXXXX)
cleanup() {
  git -C "$repo" worktree remove --force "$work/tree" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "toy: FAILED: $*" >&2; exit 1; }
# As scripts/demo.sh: flakes on, the sandbox on with no fallback and no
# binary cache, whatever nix.conf says.
nix=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters '')

git worktree add --quiet --detach "$work/tree" HEAD
awk '/<!-- toy-diff:begin -->/ { on = 1; next } /<!-- toy-diff:end -->/ { on = 0 } on' "$page" |
  sed -e '/^```/d' >"$work/toy.diff"
[ -s "$work/toy.diff" ] || fail "$page has no diff between its toy-diff markers"
cd "$work/tree"
build() { CARGO_TARGET_DIR="$repo/target/toy" cargo build -q --bin cuwheel && cp "$repo/target/toy/debug/cuwheel" "$work/$1"; }

# Locks cuda130 anew with cuwheel $1 and prints its entry and store path.
relock() {
  python3 - "$lock" <<'PY'
import json, sys
path = sys.argv[1]
lock = json.load(open(path))
lock["facts"]["toolkits"] = {}
del lock["toolchains"]["cuda130"]
json.dump(lock, open(path, "w"), indent=2, sort_keys=True)
open(path, "a").write("\n")
PY
  "$work/$1" lock --project examples/demo-ext >"$work/lock.log" 2>&1 ||
    { cat "$work/lock.log" >&2; fail "cuwheel lock"; }
  grep -E "^lock: resolving cuda" "$work/lock.log" | sed 's/^/    /'
  "$work/$1" fetch --project examples/demo-ext --cell cu130-py313-torch211 >/dev/null 2>"$work/fetch.log" ||
    { cat "$work/fetch.log" >&2; fail "cuwheel fetch"; }
  python3 - "$lock" "$work/$1.json" <<'PY'
import json, sys
lock = json.load(open(sys.argv[1]))
entry = lock["toolchains"]["cuda130"]
json.dump(entry, open(sys.argv[2], "w"))
print("    facts.toolkits.13.0:", json.dumps(lock["facts"]["toolkits"]["13.0"], sort_keys=True))
shown = {k: v for k, v in entry.items() if k != "artifacts"}
print("    toolchains.cuda130:", json.dumps(shown, sort_keys=True), f"({len(entry['artifacts'])} wheels)")
PY
  "${nix[@]}" build --no-link --json .#toolchains.cuda130 2>"$work/build.log" >"$work/build.json" ||
    { cat "$work/build.log" >&2; fail "nix build .#toolchains.cuda130"; }
  python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["outputs"]["out"])' \
    <"$work/build.json" >"$work/$1.path"
  echo "    built: $(cat "$work/$1.path")"
}

echo "## 1. Before the diff: the PyPI source"
echo
build before
relock before
git checkout --quiet -- "$lock"
git apply --index "$work/toy.diff"

echo
echo "## 2. What the diff touches"
echo
git diff --cached --stat | sed 's/^/    /'
files=$(git diff --cached --name-only | tr '\n' ' ')
[ "$files" = "crates/cuwheel-build/src/lock/toolkits/mod.rs crates/cuwheel-build/src/lock/toolkits/pinned.rs nix/cuda-pinned.nix " ] ||
  fail "the diff touches $files"

echo
echo "## 3. The toy's unit test"
echo
CARGO_TARGET_DIR="$repo/target/toy" cargo test -q --lib toolkits::pinned 2>&1 |
  grep -E "^test toolkits|test result: ok. [1-9]" | sed 's/^/    /'

echo
echo "## 4. After the diff: the toy source"
echo
build after
relock after
python3 - "$work/before.json" "$work/after.json" <<'PY' || fail "the toy's cuda130"
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:])
same = before["artifacts"] == after["artifacts"]
print("    the same wheels as the PyPI source pinned:", "yes" if same else "no")
sys.exit(0 if same and after["kind"] == "cuda-pinned" and before["kind"] == "cuda-wheels" else 1)
PY
[ "$(cat "$work/before.path")" = "$(cat "$work/after.path")" ] ||
  fail "the toolkit's store path differs"
echo "    the same store path: yes"
echo
echo "toy: every check passed"
