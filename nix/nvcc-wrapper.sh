#!@busybox@ sh
# nvcc of this CUDA tree, run in its own user, mount and PID namespaces (unprivileged; no nix.conf
# change needed):
# - nvcc runs its sub-steps through system(), i.e. /bin/sh, which the Nix sandbox lacks: a chroot
#   that binds every top-level directory of / and adds bin/sh (busybox) provides it;
# - nvcc names its temporary files tmpxft_<pid>_..., and the name reaches the object: as PID 1 of
#   a fresh PID namespace it is always tmpxft_00000001, and each call has a private temporary
#   directory, so parallel calls never collide.
# Set CUWHEEL_NVCC_DIRECT=1 to run nvcc as is (for hosts without unprivileged user namespaces).
bb=@busybox@
real=@real@
if [ -n "${CUWHEEL_NVCC_DIRECT:-}" ]; then exec "$real" "$@"; fi
if [ "${CUWHEEL_NVCC_NS:-}" != "$$" ] || [ "$$" != 1 ]; then
  if ! $bb unshare -U -r -m -p -f $bb true 2>/dev/null; then
    echo "cuwheel: nvcc runs in its own user, mount and PID namespaces, and this host refuses unprivileged user namespaces (see /proc/sys/user/max_user_namespaces, kernel.unprivileged_userns_clone, AppArmor's restrict_unprivileged_userns). Allow them, or set CUWHEEL_NVCC_DIRECT=1 and give the Nix sandbox a /bin/sh (nix.conf: extra-sandbox-paths = /bin/sh=<busybox>)." >&2
    exit 1
  fi
  export CUWHEEL_NVCC_NS=1
  exec $bb unshare -U -r -m -p -f $bb sh "$0" "$@"
fi
unset CUWHEEL_NVCC_NS
r="${TMPDIR:-/tmp}/.cuwheel-nvcc-root"
$bb mkdir -p "$r"
$bb mount -t tmpfs cuwheel-nvcc "$r"
for e in /*; do
  [ -d "$e" ] || continue
  $bb mkdir "$r$e"
  $bb mount -o rbind "$e" "$r$e"
done
$bb mkdir "$r/.cuwheel-nvcc-tmp"
if [ ! -e "$r/bin/sh" ]; then $bb mkdir -p "$r/bin"; $bb ln -s "$bb" "$r/bin/sh"; fi
export TMPDIR=/.cuwheel-nvcc-tmp
exec $bb chroot "$r" $bb sh -c 'cd "$1" && shift && exec "$@"' sh "$PWD" "$real" "$@"
