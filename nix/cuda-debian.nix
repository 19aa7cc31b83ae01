# Toolchain kind `cuda-debian`: a CUDA toolkit from Debian's non-free nvidia-cuda-toolkit closure,
# relocated into the same CUDA_HOME-like layout as cuda-wheels.nix.
#
# In:  toolchains.nix's context { seeds, artifact, lock, ... }, then { name, toolchain }.
#      The toolchain's .debs are unpacked into one root (CUDA packages only in part, see
#      `members`; the libc closure whole), whose glibc the programs run on.
# Out: bin/ (nvcc = namespace wrapper; ptxas, fatbinary, nvlink, cudafe++, bin2c, crt/ ...),
#      bin/nvcc.profile written for this layout (Debian's points into /usr), nvvm/{bin/cicc,
#      libdevice}, include/, lib/ (libcudart.so, static runtimes, stubs), lib64 -> lib.
#      Attribute `root`: the Debian root.
{ seeds, artifact, lock, ... }: { name, toolchain }:
let
  # What the tree needs from each CUDA package; nvidia-cuda-dev is 934 MB, mostly static
  # libraries of the math libraries, of which only the headers are wanted.
  members = {
    nvidia-cuda-toolkit = [ "./usr/bin" "./usr/lib/nvidia-cuda-toolkit/bin" "./usr/lib/nvidia-cuda-toolkit/libdevice" "./usr/include" ];
    nvidia-cuda-dev = [
      "./usr/include"
      "./usr/lib/x86_64-linux-gnu/libcudart.so"
      "./usr/lib/x86_64-linux-gnu/libcudart_static.a"
      "./usr/lib/x86_64-linux-gnu/libcudadevrt.a"
      "./usr/lib/x86_64-linux-gnu/stubs"
    ];
    "libcu++-dev" = [ "./usr/include" ];
    libcub-dev = [ "./usr/include" ];
    libthrust-dev = [ "./usr/include" ];
  };
  # The runtime and NVVM libraries, whatever their soname suffix (libcudart12, libcudart11.0,
  # libnvvm4): their usr/lib.
  libraries = p: builtins.match "libcudart[0-9.]+|libnvvm[0-9]+" p != null;
  memberOf = p: if libraries p then [ "./usr/lib" ] else members.${p} or null;
  package = n: lock.artifacts.${n}.package or n;
  root = import ./debian-root.nix seeds {
    name = "${name}-root";
    debs = map artifact toolchain.artifacts;
    members = builtins.listToAttrs (builtins.concatMap
      (n: let m = memberOf (package n); in if m != null then [{ name = n; value = m; }] else [ ])
      toolchain.artifacts);
  };
in
import ./busybox-derivation.nix seeds {
  inherit name root;
  script = ./cuda-debian.sh;
  nvccWrapper = ./nvcc-wrapper.sh;
} // { inherit root; }
