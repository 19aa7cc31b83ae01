#!/usr/bin/env bash
# The test tier under other Nix versions than the host's: for each SUITE
# given (trixie: Debian 13's nix-bin, Nix 2.26; sid: Debian unstable's
# nix-bin, the newest), a Debian root made with debootstrap, its own Nix
# store and its own build users, entered with `unshare --mount --fork` and
# `pivot_root` (not chroot: inside a chroot the kernel refuses the user
# namespaces Nix's sandbox creates). In it, as root (single-user) and as
# two users it creates going through a nix-daemon it starts (one in
# `trusted-users`, one not): the demo cell, a second Python reusing the
# kernel objects, `cuwheel reproduce`, `cuwheel cache export` of one cell's
# closure, `cuwheel fetch --substituter … --offline` into an empty store and
# a byte-identical wheel, and `publish`. Then the daemon with its sandbox
# off (a build must be refused, the fix named) and an untrusted user asking
# for a cache (the nix.conf lines printed). The wheel's sha256 must be the
# same in every root and mode: the script fails otherwise.
#
# `--quick` is the tier CI runs (tests/it/nix_versions_nix.rs): the newest Nix
# only (SUITE sid unless named), as root and as the untrusted user, with what
# the host's Nix already built instead of the registries: the host builds
# the demo's two cells and exports their inputs (toolchains, kernel
# objects, driver) to a binary cache; root fills the root's empty store from
# it offline (`cuwheel fetch --substituter`, the pinned files and crates
# from the host's download and cargo caches, hardlinked), builds the first cell and
# `reproduce`s it; the untrusted user builds the second Python through the
# daemon, whose nix.conf names that cache. Both wheels must be the host's,
# byte for byte. That root, without its store, is kept between runs under
# ${XDG_CACHE_HOME:-~/.cache}/cuwheel/nix-roots (made again when missing);
# its store is emptied at every start.
#
# Usage: sudo bash scripts/nix-versions.sh [--quick] [--work DIR] [--only STEP] [--modes "M…"] SUITE...
#   --work DIR   where the roots live (default target/nix-versions); a root
#                and its store are kept between runs and reused when whole
#                (a `.ready` marker), never assumed to exist.
#   --only STEP  `root` (make the roots only), `probe` (record the outputs
#                of the Nix commands cuwheel reads, as unit-test fixtures,
#                into crates/cuwheel-nix/tests/fixtures/nix-VERSION), or
#                `all` (the default).
#   --modes "M…" which of root, trusted, untrusted (default: all three; the
#                sandbox-off case runs after untrusted).
# Results: a table on stdout and under WORK/results.tsv. Every mode builds
# one commit: HEAD with the working tree's changes to tracked files (what
# the cuwheel binary the roots run is built from), as it was at the start.
#
# How artifacts get into a root: `cuwheel fetch` inside it (the registries
# are reached the way the host reaches them: its apt configuration, CA
# certificates and pip configuration are copied in); with --quick, from the
# host's caches and exported binary cache, as above.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

work=target/nix-versions
only=all
modes="root trusted untrusted"
quick=false
suites=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=true; work=target/nix-versions-quick; modes="root untrusted"; shift ;;
    --work) work=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) suites+=("$1"); shift ;;
  esac
done
[ ${#suites[@]} -gt 0 ] || suites=(sid)
# The demo's cells every mode builds: the first, then a second Python of
# the same toolkit and torch (whose kernel objects are the first's).
cells="cu130-py313-torch211 cu130-py311-torch211"
# HEAD with the tracked files' changes, as a commit no branch points at (the
# same as HEAD when nothing changed).
commit=$(git -c user.name=nix-versions -c user.email=nix-versions@localhost stash create)
commit=${commit:-$(git rev-parse HEAD)}
[ "$(id -u)" = 0 ] || { echo "nix-versions: run as root (debootstrap, unshare, pivot_root)" >&2; exit 1; }
mkdir -p "$work"
work=$(cd "$work" && pwd)
say() { echo "nix-versions: $*" >&2; }

# The mirror the host's apt uses.
mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || { echo "nix-versions: cannot tell the host's Debian mirror from /etc/apt" >&2; exit 1; }

# Build users per suite, at uids the host's Nix (30001+) does not use: Nix
# kills every process of a build user's uid before and after a build, so two
# stores sharing uids break each other's builds.
uid_base() { case $1 in trixie) echo 41000 ;; sid) echo 42000 ;; *) echo 43000 ;; esac; }

