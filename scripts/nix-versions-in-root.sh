#!/usr/bin/env bash
# Run by scripts/nix-versions.sh inside a Debian root (never by hand): the
# commands of the tier, in one MODE, with the checkout at SRC and the
# cuwheel binary at CUWHEEL. Each step prints one line "RESULT<TAB>step<TAB>
# ok|FAIL<TAB>detail" on stdout: an ok step's wall time, a failed one's last
# output; the wheel's sha256 and name are the detail of `wheel-sha256`.
# Usage: nix-versions-in-root.sh MODE SRC CUWHEEL CELL SECOND [SEED]
#   MODE  root (single-user, the store directly) | trusted | untrusted
#         (through the nix-daemon, as a user in trusted-users or not)
#   CELL, SECOND  the demo's cell, and a second Python of the same toolkit
#         and torch
#   SEED  the quick tier (CI's): a directory the host filled — cache/ (a
#         binary cache of the two cells' inputs, exported by the host's
#         Nix), keys/host-1.pub, and sha256s (each cell's wheel as the host
#         built it); the root's nix.conf names that cache as a
#         substituter. Root fills its empty store from it offline
#         (cuwheel's download cache is the host's, hardlinked), builds the
#         first cell and reproduces it; the untrusted user builds the second
#         Python through the daemon. Without SEED every mode fetches from
#         the registries and builds everything itself.
set -uo pipefail
mode=$1 src=$2 cuwheel=$3 cell=$4 second=$5 seed=${6:-}
cd "$src"
project=examples/demo-ext
result() { printf 'RESULT\t%s\t%s\t%s\n' "$1" "$2" "${3:-}"; }
step() { # step NAME COMMAND...: runs it, logging into target/tier-NAME.log; the detail of an ok step is its wall time
  local name=$1 start=$SECONDS; shift
  if "$@" > "target/tier-$name.log" 2>&1; then result "$name" ok "$((SECONDS - start)) s"; return 0; fi
  result "$name" FAIL "$(tail -c 300 "target/tier-$name.log" | tr '\n\t' '  ')"
  return 1
}
# wheel_result CELL RESULT_DIR: the wheel's sha256, and (with a seed) the
# same as the host's Nix built, or a failure.
wheel_result() {
  local w sha want
  w=$(ls "$2"/*.whl) || { result wheel-sha256 FAIL "no wheel in $2"; return 1; }
  sha=$(sha256sum "$w" | cut -d' ' -f1)
  if [ -n "$seed" ]; then
    want=$(awk -v c="$1" '$1 == c { print $2 }' "$seed/sha256s")
    if [ "$sha" != "$want" ]; then
      result wheel-sha256 FAIL "$sha $(basename "$w"), where the host's Nix built $want"
      return 1
    fi
  fi
  result wheel-sha256 ok "$sha $(basename "$w")"
}
nix=(nix --extra-experimental-features 'nix-command flakes' --option sandbox true
  --option sandbox-fallback false --max-jobs auto)
# With a seed, every mode substitutes from the cache the root's nix.conf
# names (an untrusted user's --option substituters would be ignored
# anyway); without one, from nothing.
[ -n "$seed" ] || nix+=(--option substituters '')
mkdir -p target

# The binary cache of a user's own: a key, an export of one cell.
export_cache() {
  rm -rf target/keys target/cache
  step cache-key "$cuwheel" cache key tier-1 --out target/keys
  step cache-export "$cuwheel" cache export target/cache --key target/keys/tier-1.sec \
    --project "$project" --cell "$1"
}
# An untrusted user: the daemon would ignore the cache's settings, so
# cuwheel must refuse and print the nix.conf lines that fix it.
untrusted_cache() {
  if "$cuwheel" fetch --offline --project "$project" --cell "$1" \
    --substituter target/cache --trusted-key target/keys/tier-1.pub > target/tier-untrusted-cache.log 2>&1; then
    result cache-refused-untrusted FAIL "fetch went on although the daemon ignores its cache settings"
  elif grep -q 'extra-trusted-substituters = ' target/tier-untrusted-cache.log &&
    grep -q 'extra-trusted-public-keys = ' target/tier-untrusted-cache.log; then
    result cache-refused-untrusted ok "the nix.conf lines printed"
  else
    result cache-refused-untrusted FAIL "$(tail -c 300 target/tier-untrusted-cache.log | tr '\n\t' '  ')"
  fi
}

if [ -n "$seed" ]; then
  if [ "$mode" = root ]; then
    # An empty store, filled offline: the pinned files from the host's
    # download cache (not the driver's Rust and crates: the driver itself
    # is in the cache), and every path the cache holds from there. Then the
    # cell (its plan, binding, link, wheel and audit are built here; its
    # toolchains, kernel objects and driver come from the cache), the same
    # bytes as the host's, and every derivation of it built again.
    step fetch "$cuwheel" fetch --offline --no-driver --project "$project" --cell "$cell" \
      --substituter "$seed/cache" --trusted-key "$seed/keys/host-1.pub" || exit 1
    step build "${nix[@]}" build ".#wheels.$cell" -o target/result || exit 1
    wheel_result "$cell" target/result || exit 1
    wheel=$(ls target/result/*.whl)
    step reproduce "$cuwheel" reproduce --project "$project" "$wheel"
    step publish "$cuwheel" publish --to target/index "$wheel"
    export_cache "$cell"
  else
    # A second Python through the daemon: its own derivations built, the
    # kernel objects reused, the same bytes as the host's.
    step second-python "${nix[@]}" build ".#wheels.$second" -o target/result --print-build-logs || exit 1
    wheel_result "$second" target/result || exit 1
    if grep -q "building '/nix/store/[a-z0-9]*-kernel-" target/tier-second-python.log; then
      result kernels-reused FAIL "a kernel object was built again"
    else
      result kernels-reused ok
    fi
    step publish "$cuwheel" publish --to target/index target/result/*.whl
    export_cache "$second"
    [ "$mode" = untrusted ] && untrusted_cache "$second"
  fi
  exit 0
fi

[ -x target/venv/bin/pip ] || python3 -m venv target/venv
step fetch bash scripts/fetch-or-repin.sh tier "$cuwheel" "$project" target/venv/bin/python \
  --cell "$cell" --cell "$second" || exit 1
step build "${nix[@]}" build ".#wheels.$cell" -o target/result || exit 1
wheel_result "$cell" target/result || exit 1
wheel=$(ls target/result/*.whl)
# A second Python: the kernel objects are the first cell's (nothing of them builds).
step second-python "${nix[@]}" build ".#wheels.$second" -o target/result-second --print-build-logs
if grep -q "building '/nix/store/[a-z0-9]*-kernel-" target/tier-second-python.log; then
  result kernels-reused FAIL "a kernel object was built again"
else
  result kernels-reused ok
fi
step reproduce "$cuwheel" reproduce --project "$project" "$wheel"
step publish "$cuwheel" publish --to target/index "$wheel"

# The binary cache: one cell's closure, then (as root) an empty store filled
# from it alone, offline, and the same wheel built there.
export_cache "$cell"
if [ "$mode" = root ]; then
  # Not under /var/tmp (Nix 2.34 refuses a store below a world-writable
  # directory), nor in the checkout (a path flake copies the whole of it,
  # the store inside included, into the store).
  empty=$(mktemp -d "$HOME/empty-store.XXXXXX")
  step fetch-from-cache "$cuwheel" fetch --offline --project "$project" --cell "$cell" \
    --store "$empty" --substituter target/cache --trusted-key target/keys/tier-1.pub
  # The toolchains, kernel objects and driver come from the cache (the
  # later `--option substituters` wins over the pinned empty one); the
  # binding, link and wheel are built again, here.
  if step build-from-cache "${nix[@]}" --store "$empty" \
    --option substituters "file://$PWD/target/cache" \
    --option trusted-public-keys "$(cat target/keys/tier-1.pub)" \
    build ".#wheels.$cell" --no-link --print-out-paths; then
    out=$(tail -n 1 target/tier-build-from-cache.log)
    other=$(sha256sum "$empty$out"/*.whl | cut -d' ' -f1)
    if [ "$other" = "$(sha256sum "$wheel" | cut -d' ' -f1)" ]; then
      result identical-from-cache ok "$other"
    else
      result identical-from-cache FAIL "$other"
    fi
  fi
elif [ "$mode" = trusted ]; then
  # Through the daemon, into its store.
  step fetch-from-cache "$cuwheel" fetch --offline --project "$project" --cell "$cell" \
    --substituter target/cache --trusted-key target/keys/tier-1.pub
else
  untrusted_cache "$cell"
fi
exit 0
