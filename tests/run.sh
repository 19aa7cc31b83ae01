#!/usr/bin/env bash
# The test command (README): checks formatting and lints, prepares the
# cross-check tools (tests/prepare.sh), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
bash tests/prepare.sh
cargo test --all-targets --locked
