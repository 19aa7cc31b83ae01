# Builder of debian-root.nix. Inputs: $debSpecs (lines "DEB [MEMBER...]").
mkdir -p "$out"
set -f
echo "$debSpecs" | while read -r deb pats; do
  # shellcheck disable=SC2086 # the members are separate words; globbing is off
  unpack_deb "$deb" "$out" $pats
done
set +f
repoint_symlinks "$out"
for d in bin sbin lib lib64; do
  if [ ! -e "$out/$d" ] && [ ! -L "$out/$d" ] && [ -d "$out/usr/$d" ]; then ln -s "usr/$d" "$out/$d"; fi
done
if [ -e "$out/lib64/ld-linux-x86-64.so.2" ]; then patch_elf "$out" "$out"; fi
