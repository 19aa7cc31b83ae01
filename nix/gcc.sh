# Builder of gcc.nix. Inputs: $root, $gccVersion, $triplet (empty for the host's compiler).
mkdir -p "$out/bin"
ln -s "$root" "$out/sysroot"
if [ -n "$triplet" ]; then
  # A cross compiler: Debian's <triplet>-gcc-N finds the target's headers and libraries under the
  # sysroot's usr/<triplet> (its configured prefix), and its as and ld in usr/<triplet>/bin.
  prefix="$triplet-"
  tools="$root/usr/$triplet/bin/"
  [ -d "$root/usr/$triplet/lib" ] || { echo "cuwheel: $root/usr/$triplet/lib is missing: the lock's cross gcc toolchain lacks libc6-dev for $triplet" >&2; exit 1; }
  ln -s "$root/usr/$triplet" "$out/target"
else
  prefix=""
  tools="$root/usr/bin/"
fi
for p in gcc g++ cpp; do
  real="$root/usr/bin/$prefix$p-$gccVersion"
  [ -x "$real" ] || { echo "cuwheel: $real is missing: the lock's gcc toolchain lacks the $prefix$p-$gccVersion package" >&2; exit 1; }
  cat > "$out/bin/$p" <<EOS
#!$bb sh
# $prefix$p $gccVersion of the pinned Debian root. The root is the sysroot; -B finds its as and ld
# (Debian ships no usr/x86_64-linux-gnu/bin); the root's store path is mapped out of __FILE__ and
# debug info.
exec $real --sysroot=$root -B$tools -ffile-prefix-map=$root/=/ "\$@"
EOS
  chmod 0555 "$out/bin/$p"
done
ln -s gcc "$out/bin/cc"
ln -s g++ "$out/bin/c++"
for t in addr2line ar as c++filt elfedit ld ld.bfd nm objcopy objdump ranlib readelf size strings strip; do
  if [ -e "$root/usr/bin/$prefix$t" ]; then ln -s "$root/usr/bin/$prefix$t" "$out/bin/$t"; fi
done
