#!/usr/bin/env bash
# Nix from nothing, the way cuwheel builds need it, on Debian or Ubuntu.
#
# 1. Installs Debian's nix-bin (Nix 2.8) if no `nix-store` is on PATH.
# 2. Creates the build users Nix's own multi-user installer creates — group
#    `nixbld` (gid 30000 where free) and users nixbld1..nixbld32 (uid 30001..,
#    no login, home /var/empty) — so every build runs as an unprivileged user
#    inside the sandbox. Debian's nix-bin is compiled with
#    `build-users-group = nixbld` but creates neither the group nor the users
#    (the nix-setup-systemd package would, with a daemon cuwheel does not
#    need), so without this step every build fails with "the group 'nixbld'
#    specified in 'build-users-group' does not exist".
# 3. Writes `$NIX_CONF_DIR/nix.conf` (default /etc/nix): sandbox on with no
#    fallback, no substituters, flakes, and every core busy (`max-jobs =
#    auto`; Nix's own default runs one derivation at a time). A nix.conf that
#    this script did not write is left alone, and what it lacks is printed.
#
# Needs root (apt-get, groupadd, useradd; run with sudo otherwise). Safe to
# run again: each step is skipped when done. Prints what it did.
#
# CUWHEEL_NIX_ID_BASE (default 30000) moves the group's gid and the users'
# uids (base+1..): a second Nix on one kernel — a Debian root entered with
# unshare, like scripts/newcomer.sh's — needs build uids the first does not
# use, since Nix kills every process of a build uid before a build.
set -euo pipefail

say() { echo "setup-nix: $*"; }
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { say "run me as root: I install packages and create users" >&2; exit 1; }
  sudo=sudo
fi

if ! command -v nix-store >/dev/null; then
  say "installing Debian's nix-bin"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends nix-bin >/dev/null
fi

# Build users, as Nix's installer makes them (scripts/install-multi-user.sh:
# NIX_BUILD_GROUP_ID=30000, NIX_FIRST_BUILD_UID=30001, 32 users). Nix runs at
# most one build per user at a time, so there are more than max-jobs needs.
group=nixbld
users=32
base=${CUWHEEL_NIX_ID_BASE:-30000}
if ! getent group "$group" >/dev/null; then
  gid=$base
  getent group "$gid" >/dev/null && gid=""
  say "creating group $group${gid:+ (gid $gid)}"
  $sudo groupadd ${gid:+--gid "$gid"} "$group"
fi
nologin=$(command -v nologin || echo /usr/sbin/nologin)
created=0
for i in $(seq 1 "$users"); do
  user="$group$i"
  if ! getent passwd "$user" >/dev/null; then
    uid=$((base + i))
    getent passwd "$uid" >/dev/null && uid=""
    $sudo useradd --no-create-home --home-dir /var/empty --shell "$nologin" \
      --gid "$group" --groups "$group" --comment "Nix build user $i" ${uid:+--uid "$uid"} "$user"
    created=$((created + 1))
  fi
done
[ "$created" = 0 ] || say "created $created build users ($group""1..$group$users)"

conf_dir=${NIX_CONF_DIR:-/etc/nix}
conf=$conf_dir/nix.conf
marker="# written by cuwheel's scripts/setup-nix.sh"
if [ ! -s "$conf" ] || head -n 1 "$conf" | grep -qxF "$marker"; then
  $sudo mkdir -p "$conf_dir"
  $sudo tee "$conf.tmp" >/dev/null <<CONF
$marker
# Every build in the sandbox, never silently without one (Debian ships
# sandbox = false with sandbox-fallback = true).
sandbox = true
sandbox-fallback = false
# Nothing substituted: every path is built here or added by cuwheel fetch.
substituters =
build-users-group = $group
# Independent derivations in parallel, one per core (Nix's default is 1).
max-jobs = auto
experimental-features = nix-command flakes
CONF
  $sudo mv "$conf.tmp" "$conf"
  say "wrote $conf"
else
  for want in "sandbox = true" "sandbox-fallback = false" "max-jobs" "experimental-features"; do
    grep -q "^\s*${want%% *}" "$conf" || say "note: $conf (not written by cuwheel) does not set ${want%% *}; cuwheel passes the settings it needs on every call, plain nix commands do not"
  done
fi

# (the demo's first build is the proof that a sandboxed build as a build user works)
nix-store --version
say "ready: build users in '$group', sandbox on, max-jobs auto ($conf)"
