#!/usr/bin/env bash
# The README replayed from nothing, as a newcomer would: a minimal Debian 12
# root (`debootstrap --variant=minbase bookworm`) with only a Rust toolchain
# and this machine's way of reaching the package registries copied in, then
# README command 1 (`bash scripts/demo.sh`) and, when asked, command 2
# (`bash tests/run.sh`) inside it, with an empty Nix store and empty
# download, cargo and apt caches. What the commands lack, they must install
# themselves: that is what this proves, and what a machine that already has
# gcc, gpg, pip and warm caches cannot.
#
# Usage: scripts/newcomer.sh [1] [2] [--keep]
#   1, 2     which README commands to replay, in order (default: both; CI
#            replays 1 on every run: a cold store catches rotted pins)
#   --keep   keep the root afterwards (it is removed by default: its store
#            alone is several GB)
#
# What is copied into the root, and nothing else:
# - the checkout at HEAD (a `git clone`: what is committed, not the work tree);
# - the Rust toolchain this machine runs (rustup's default toolchain and its
#   proxies, hard-linked), as rustup would install it;
# - how this machine reaches the registries: apt's sources and configuration
#   (enabled `.list`/`.sources` files, apt.conf.d, keyrings), pip's
#   (/etc/pip.conf, PIP_* variables), the CA bundle they name with the local
#   CAs it is made from and the variables that name it, and DNS.
#
# The root is entered with `unshare --mount --fork` and `pivot_root`, not
# chroot: chroot forbids the user namespaces Nix's sandbox needs. Its Nix
# build users get uids from CUWHEEL_NIX_ID_BASE=37000 (+1..), which the
# host's Nix (30001..) does not use: Nix kills every process of a build uid,
# so two stores sharing uids break each other's builds.
#
# Prints each command's wall time and result and, for command 2, what
# failed (tests/run.sh's list). Logs: target/newcomer/command-N.log.
# Exit status: 0 when every command replayed passed. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

commands=() keep=false
for arg in "$@"; do
  case "$arg" in
    1 | 2) commands+=("$arg") ;;
    --keep) keep=true ;;
    *) echo "newcomer: unknown argument '$arg'; usage: scripts/newcomer.sh [1] [2] [--keep]" >&2; exit 2 ;;
  esac
