# The check of one bundle's toolchains, all in the sandbox: its nvcc and gcc compile an ATen-using
# .cu (check/aten_scale.cu) with torch extension flags for sm_80 and sm_90 and link a shared
# object against torch and cudart; gcc compiles a pybind11 binding (check/binding.cpp, through
# torch/extension.h) against the first Python's headers and links it with the kernel into an
# extension module; every other Python's Python.h compiles. The gcc root's readelf verifies them.
#
# In:  the seeds, then { name, gcc, cuda, torch, pythons } (toolchain derivations) and
#      { gccMajor, cxxStandard } (the lock's: the gcc toolchain's GCC major, the C++ standard the
#      torch headers require).
# Out: libcuwheel_check.so, cuwheel_check.<python>.so and report.txt (NEEDED entries, exports,
#      fat binary entries, Pythons compiled against).
seeds: { name, gcc, cuda, torch, pythons, gccMajor, cxxStandard }:
import ./busybox-derivation.nix seeds {
  inherit name gcc cuda pythons gccMajor cxxStandard;
  torchHeaders = torch.headers;
  torchLibs = torch.libs;
  kernel = ./check/aten_scale.cu;
  binding = ./check/binding.cpp;
  script = ./check.sh;
}
