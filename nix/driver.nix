# cuwheel's two binaries, built from Cargo.lock with the pinned Rust toolchain.
#
# In:  the seeds, then { rust (rust.nix's toolchain), src (the repository root) }.
# Out: the driver, crates/cuwheel-build's $out/bin/cuwheel-build: what every derivation of a
#      project runs (its plan, wheel assembly, audit and load check). Attributes: `cli` (the
#      `cuwheel` command line, $out/bin/cuwheel, without `init`: the flake's `cuwheel` package
#      and app, and what `nix run .#publish` runs), `crates` (Cargo.lock's registry packages as
#      pinned `<name>-<version>.crate` paths, the hash being Cargo.lock's checksum: `cuwheel
#      fetch` adds them) and `vendor` (the crates unpacked as a cargo directory source).
#      Both binaries are linked statically against the root's glibc, so they run on the host and
#      in any sandboxed build without a loader and refer to no store path.
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

  # What cargo reads: the workspace's manifests and lock, the crates of crates/, and
  # nix/driver.lock (which cuwheel-build embeds). The driver's source is that alone, so an edit
  # to the CLI's own stages (src/: fetch, publish, cache, reproduce, init), the rest of nix/,
  # docs or tests leaves it, and every derivation built with it, unchanged. Cargo loads the root
  # manifest without src/ when asked for another package. The CLI adds src/ less `cuwheel
  # init` (src/init/, src/cli/init.rs), a feature it leaves out.
  sourceOf = { name, withCli }: builtins.path {
    inherit name;
    path = src;
    filter = path: type:
      let
        rel = builtins.substring (builtins.stringLength (toString src) + 1) (-1) (toString path);
        under = dir: rel == dir || builtins.substring 0 (builtins.stringLength dir + 1) rel == dir + "/";
        initOnly = under "src/init" || rel == "src/cli/init.rs";
      in builtins.elem rel [ "Cargo.toml" "Cargo.lock" "nix" "nix/driver.lock" ]
        || under "crates"
        || (withCli && under "src" && !initOnly);
  };

  binary = { name, package, bin, withCli }: import ./busybox-derivation.nix seeds {
    inherit name package bin rust vendor;
    script = ./driver.sh;
    source = sourceOf { name = "${name}-source"; inherit withCli; };
    rustRoot = rust.root;
  };

  cli = binary { name = "cuwheel"; package = "cuwheel"; bin = "cuwheel"; withCli = true; };
in
binary { name = "cuwheel-build"; package = "cuwheel-build"; bin = "cuwheel-build"; withCli = false; }
  // { inherit cli crates vendor; }
