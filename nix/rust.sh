# Builder of rust.nix. Input: $root.
mkdir -p "$out/bin"
for p in rustc cargo rustdoc; do
  [ -x "$root/usr/bin/$p" ] || { echo "cuwheel: $root/usr/bin/$p is missing: the lock's rust toolchain lacks the package that ships it" >&2; exit 1; }
  ln -s "$root/usr/bin/$p" "$out/bin/$p"
done
gcc=$root/usr/bin/gcc-14
[ -x "$gcc" ] || { echo "cuwheel: $gcc is missing: the lock's rust toolchain lacks gcc-14" >&2; exit 1; }
ld=$(root_loader "$root")
libdirs=$(root_libdirs "$root")
cat > "$out/bin/cc" <<EOS
#!$bb sh
# The linker rustc calls. The root is the sysroot (glibc's crt files, libc.a for crt-static) and -B
# finds its ld. A dynamic program (a build script, a proc macro) gets the root's loader and library
# directories, since the sandbox has neither /lib64 nor ld.so.cache; a static one gets nothing, so
# it refers to no store path.
case " \$* " in
  *" -static "*|*" -static-pie "*) exec $gcc --sysroot=$root -B$root/usr/bin/ "\$@" ;;
esac
exec $gcc --sysroot=$root -B$root/usr/bin/ -Wl,--dynamic-linker=$ld -Wl,-rpath,$libdirs "\$@"
EOS
chmod 0555 "$out/bin/cc"
