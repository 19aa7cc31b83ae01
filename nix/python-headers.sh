# Builder of python-headers.nix. Inputs: $pythonVersion, and $debs, or $archive, $include and
# $pyconfig.
u="$TMPDIR/root"
p="python$pythonVersion"
mkdir -p "$u" "$out/include"
if [ -n "${archive:-}" ]; then
  # busybox's tar reads plain tar; gzip and xz are piped (zstd is refused when locking).
  case "$archive" in
    *.tar) tar -x -C "$u" -f "$archive" ;;
    *.tar.gz|*.tgz) gunzip -c "$archive" | tar -x -C "$u" ;;
    *.tar.xz|*.txz) unxz -c "$archive" | tar -x -C "$u" ;;
    *) echo "cuwheel: $archive: not a .tar, .tar.gz or .tar.xz archive" >&2; exit 1 ;;
  esac
  [ -f "$u/$include/Python.h" ] || { echo "cuwheel: $archive has no $include/Python.h (the lock says it does: re-run \`cuwheel lock\`)" >&2; exit 1; }
  cp -a "$u/$include" "$out/include/$p"
  rm -f "$out/include/$p/pyconfig.h"
  cp "$u/$pyconfig" "$out/include/$p/pyconfig.h"
else
  for deb in $debs; do unpack_deb "$deb" "$u" './usr/include'; done
  [ -f "$u/usr/include/$p/Python.h" ] || { echo "cuwheel: no usr/include/$p/Python.h in $debs: the lock's python-headers toolchain must list libpython$pythonVersion-dev" >&2; exit 1; }
  cp -a "$u/usr/include/$p" "$out/include/$p"
  # The multiarch pyconfig.h of the package's architecture (amd64's, or arm64's for an aarch64
  # cell): each libpython-dev .deb holds one.
  for t in x86_64-linux-gnu aarch64-linux-gnu; do
    if [ -f "$u/usr/include/$t/$p/pyconfig.h" ]; then
      rm "$out/include/$p/pyconfig.h"
      cp "$u/usr/include/$t/$p/pyconfig.h" "$out/include/$p/pyconfig.h"
    fi
  done
fi