done
[ ${#commands[@]} -gt 0 ] || commands=(1 2)
[ "$(id -u)" = 0 ] || { echo "newcomer: run me as root (debootstrap, unshare, pivot_root)" >&2; exit 1; }

work=$repo/target/newcomer
root=$work/root
say() { echo "newcomer: $*"; }

# A root left by an earlier run holds no mounts (each run's mounts live in a
# namespace that died with it), so it can simply be removed.
remove_root() {
  if grep -q " $root[/ ]" /proc/mounts; then
    echo "newcomer: $root still has mounts (see /proc/mounts); not removing it" >&2
    return 1
  fi
  rm -rf "$root"
}
[ ! -e "$root" ] || remove_root
mkdir -p "$work"

if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap on this machine (apt-get)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }
fi

# The Debian mirror this machine's apt uses for bookworm.
mirror=$(
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
    awk '
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") { print uri; exit } }
      /^deb / { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i ~ /:\/\//) { if ($(i+1) == "bookworm") { print $i; exit } } }
    '
)
[ -n "$mirror" ] || { echo "newcomer: no apt source of this machine serves bookworm" >&2; exit 1; }

start=$(date +%s)
say "debootstrap --variant=minbase bookworm (from this machine's Debian mirror)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
say "the minimal root took $(($(date +%s) - start)) s"

# How this machine reaches the registries.
rm -f "$root/etc/apt/sources.list"
for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$file" ] && cp "$file" "$root$file"
done
for dir in apt.conf.d auth.conf.d keyrings trusted.gpg.d; do
  [ -d "/etc/apt/$dir" ] && cp -a "/etc/apt/$dir/." "$root/etc/apt/$dir/"
done
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
# The CA bundle, and the local CAs it is made from (installing
# ca-certificates in the root regenerates the bundle from those).
mkdir -p "$root/etc/ssl/certs" "$root/usr/local/share/ca-certificates"
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
[ -d /usr/local/share/ca-certificates ] &&
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

# The Rust toolchain, as rustup lays it out.
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
toolchain=$(rustup default | awk '{ print $1 }')
mkdir -p "$root/root/.rustup/toolchains" "$root/root/.cargo/bin"
cp -al "$rustup_home/toolchains/$toolchain" "$root/root/.rustup/toolchains/" 2>/dev/null ||
  cp -a "$rustup_home/toolchains/$toolchain" "$root/root/.rustup/toolchains/"
cp "$rustup_home/settings.toml" "$root/root/.rustup/"
cp -a "$cargo_home/bin/." "$root/root/.cargo/bin/"

# The checkout, as committed; named once, so commits made while the
# commands run change neither what they run nor what the results name.
commit=$(git rev-parse HEAD)
git clone -q --no-local "$repo" "$root/cuwheel"
git -C "$root/cuwheel" checkout -q "$commit"
say "the checkout is ${commit:0:7}"

# Every PIP_* variable of this environment, and those naming the CA bundle
# (curl's, cargo's, git's, Nix's, Python's), passed on.
pip_env=()
while IFS='=' read -r name value; do
  case "$name" in
    PIP_* | SSL_CERT_FILE | SSL_CERT_DIR | CURL_CA_BUNDLE | GIT_SSL_CAINFO | NIX_SSL_CERT_FILE | REQUESTS_CA_BUNDLE)
      pip_env+=("$name=$value") ;;
  esac
done < <(env)

# Runs `bash CMD` in the root's checkout, as root, with a clean environment.
in_root() {
  unshare --mount --fork -- bash -c '
    set -e
    root=$1; shift
    mount --make-rprivate /
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t sysfs sysfs "$root/sys"
    mkdir -p "$root/.oldroot"
    cd "$root"
    pivot_root . .oldroot
    umount -l /.oldroot
    rmdir /.oldroot
    cd /cuwheel
    exec env -i HOME=/root USER=root LANG=C.UTF-8 TERM=dumb \
      PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      CUWHEEL_NIX_ID_BASE=37000 "$@"
  ' newcomer "$root" "${pip_env[@]}" "$@"
}

status=0
results=()
for n in "${commands[@]}"; do
  case "$n" in
    1) script=scripts/demo.sh ;;
    2) script=tests/run.sh ;;
  esac
  log=$work/command-$n.log
  say "README command $n: bash $script (log: target/newcomer/command-$n.log)"
  start=$(date +%s)
  rc=0
  in_root bash "$script" >"$log" 2>&1 || rc=$?
  took=$(($(date +%s) - start))
  if [ "$rc" = 0 ]; then
    results+=("command $n (bash $script): passed in $took s")
  else
    status=1
    results+=("command $n (bash $script): FAILED (exit $rc) after $took s")
    tail -n 30 "$log" | sed 's/^/  | /'
  fi
  if [ "$n" = 2 ]; then
    # tests/run.sh's closing line: "tests: failed: WHAT, ..." (targets, and
    # tests/it's modules).
    failed=$(sed -n 's/^tests: failed: //p' "$log" | tail -n 1)
    results+=("  failing tests: ${failed:-none}")
    if [ "$rc" = 0 ] && [ -n "$failed" ]; then status=1; fi
  fi
  if [ "$n" = 1 ] && [ "$rc" != 0 ]; then
    break # command 2 needs the Nix that command 1 set up
  fi
done

echo
say "results (checkout ${commit:0:7}, $(date -u '+%Y-%m-%d %H:%M UTC')):"
printf '  %s\n' "${results[@]}"
if [ "$keep" = false ]; then
  remove_root && say "removed the root" || true
fi
exit "$status"