# Runs "$@" inside ROOT: a private mount namespace, the root bind-mounted on
# itself, /proc, /dev and /sys, then pivot_root into it.
in_root() {
  local root=$1; shift
  unshare --mount --fork /bin/sh -euc '
    root=$1; shift
    mount --make-rprivate /
    mount --bind "$root" "$root"
    cd "$root"
    mount -t proc proc proc
    mount --rbind /dev dev
    mount --rbind /sys sys
    mkdir -p oldroot
    pivot_root . oldroot
    umount -l /oldroot
    cd /
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
  ' sh "$root" "$@"
}

# Where a suite's root lives: under WORK, or (--quick) in the cache
# directory, where it outlives the checkout.
root_of() {
  if [ "$quick" = true ]; then echo "${XDG_CACHE_HOME:-$HOME/.cache}/cuwheel/nix-roots/$1"; else echo "$work/$1"; fi
}

make_root() {
  local suite=$1 root; root=$(root_of "$1")
  # The quick tier reaches no registry from the root: neither pip nor cargo.
  local include=ca-certificates,git,procps,passwd extra=
  [ "$quick" = true ] || { include=$include,python3,python3-venv,xz-utils,zstd; extra=cargo; }
  if [ -e "$root/.ready" ]; then say "$suite: reusing the root at $root"; return; fi
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  say "$suite: debootstrap trixie into $root (minutes)"
  debootstrap --variant=minbase --include=$include \
    trixie "$root" "$mirror" > "$work/$suite-debootstrap.log" 2>&1 ||
    { tail -20 "$work/$suite-debootstrap.log" >&2; exit 1; }
  # How this machine reaches the registries: apt's and pip's configuration.
  cp /etc/apt/apt.conf.d/99* "$root/etc/apt/apt.conf.d/" 2>/dev/null || true
  [ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  echo "deb $mirror trixie main" > "$root/etc/apt/sources.list"
  if [ "$suite" = sid ]; then
    echo "deb $mirror sid main" >> "$root/etc/apt/sources.list"
  fi
  local target=()
  [ "$suite" = sid ] && target=(-t sid)
  say "$suite: installing nix-bin"
  in_root "$root" /bin/sh -ec "
    apt-get -o Acquire::Check-Valid-Until=false update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false install -y -qq \
      --no-install-recommends ${target[*]} nix-bin $extra
  " > "$work/$suite-apt.log" 2>&1 || { tail -20 "$work/$suite-apt.log" >&2; exit 1; }
  local base; base=$(uid_base "$suite")
  in_root "$root" /bin/sh -ec "
    getent group nixbld >/dev/null || groupadd -g $base nixbld
    for i in \$(seq 1 8); do
      id nixbld\$i >/dev/null 2>&1 || useradd -u \$(($base + i)) -g nixbld -G nixbld -M -N \
        -d /var/empty -s /usr/sbin/nologin nixbld\$i
    done
    id alice >/dev/null 2>&1 || useradd -m -s /bin/bash alice
    id bob >/dev/null 2>&1 || useradd -m -s /bin/bash bob
    mkdir -p /etc/nix
    cat > /etc/nix/nix.conf <<EOF
build-users-group = nixbld
sandbox = true
experimental-features = nix-command flakes
substituters =
trusted-users = root alice
EOF
  " >> "$work/$suite-apt.log" 2>&1
  cp "$root/etc/nix/nix.conf" "$root/etc/nix/nix.conf.base"
  touch "$root/.ready"
  say "$suite: root ready: $(in_root "$root" nix --version)"
}

# The quick tier starts every run from an empty store and empty homes: only
# the Debian system and its Nix are kept.
empty_root() {
  local root; root=$(root_of "$1")
  rm -rf "${root:?}/nix" "$root/root" "$root/var/cache/cuwheel-seed"
  mkdir -p "$root/root"
  local user
  for user in alice bob; do rm -rf "$root/home/$user"; mkdir -p "$root/home/$user"; done
  in_root "$root" /bin/sh -ec 'for user in alice bob; do chown "$user": "/home/$user"; done; chmod 700 /root'
  cp "$root/etc/nix/nix.conf.base" "$root/etc/nix/nix.conf"
}

for suite in "${suites[@]}"; do
  make_root "$suite"
  [ "$quick" = true ] && empty_root "$suite"
done
[ "$only" = root ] && exit 0

# The cuwheel binary the roots run: built here (Debian 12's glibc; it runs in
# the newer roots).
# CUWHEEL=PATH uses that binary instead.
cuwheel_bin=${CUWHEEL:-$repo/target/debug/cuwheel}
if [ "$only" != probe ] && [ -z "${CUWHEEL:-}" ]; then
  cargo build --locked --quiet --bin cuwheel
fi
results=$work/results.tsv
: > "$results"

# The commit under test into DIR of a root: every mode and version builds
# the same sources, whatever changes in the working tree meanwhile.
# A clone, as a user has: the flake then sees the tracked files only (a
# plain directory would be copied whole into the store, target/ included).
# The commit may be one no branch points at: a ref of this run's own names
# it while the clone fetches it.
copy_checkout() {
  local root=$1 dir=$2 owner=$3 ref=refs/cuwheel-nix-versions/$$
  rm -rf "${root:?}$dir"; mkdir -p "$(dirname "$root$dir")"
  git update-ref "$ref" "$commit"
  git clone -q --no-hardlinks --no-checkout "$repo" "$root$dir"
  git -C "$root$dir" fetch -q "$repo" "$ref"
  git update-ref -d "$ref"
  git -C "$root$dir" checkout -q --detach FETCH_HEAD
  in_root "$root" chown -R "$owner" "$dir"
}

# The quick tier's seed, made once from the host's Nix: both cells built
# here (their wheels' sha256s are what every root must build), their inputs
# exported to a binary cache with a key of this run's.
seed=$work/seed
seed_host() {
  local project=examples/demo-ext host_nix start=$SECONDS
  rm -rf "$seed"; mkdir -p "$seed"
  host_nix=$(nix --version | awk '{ print $NF }')
  say "host: Nix $host_nix builds the demo's two cells and exports their inputs (log: $work/seed.log)"
  {
    for cell in $cells; do
      nix --extra-experimental-features 'nix-command flakes' build -L "$repo#wheels.$cell" -o "$seed/result-$cell"
      printf '%s %s %s\n' "$cell" "$(sha256sum "$seed/result-$cell"/*.whl | cut -d' ' -f1)" "$(basename "$seed/result-$cell"/*.whl)" >> "$seed/sha256s"
    done
    "$cuwheel_bin" cache key host-1 --out "$seed/keys"
    # shellcheck disable=SC2046 # one --cell per cell
    "$cuwheel_bin" cache export "$seed/cache" --key "$seed/keys/host-1.sec" --project "$project" \
      $(printf -- '--cell %s ' $cells)
  } > "$work/seed.log" 2>&1 || { tail -20 "$work/seed.log" >&2; echo "nix-versions: the host could not build or export the seed (log: $work/seed.log)" >&2; exit 1; }
  say "host: seeded in $((SECONDS - start)) s"
  local cell sha name
  while read -r cell sha name; do
    printf '%s\thost\twheel-sha256\tok\t%s %s\n' "$host_nix" "$sha" "$name" | tee -a "$results" >&2
  done < "$seed/sha256s"
}

# The seed hardlinked into a root, with the host's download cache and
# cargo's registry cache (cuwheel's own crates); the daemon's nix.conf names
# the seed's cache, as an administrator's would.
plant_seed() {
  local root; root=$(root_of "$1")
  mkdir -p "$root/var/cache/cuwheel-seed" "$root/root/.cache/cuwheel"
  cp -al "$seed/cache" "$seed/keys" "$seed/sha256s" "$root/var/cache/cuwheel-seed/"
  local files=${XDG_CACHE_HOME:-$HOME/.cache}/cuwheel/files
  [ -d "$files" ] || { echo "nix-versions: the host's download cache $files is missing: run README command 1 (bash scripts/demo.sh) first" >&2; exit 1; }
  cp -al "$files" "$root/root/.cache/cuwheel/files"
  # cuwheel's own crates, which fetch wants whatever it is asked for, from
  # cargo's registry cache, where cargo's build of the CLI left them.
  local crates=${CARGO_HOME:-$HOME/.cargo}/registry/cache
  [ -d "$crates" ] || { echo "nix-versions: cargo's registry cache $crates is missing: build cuwheel with cargo first" >&2; exit 1; }
  mkdir -p "$root/root/.cargo/registry"
  cp -al "$crates" "$root/root/.cargo/registry/cache"
  printf 'substituters = file:///var/cache/cuwheel-seed/cache\ntrusted-public-keys = %s\n' \
    "$(cat "$seed/keys/host-1.pub")" >> "$root/etc/nix/nix.conf"
}

# Environment for the tier inside a root: pip's settings that reach the
# registry (the CA bundle is copied in; a host directory of wheels is not).
pip_env=()
for var in PIP_DEFAULT_TIMEOUT PIP_DISABLE_PIP_VERSION_CHECK PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST; do
  [ -n "${!var:-}" ] && pip_env+=("$var=${!var}")
done
pip_env+=(PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
if [ -d "${HOME:-/nonexistent}/.config/pip" ]; then have_user_pip=1; else have_user_pip=0; fi

run_mode() { # run_mode SUITE MODE: the tier's commands, results into $results
  local suite=$1 mode=$2 root user home version root_seed=
  root=$(root_of "$suite")
  [ "$quick" = true ] && root_seed=/var/cache/cuwheel-seed
  case $mode in root) user=root ;; trusted) user=alice ;; *) user=bob ;; esac
  if [ "$user" = root ]; then home=/root; else home="/home/$user"; fi
  copy_checkout "$root" "$home/cuwheel" "$user"
  [ "$have_user_pip" = 1 ] && mkdir -p "$root$home/.config" && cp -r "$HOME/.config/pip" "$root$home/.config/pip"
  install -m 755 "$cuwheel_bin" "$root/usr/local/bin/cuwheel"
  version=$(in_root "$root" nix --version | awk '{ print $NF }')
  say "$suite: Nix $version, mode $mode (log: $work/$suite-$mode.log)"
  local start=$SECONDS
  local tier=(env "${pip_env[@]}" bash "$home/cuwheel/scripts/nix-versions-in-root.sh" "$mode" "$home/cuwheel" /usr/local/bin/cuwheel $cells $root_seed)
  if [ "$mode" = root ]; then
    in_root "$root" "${tier[@]}"
  else
    in_root "$root" /bin/sh -c '
      mkdir -p /nix/var/nix/daemon-socket
      nix-daemon > /var/log/nix-daemon.log 2>&1 &
      daemon=$!
      sleep 2
      user=$1; shift
      su "$user" -c "NIX_REMOTE=daemon USER=$user $*"
      kill $daemon' sh "$user" "${tier[*]}"
  fi > "$work/$suite-$mode.log" 2>&1 || true
  grep '^RESULT' "$work/$suite-$mode.log" | sed "s/^RESULT/$version\t$mode/" | tee -a "$results" >&2
  printf '%s\t%s\telapsed\tok\t%ss\n' "$version" "$mode" "$((SECONDS - start))" | tee -a "$results" >&2
}

