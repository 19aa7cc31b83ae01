# Builder of python-headers.nix. Inputs: $debs, $pythonVersion.
u="$TMPDIR/root"
for deb in $debs; do unpack_deb "$deb" "$u" './usr/include'; done
p="python$pythonVersion"
[ -f "$u/usr/include/$p/Python.h" ] || { echo "cuwheel: no usr/include/$p/Python.h in $debs: the lock's python-headers toolchain must list libpython$pythonVersion-dev" >&2; exit 1; }
mkdir -p "$out/include"
cp -a "$u/usr/include/$p" "$out/include/$p"
if [ -f "$u/usr/include/x86_64-linux-gnu/$p/pyconfig.h" ]; then
  rm "$out/include/$p/pyconfig.h"
  cp "$u/usr/include/x86_64-linux-gnu/$p/pyconfig.h" "$out/include/$p/pyconfig.h"
fi
