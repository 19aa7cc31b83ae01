#!/usr/bin/env bash
# Run by scripts/nix-versions.sh inside a Debian root (never by hand): the
# commands of the tier, in one MODE, with the checkout at SRC and the
# cuwheel binary at CUWHEEL. Each step prints one line "RESULT<TAB>step<TAB>
# ok|FAIL<TAB>detail" on stdout: an ok step's wall time, a failed one's last
# output; the wheel's sha256 is the detail of `wheel-sha256`.
# Usage: nix-versions-in-root.sh MODE SRC CUWHEEL
#   MODE  root (single-user, the store directly) | trusted | untrusted
#         (through the nix-daemon, as a user in trusted-users or not)
set -uo pipefail
mode=$1 src=$2 cuwheel=$3
cd "$src"
cell=cu130-py313-torch211
second=cu130-py311-torch211
project=examples/demo-ext
result() { printf 'RESULT\t%s\t%s\t%s\n' "$1" "$2" "${3:-}"; }
step() { # step NAME COMMAND...: runs it, logging into target/tier-NAME.log; the detail of an ok step is its wall time
  local name=$1 start=$SECONDS; shift
  if "$@" > "target/tier-$name.log" 2>&1; then result "$name" ok "$((SECONDS - start)) s"; return 0; fi
  result "$name" FAIL "$(tail -c 300 "target/tier-$name.log" | tr '\n\t' '  ')"
  return 1
}
nix=(nix --extra-experimental-features 'nix-command flakes' --option sandbox true
  --option sandbox-fallback false --option substituters '' --max-jobs auto)
mkdir -p target
[ -x target/venv/bin/pip ] || python3 -m venv target/venv

step fetch bash scripts/fetch-or-repin.sh tier "$cuwheel" "$project" target/venv/bin/python \
  --cell "$cell" --cell "$second" || exit 1
if step build "${nix[@]}" build ".#wheels.$cell" -o target/result; then
  wheel=$(ls target/result/*.whl)
  result wheel-sha256 ok "$(sha256sum "$wheel" | cut -d' ' -f1) $(basename "$wheel")"
else
  exit 1
fi
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
rm -rf target/keys target/cache
step cache-key "$cuwheel" cache key tier-1 --out target/keys
step cache-export "$cuwheel" cache export target/cache --key target/keys/tier-1.sec \
  --project "$project" --cell "$cell"
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
  # An untrusted user: the daemon would ignore the cache's settings, so
  # cuwheel must refuse and print the nix.conf lines that fix it.
  if "$cuwheel" fetch --offline --project "$project" --cell "$cell" \
    --substituter target/cache --trusted-key target/keys/tier-1.pub > target/tier-untrusted-cache.log 2>&1; then
    result cache-refused-untrusted FAIL "fetch went on although the daemon ignores its cache settings"
  elif grep -q 'extra-trusted-substituters = ' target/tier-untrusted-cache.log &&
    grep -q 'extra-trusted-public-keys = ' target/tier-untrusted-cache.log; then
    result cache-refused-untrusted ok "the nix.conf lines printed"
  else
    result cache-refused-untrusted FAIL "$(tail -c 300 target/tier-untrusted-cache.log | tr '\n\t' '  ')"
  fi
fi
exit 0
