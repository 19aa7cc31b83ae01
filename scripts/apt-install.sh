# Sourced by scripts/demo.sh and tests/run.sh (README commands 1 and 2).
# apt_install SAYING PACKAGE...: when any PACKAGE is given, prints SAYING
# with their names and installs them with apt-get (as root, else through
# sudo), without recommends; does nothing otherwise.
apt_install() {
  local saying=$1
  shift
  [ $# -gt 0 ] || return 0
  echo "$saying: $* (apt-get; needs root)"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "$@" >/dev/null
}

# apt_get ARGS...: apt-get ARGS, as root (else through sudo), one at a time:
# CI runs README command 1 and its newcomer replay (scripts/newcomer.sh, which
# may install debootstrap) side by side, and a second apt-get would fail on
# apt's lock instead of waiting for it.
apt_get() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo flock -w 900 /tmp/cuwheel-apt.lock env DEBIAN_FRONTEND=noninteractive apt-get "$@"
}
