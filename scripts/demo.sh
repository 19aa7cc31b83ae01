#!/usr/bin/env bash
# The README's first command: from a fresh Debian/Ubuntu machine with cargo,
# fetch the demo extension's (examples/demo-ext) pinned artifacts, print its
# plan, and build its cu130-py313-torch211 wheel in the Nix sandbox — toolchains,
# kernel objects, binding, link, wheel and audit — into result/.
# Installs Nix (Debian's nix-bin) and Python's venv if they are missing,
# saying so first. Safe to run again: every step skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

command -v cargo >/dev/null || {
  echo "demo: cargo is missing; install Rust >= 1.85 (e.g. rustup) and run again" >&2
  exit 1
}
missing=()
command -v nix >/dev/null || missing+=(nix-bin)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "demo: ${missing[*]} missing; installing with apt-get (needs root)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# pip resolves and downloads the PyPI artifacts; Debian's python3 has no pip
# of its own, so use a venv's.
venv=target/demo-venv
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"

cargo build --release --locked --quiet
cuwheel=target/release/cuwheel
# cuwheel.lock is committed; `cuwheel lock --project examples/demo-ext`
# re-resolves it (needed only after a config change or when the Debian
# mirror has dropped a pinned version). Only what the cell built below needs
# is fetched (the whole matrix is about 7 GB, and its cp312 cells need an
# archive you supply: `--archives DIR`).
cell=cu130-py313-torch211
"$cuwheel" fetch --project examples/demo-ext --python "$venv/bin/python" --cell "$cell"

"$cuwheel" plan --project examples/demo-ext

# Sandbox on with no fallback and no binary cache, whatever nix.conf says.
nix=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters '')
# One cell: its toolchains, its three kernel objects, its binding, link, wheel
# and audit. result/ holds the wheel beside audit.txt and audit.json.
"${nix[@]}" build --print-build-logs ".#wheels.$cell" -o result
echo "demo: the audit of the wheel:"
cat result/audit.txt
echo "demo: done: $(ls result/*.whl)"
echo "demo: every cell: nix build .#wheels.all; one: nix build .#wheels.cu126-py313 (fetch it first: cuwheel fetch --cell cu126-py313)"
