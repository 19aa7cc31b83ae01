# Toolchain kind `gcc`: GCC, binutils and the glibc sysroot of one Debian suite; with `target`
# (`aarch64`), the suite's cross compiler for that architecture.
#
# In:  the seeds, the artifact lookup, then { name, toolchain } (a `toolchains` entry of the lock:
#      `gcc` is the major version, `artifacts` the .deb closure, `target` absent or the cross
#      target).
# Out: $out/bin/{gcc,g++,cpp,cc,c++} wrappers that compile and link against the root as sysroot
#      (--sysroot, -B for as/ld, -ffile-prefix-map so the root's store path stays out of objects),
#      $out/bin/<binutils program>, $out/sysroot -> the root. A cross toolchain's wrappers run
#      <triplet>-gcc-N and its binutils <triplet>-as..., and $out/target -> the root's
#      usr/<triplet>, the target's libraries. Attribute `root`: the Debian root.
seeds: artifact: { name, toolchain }:
import ./debian-toolchain.nix seeds artifact {
  inherit name toolchain;
  script = ./gcc.sh;
  env = {
    gccVersion = toolchain.gcc;
    triplet = if toolchain ? target then "${toolchain.target}-linux-gnu" else "";
  };
}
