# The check of one bundle's toolchains: its gcc and nvcc compile an ATen-using .cu (check/) with
# torch extension flags for sm_80 and sm_90 and link a shared object against torch and cudart,
# all in the sandbox; the result is verified with the gcc root's readelf.
#
# In:  the seeds, then { name, gcc, cuda, torch } (toolchain derivations).
# Out: $out/lib<...>.so and $out/report.txt (NEEDED entries, the exported symbol, fatbin entries).
seeds: { name, gcc, cuda, torch }:
import ./busybox-derivation.nix seeds {
  inherit name gcc cuda;
  torchHeaders = torch.headers;
  torchLibs = torch.libs;
  src = ./check/aten_scale.cu;
  script = ./check.sh;
}
