#!@busybox@ sh
# nvcc of this CUDA tree, run in its own user, mount and PID namespaces (unprivileged; no nix.conf
# change needed):
# - nvcc runs its sub-steps through system(), i.e. /bin/sh, which the Nix sandbox lacks: a chroot
#   that binds every top-level directory of / and adds bin/sh (busybox) provides it;
# - nvcc names its temporary files tmpxft_<pid>_..., and the name reaches the object: as PID 1 of
#   a fresh PID namespace it is always tmpxft_00000001, and each call has a private temporary
#   directory, so parallel calls never collide.
# - CUWHEEL_NVCC_PATHS="TARGET=SOURCE ..." binds each directory SOURCE at TARGET (a path under a
#   new top-level directory) in that root; a working directory, or nvcc itself, under a SOURCE is
#   reached through its TARGET. Device line info (-lineinfo) records absolute paths that no prefix
#   map rewrites: the plan has nvcc see every input at a fixed path instead (src/plan/lineinfo.rs).
# Set CUWHEEL_NVCC_DIRECT=1 to run nvcc as is (for hosts without unprivileged user namespaces).
bb=@busybox@
real=@real@
if [ -n "${CUWHEEL_NVCC_DIRECT:-}" ]; then
  if [ -n "${CUWHEEL_NVCC_PATHS:-}" ]; then
    echo "cuwheel: this compile asks for device line info, whose paths nvcc sees at fixed places only in its own namespaces; CUWHEEL_NVCC_DIRECT=1 turns those off. Unset it (on a host that allows unprivileged user namespaces), or drop -lineinfo from nvcc-flags." >&2
    exit 1
  fi
  exec "$real" "$@"
fi
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
cwd=$PWD
run=$real
for m in ${CUWHEEL_NVCC_PATHS:-}; do
  t=${m%%=*} s=${m#*=}
  $bb mkdir -p "$r$t"
  $bb mount -o rbind "$s" "$r$t"
  case "$cwd/" in "$s"/*) cwd="$t${cwd#"$s"}" ;; esac
  case "$run" in "$s"/*) run="$t${run#"$s"}" ;; esac
done
$bb mkdir "$r/.cuwheel-nvcc-tmp"
if [ ! -e "$r/bin/sh" ]; then $bb mkdir -p "$r/bin"; $bb ln -s "$bb" "$r/bin/sh"; fi
export TMPDIR=/.cuwheel-nvcc-tmp
exec $bb chroot "$r" $bb sh -c 'cd "$1" && shift && exec "$@"' sh "$cwd" "$run" "$@"
