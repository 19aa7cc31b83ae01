# The cuwheel driver, built from Cargo.lock with the pinned Rust toolchain.
#
# In:  the seeds, then { rust (rust.nix's toolchain), src (the repository root) }.
# Out: $out/bin/cuwheel, linked statically against the root's glibc, so it runs on the host and in
#      any sandboxed build without a loader and refers to no store path. Attributes: `crates`
#      (Cargo.lock's registry packages as pinned `<name>-<version>.crate` paths, the hash being
#      Cargo.lock's checksum: `cuwheel fetch` adds them) and `vendor` (the crates unpacked as a
#      cargo directory source).
seeds: { rust, src }:
let
  lockFile = src + "/Cargo.lock";
  cargoLock = builtins.fromTOML (builtins.readFile lockFile);

  # Workspace members have no source; anything but a registry would need a network to fetch.
  fromRegistry = p:
    if !(p ? source) then false
    else if builtins.substring 0 9 p.source == "registry+" && p ? checksum then true
    else throw "Cargo.lock: ${p.name} ${p.version} comes from '${p.source}'; the driver's Nix build takes registry crates only (pinned by checksum): depend on a published version.";

  crates = map (p: {
    inherit (p) name version checksum;
    crate = import ./pinned.nix {
      name = "${p.name}-${p.version}.crate";
      sha256 = p.checksum;
      inherit (seeds) busybox;
    };
  }) (builtins.filter fromRegistry cargoLock.package);

  vendor = import ./busybox-derivation.nix seeds {
    name = "cuwheel-vendor";
    script = ./driver-vendor.sh;
    crateSpecs = builtins.concatStringsSep "\n"
      (map (c: "${c.crate} ${c.name}-${c.version} ${c.checksum}") crates);
  };

  # Only what cargo reads for a driver without the `init` feature (src/ embeds nix/driver.lock;
  # crates/ holds the workspace's other members):
  # editing the rest of nix/, docs, tests or `cuwheel init` (src/init/, src/cli/init.rs) leaves
  # the driver's inputs, and so every derivation built with it, unchanged.
  source = builtins.path {
    name = "cuwheel-source";
    path = src;
    filter = path: type:
      let
        rel = builtins.substring (builtins.stringLength (toString src) + 1) (-1) (toString path);
        initOnly = rel == "src/init" || builtins.substring 0 9 rel == "src/init/"
          || rel == "src/cli/init.rs";
      in (builtins.elem rel [ "Cargo.toml" "Cargo.lock" "src" "crates" "nix" "nix/driver.lock" ]
        || builtins.substring 0 4 rel == "src/" || builtins.substring 0 7 rel == "crates/")
        && !initOnly;
  };
in
import ./busybox-derivation.nix seeds {
  name = "cuwheel";
  script = ./driver.sh;
  inherit rust vendor source;
  rustRoot = rust.root;
} // { inherit crates vendor; }
