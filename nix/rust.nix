# Toolchain kind `rust`: rustc, cargo and the C linker of one Debian suite, to build cuwheel itself.
#
# In:  the seeds, the artifact lookup, then { name, toolchain } (a `toolchains` entry of the lock:
#      `artifacts` is the .deb closure of rustc, cargo, gcc-14, binutils and libc6-dev).
# Out: $out/bin/{rustc,cargo,rustdoc} (the root's programs; rustc finds its std under the root's
#      usr/lib/rustlib) and $out/bin/cc, the linker rustc calls: gcc with the root as sysroot.
#      Attribute `root`: the Debian root.
seeds: artifact: { name, toolchain }:
import ./debian-toolchain.nix seeds artifact {
  inherit name toolchain;
  script = ./rust.sh;
}