# The daemon with its sandbox off: a build must be refused, the fix named.
sandbox_off() {
  local suite=$1 root version
  root=$(root_of "$suite")
  version=$(in_root "$root" nix --version | awk '{ print $NF }')
  in_root "$root" /bin/sh -c '
    cp /etc/nix/nix.conf /etc/nix/nix.conf.on
    sed -i "s/^sandbox = true/sandbox = false/" /etc/nix/nix.conf
    nix-daemon > /var/log/nix-daemon-off.log 2>&1 &
    daemon=$!
    sleep 2
    su bob -c "cd ~bob/cuwheel && NIX_REMOTE=daemon USER=bob /usr/local/bin/cuwheel reproduce --project examples/demo-ext target/result/*.whl"
    status=$?
    kill $daemon
    mv /etc/nix/nix.conf.on /etc/nix/nix.conf
    exit $status' > "$work/$suite-sandbox-off.log" 2>&1 && {
    printf '%s\tsandbox-off\tbuild-refused\tFAIL\tit built\n' "$version" | tee -a "$results" >&2; return; }
  if grep -q 'sandbox = true' "$work/$suite-sandbox-off.log"; then
    printf '%s\tsandbox-off\tbuild-refused\tok\tthe fix named\n' "$version" | tee -a "$results" >&2
  else
    printf '%s\tsandbox-off\tbuild-refused\tFAIL\t%s\n' "$version" "$(tail -c 300 "$work/$suite-sandbox-off.log" | tr '\n\t' '  ')" | tee -a "$results" >&2
  fi
}

