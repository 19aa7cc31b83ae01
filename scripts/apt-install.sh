# Sourced by scripts/demo.sh and tests/run.sh (README commands 1 and 2).
# apt_install SAYING PACKAGE...: when any PACKAGE is given, prints SAYING
# with their names and installs them with apt-get (as root, else through
# sudo), without recommends; does nothing otherwise.
apt_install() {
  local saying=$1
  shift
  [ $# -gt 0 ] || return 0
  echo "$saying: $* (apt-get; needs root)"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
