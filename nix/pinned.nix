# One pinned artifact of cuwheel.lock as a fixed-output derivation that Nix never builds.
#
# In:  name (the store name from the lock), sha256 (hex), recursive (true for the seed trees, whose
#      hash is a NAR hash), busybox (optional: a seed to print the message with).
# Out: the store path `nix-store --add-fixed sha256 [--recursive] <name>` yields; `cuwheel fetch`
#      adds the file there. If it is missing Nix runs the builder, which can only tell the user to
#      run `cuwheel fetch` (without busybox, the builder's path itself says so).
{ name, sha256, recursive ? false, busybox ? null }:
derivation ({
  inherit name;
  system = "x86_64-linux";
  outputHashMode = if recursive then "recursive" else "flat";
  outputHashAlgo = "sha256";
  outputHash = sha256;
  preferLocalBuild = true;
} // (if busybox == null then {
  builder = "/cuwheel-fetch-has-not-added-this-artifact/run-cuwheel-fetch";
} else {
  builder = "${busybox}/bin/busybox";
  args = [ "sh" "-c" ''
    echo "cuwheel: the locked artifact '${name}' (sha256 ${sha256}) is not in the Nix store." >&2
    echo "cuwheel: run 'cuwheel fetch' in the project directory (it fetches every artifact of cuwheel.lock" >&2
    echo "cuwheel: through pip / apt-get, checks its hash and adds it), then build again." >&2
    exit 1
  '' ];
}))