[ "$quick" = true ] && [ "$only" != probe ] && seed_host
for suite in "${suites[@]}"; do
  root=$(root_of "$suite")
  if [ "$only" = probe ] || { [ "$only" = all ] && [ "$quick" = false ]; }; then
    install -m 755 scripts/nix-probe.sh "$root/tmp/nix-probe.sh"
    rm -rf "$root/tmp/fixtures"
    in_root "$root" bash /tmp/nix-probe.sh /tmp/fixtures >&2
    cp -r "$root"/tmp/fixtures/nix-* crates/cuwheel-nix/tests/fixtures/
  fi
  [ "$only" = probe ] && continue
  [ "$quick" = true ] && plant_seed "$suite"
  for mode in $modes; do run_mode "$suite" "$mode"; done
  case " $modes " in *" untrusted "*) sandbox_off "$suite" ;; esac
done
[ "$only" = probe ] && exit 0

# Each wheel's sha256 must be one across every version and mode.
echo
if command -v column >/dev/null; then column -t -s $'\t' "$results"; else cat "$results"; fi
shas=$(awk -F'\t' '$3 == "wheel-sha256" { split($5, a, " "); print a[2], a[1] }' "$results" | sort -u)
fails=$(awk -F'\t' '$4 == "FAIL"' "$results" | wc -l)
differ=$(printf '%s\n' "$shas" | awk '{ n[$1]++ } END { for (w in n) if (n[w] > 1) print w }')
if [ -z "$shas" ] || [ -n "$differ" ]; then
  echo "nix-versions: FAIL at commit $commit: a wheel differs across Nix versions or modes (or none was built): $differ" >&2
  exit 1
fi
[ "$fails" = 0 ] || { echo "nix-versions: FAIL: $fails steps failed (above)" >&2; exit 1; }
# The quick tier's store is only ever used once: its disk goes back to the
# tests that follow (a failed run keeps it, to be looked into).
if [ "$quick" = true ]; then
  for suite in "${suites[@]}"; do empty_root "$suite"; done
  rm -rf "$seed"
fi
echo "nix-versions: every step passed at commit $commit; each wheel's sha256 is one in every version and mode:"
printf '%s\n' "$shas" | sed 's/^/  /'
