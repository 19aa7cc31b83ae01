#!/usr/bin/env bash
# The README's first command: from a fresh Debian/Ubuntu machine with cargo,
# pin, fetch and build in the Nix sandbox everything the demo extension
# (examples/demo-ext) needs — its toolchains for CUDA 13.0 and 12.4, the
# check that compiles an ATen kernel with each, and cuwheel itself.
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
# mirror has dropped a pinned version).
"$cuwheel" fetch --project examples/demo-ext --python "$venv/bin/python"

# Sandbox on with no fallback and no binary cache, whatever nix.conf says.
nix_build=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters ''
  build --no-link --print-build-logs)
"${nix_build[@]}" .#toolchains.cu130 .#toolchains.cu124 \
  .#checks.x86_64-linux.toolchain-cu130 .#checks.x86_64-linux.toolchain-cu124 .#cuwheel
for check in cu130 cu124; do
  echo "demo: toolchain check $check:"
  cat "$(nix --extra-experimental-features 'nix-command flakes' eval --raw \
    .#checks.x86_64-linux.toolchain-$check.outPath)/report.txt"
done
echo "demo: done; the Nix-built driver: nix run .#cuwheel -- --help"
