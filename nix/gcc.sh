# Builder of gcc.nix. Inputs: $root, $gccVersion.
mkdir -p "$out/bin"
ln -s "$root" "$out/sysroot"
for p in gcc g++ cpp; do
  real="$root/usr/bin/$p-$gccVersion"
  [ -x "$real" ] || { echo "cuwheel: $real is missing: the lock's gcc toolchain lacks the $p-$gccVersion package" >&2; exit 1; }
  cat > "$out/bin/$p" <<EOS
#!$bb sh
# $p $gccVersion of the pinned Debian root. The root is the sysroot; -B finds its as and ld (Debian
# ships no usr/x86_64-linux-gnu/bin); the root's store path is mapped out of __FILE__ and debug info.
exec $real --sysroot=$root -B$root/usr/bin/ -ffile-prefix-map=$root/=/ "\$@"
EOS
  chmod 0555 "$out/bin/$p"
done
ln -s gcc "$out/bin/cc"
ln -s g++ "$out/bin/c++"
for t in addr2line ar as c++filt elfedit ld ld.bfd nm objcopy objdump ranlib readelf size strings strip; do
  if [ -e "$root/usr/bin/$t" ]; then ln -s "$root/usr/bin/$t" "$out/bin/$t"; fi
done
