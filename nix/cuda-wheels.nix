# Toolchain kind `cuda-wheels`: a CUDA toolkit merged from PyPI's nvidia-* wheels.
#
# In:  toolchains.nix's context { seeds, artifact, toolchainNamed, ... }, then { name, toolchain }.
#      The entry's `runtime` names the gcc toolchain whose glibc the CUDA programs run on.
# Out: a CUDA_HOME-like tree: bin/ (nvcc = namespace wrapper, see nvcc-wrapper.sh; ptxas,
#      fatbinary, nvlink, cudafe++, bin2c, crt/), nvvm/{bin/cicc,libdevice}, include/ (CCCL in
#      include/cccl, found through nvcc.profile), lib/ with libcudart.so, lib64 -> lib.
#      The compiler, runtime, NVVM and CCCL wheels are taken whole; every other wheel (cuBLAS,
#      cuSPARSE, cuSOLVER: what ATen's CUDA headers include) contributes its include/ only.
{ seeds, artifact, toolchainNamed, ... }: { name, toolchain }:
import ./busybox-derivation.nix seeds {
  inherit name;
  runtime = (toolchainNamed toolchain.runtime).root
    or (throw "cuwheel.lock: the runtime of '${name}' is '${toolchain.runtime}', which is not a gcc toolchain (only those carry a glibc root)");
  script = ./cuda-wheels.sh;
  wheels = map artifact toolchain.artifacts;
  nvccWrapper = ./nvcc-wrapper.sh;
}
