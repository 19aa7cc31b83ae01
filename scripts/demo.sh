#!/usr/bin/env bash
# The README's first command: from a fresh Debian/Ubuntu machine with cargo,
# fetch the demo extension's (examples/demo-ext) pinned artifacts, print its
# plan, and build its cu130-py313-torch211 wheel in the Nix sandbox — toolchains,
# kernel objects, binding, link, wheel and audit — into result/.
# Installs what it needs and the machine lacks (a C compiler, CA
# certificates, git, Python's venv, Nix: Debian's nix-bin), saying so first. Safe to run again: every step skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

command -v cargo >/dev/null || {
  echo "demo: cargo is missing; install Rust >= 1.85 (e.g. rustup) and run again" >&2
  exit 1
}
# Each step's time, for the breakdown of the first wheel
# (docs/reports/ci.md).
start=$(date +%s) lap=$(date +%s)
took() {
  local now
  now=$(date +%s)
  echo "demo: $1 took $((now - lap)) s"
  lap=$now
}

# What cargo and cuwheel run and a bare Debian lacks, installed in one go,
# saying so (root, or sudo): a C compiler and libc's headers (gcc,
# libc6-dev: cargo links every Rust binary with `cc`, and some crates
# compile C), CA certificates (cargo and pip reach their registries over
# TLS), git (Nix reads this checkout as a git repository) and Python's venv
# module (python3-venv: pip runs from a venv, since Debian's python3 has
# none). Installed rather than asked for: the README's commands are the
# whole setup, as for Nix below.
missing=()
if ! command -v cc >/dev/null || ! printf 'int main(void) { return 0; }\n' |
  cc -x c - -o /dev/null 2>/dev/null; then
  missing+=(gcc libc6-dev)
fi
[ -s /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
[ ! -e .git ] || command -v git >/dev/null || missing+=(git)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
# Debian's Nix in the same apt-get run (one index update, not two);
# scripts/setup-nix.sh below does the rest.
command -v nix-store >/dev/null || missing+=(nix-bin)
. scripts/apt-install.sh
apt_install "demo: installing what the build needs and this machine lacks" "${missing[@]}"
# Nix itself, its build users and a sandboxed nix.conf (scripts/setup-nix.sh
# says what it does; it skips every step that is done).
if ! command -v nix-store >/dev/null || ! getent group nixbld >/dev/null \
  || [ ! -s "${NIX_CONF_DIR:-/etc/nix}/nix.conf" ]; then
  echo "demo: Nix, its build users or its nix.conf are missing; running scripts/setup-nix.sh (needs root)"
  bash scripts/setup-nix.sh
fi
took "installing what was missing (packages, Nix)"

# pip resolves and downloads the PyPI artifacts; Debian's python3 has no pip
# of its own, so use a venv's.
venv=target/demo-venv
# Made while cargo compiles the CLI below.
{ [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"; } &
venv_made=$!

# The dev profile: it compiles in about a third of a release build's time
# (68 s against 194 s, each from an empty cargo registry on 2 cores:
# docs/reports/ci.md), and what the CLI does here
# (downloads, hashing with sha2 built optimised, asking Nix) does not need
# more; README command 2's tests reuse its dependencies. Only the `cuwheel`
# binary, without debug info (a sixth less time: the tests compile the
# workspace's own crates again with it). What runs inside the builds is the
# driver, which Nix compiles itself.
CARGO_PROFILE_DEV_DEBUG=0 cargo build --locked --quiet -p cuwheel --bin cuwheel
wait "$venv_made"
took "pip's venv and cargo build of the CLI"
cuwheel=target/debug/cuwheel
# Sandbox on with no fallback and no binary cache, whatever nix.conf says.
nix=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters ''
  --max-jobs auto)

# What builds the driver first (cuwheel's nix/driver.lock: a Rust toolchain
# and the driver's crates), so that Nix compiles the driver, which takes
# the cores, while the cell's artifacts below download, which takes the
# network. Where the store has the driver, its build returns at once.
"$cuwheel" fetch --driver-only --python "$venv/bin/python"
took "cuwheel fetch --driver-only (what builds the driver)"
driver_log=target/demo-driver-build.log
"${nix[@]}" build --no-link .#driver >"$driver_log" 2>&1 &
driver=$!
# Stopped with the script if a step below fails first.
trap 'kill "$driver" 2>/dev/null || true' EXIT

# cuwheel.lock is committed. Only what the one cell built below needs is
# fetched (the whole matrix is about 6.4 GB, and its cp312 cells need an
# archive you supply: `--archives DIR`). Debian drops superseded versions
# from its mirror; fetch then takes them from another suite or Debian's
# snapshot archive, and where none serves them any more the script re-pins
# just those and says so (docs/reference/fetch.md).
cell=cu130-py313-torch211
bash scripts/fetch-or-repin.sh demo "$cuwheel" examples/demo-ext "$venv/bin/python" \
  --cell "$cell" --no-driver
took "cuwheel fetch --cell $cell (while Nix builds the driver)"

# The cell's toolchains (compilers, torch's headers and libraries, Python's
# headers) are unpacked from what was just fetched, without the driver: Nix
# builds them while it still compiles the driver, instead of before the
# first kernel below. Which ones, the plan says (`toolchain` inputs of the
# nodes the cell's audit depends on).
toolchains=$("$cuwheel" plan --project examples/demo-ext --json --no-store | python3 -c '
import json, sys
plan, cell = json.load(sys.stdin), sys.argv[1]
nodes, todo, seen, attrs = plan["nodes"], [plan["cells"][cell]["audit"]], set(), set()
while todo:
    name = todo.pop()
    if name in seen:
        continue
    seen.add(name)
    for given in nodes[name]["inputs"].values():
        if "node" in given:
            todo.append(given["node"])
        elif "toolchain" in given:
            output = given.get("output")
            attrs.add(".#toolchains." + given["toolchain"] + ("." + output if output else ""))
print(" ".join(sorted(attrs)))
' "$cell")
toolchains_log=target/demo-toolchains-build.log
# shellcheck disable=SC2086 # attribute paths, one word each
"${nix[@]}" build --no-link $toolchains >"$toolchains_log" 2>&1 &
toolchains_built=$!
trap 'kill "$driver" "$toolchains_built" 2>/dev/null || true' EXIT
if ! wait "$driver"; then
  tail -n 40 "$driver_log" >&2
  echo "demo: Nix's build of the driver failed; its log: $driver_log" >&2
  exit 1
fi
took "the rest of the driver's Nix build (and the cell's toolchains: $toolchains)"
if ! wait "$toolchains_built"; then
  tail -n 40 "$toolchains_log" >&2
  echo "demo: Nix's build of the cell's toolchains failed; its log: $toolchains_log" >&2
  exit 1
fi
trap - EXIT
took "the rest of the toolchains' Nix build"

"$cuwheel" plan --project examples/demo-ext
took "cuwheel plan"

# One cell: its toolchains, its four kernel objects, its binding, link, wheel
# and audit. result/ holds the wheel beside audit.txt and audit.json.
"${nix[@]}" build --print-build-logs ".#wheels.$cell" -o result
took "nix build .#wheels.$cell"
echo "demo: the audit of the wheel:"
cat result/audit.txt
echo "demo: done in $(($(date +%s) - start)) s: $(ls result/*.whl)"
echo "demo: every cell: nix build .#wheels.all; one: nix build .#wheels.cu126-py313 (fetch it first: cuwheel fetch --cell cu126-py313)"
