# Toolchain kind `torch`: the headers and link-time libraries of one torch release.
#
# In:  the seeds, the artifact lookup, then { name, toolchain } (one wheel in `artifacts`,
#      `headers-nar-sha256`).
# Out: include/ -> the headers, lib/ -> the libraries. Attributes `headers` and `libs`.
#   headers: every entry under torch/include/ of the wheel, files mode 0444, as a recursive
#     fixed-output path whose NAR hash is the lock's headers-nar-sha256, so it is the same store
#     path whichever cp wheel it came from (and is shared by every Python of the release);
#   libs: lib/ = torch/lib/*.so* of the wheel, as shipped (only linked against, never run here).
seeds: artifact: { name, toolchain }:
let
  wheel = artifact (builtins.head toolchain.artifacts);
  bbDrv = import ./busybox-derivation.nix seeds;
  headers = bbDrv {
    name = "torch-${toolchain.version}-headers";
    script = ./torch-headers.sh;
    inherit wheel;
    outputHashMode = "recursive";
    outputHashAlgo = "sha256";
    outputHash = toolchain."headers-nar-sha256";
  };
  libs = bbDrv {
    name = "torch-${toolchain.version}-libs";
    script = ./torch-libs.sh;
    inherit wheel;
  };
in
bbDrv {
  inherit name headers libs;
  script = builtins.toFile "torch-combine.sh" ''
    mkdir -p "$out"
    ln -s "$headers" "$out/include"
    ln -s "$libs/lib" "$out/lib"
  '';
} // { inherit headers libs; }
