# cuwheel's two binaries, built with the pinned Rust toolchain.
#
# In:  the seeds, then { rust (rust.nix's toolchain), src (the repository root) }.
# Out: the driver, crates/cuwheel-build's $out/bin/cuwheel-build: what every derivation of a
#      project runs (its plan, wheel assembly, audit and load check), built in its own workspace
#      (nix/driver-workspace: the crates it is made of and the lock of what they use). Attributes:
#      `cli` (the `cuwheel` command line, $out/bin/cuwheel, without `init`, built from the root
#      workspace and Cargo.lock: the flake's `cuwheel` package and app, and what `nix run
#      .#publish` runs), `crates` (the root Cargo.lock's registry packages as pinned
#      `<name>-<version>.crate` paths, the hash being Cargo.lock's checksum: `cuwheel fetch` adds
#      them; the driver's are among them), `vendor` (the driver's crates unpacked as a cargo
#      directory source) and `cliVendor` (the CLI's).
#      Both binaries are linked statically against the root's glibc, so they run on the host and
#      in any sandboxed build without a loader and refer to no store path.
seeds: { rust, src }:
let
  # Workspace members have no source; anything but a registry would need a network to fetch.
  fromRegistry = p:
    if !(p ? source) then false
    else if builtins.substring 0 9 p.source == "registry+" && p ? checksum then true
    else throw "Cargo.lock: ${p.name} ${p.version} comes from '${p.source}'; the driver's Nix build takes registry crates only (pinned by checksum): depend on a published version.";

  cratesOf = lockFile: map (p: {
    inherit (p) name version checksum;
    crate = import ./pinned.nix {
      name = "${p.name}-${p.version}.crate";
      sha256 = p.checksum;
      inherit (seeds) busybox;
    };
  }) (builtins.filter fromRegistry (builtins.fromTOML (builtins.readFile lockFile)).package);

  vendorOf = name: crates: import ./busybox-derivation.nix seeds {
    inherit name;
    script = ./driver-vendor.sh;
    crateSpecs = builtins.concatStringsSep "\n"
      (map (c: "${c.crate} ${c.name}-${c.version} ${c.checksum}") crates);
  };

  crates = cratesOf (src + "/Cargo.lock");
  cliVendor = vendorOf "cuwheel-cli-vendor" crates;
  # The driver's workspace: its manifest names the crates (members), its lock what they use.
  driverWorkspace = "nix/driver-workspace";
  driverMembers = (builtins.fromTOML (builtins.readFile (src + "/${driverWorkspace}/Cargo.toml"))).workspace.members;
  vendor = vendorOf "cuwheel-vendor" (cratesOf (src + "/${driverWorkspace}/Cargo.lock"));

  # What cargo reads. The driver: its workspace's manifest and lock and the crates that manifest
  # names, less their integration tests (tests/); so an edit to the CLI (src/), to a crate the
  # driver is not made of (the registry clients, crates/cuwheel-registry), to a test, to the
  # root manifest or lock, the rest of nix/ (and nix/driver.lock, which only cuwheel-registry
  # embeds), or docs leaves it, and every derivation built with it, unchanged. The CLI: the
  # root workspace (manifests, lock, crates/), nix/driver.lock and src/ less `cuwheel init`
  # (src/init/, src/cli/init.rs), a feature it leaves out.
  under = rel: dir: rel == dir || builtins.substring 0 (builtins.stringLength dir + 1) rel == dir + "/";
  sourceOf = { name, withCli }: builtins.path {
    inherit name;
    path = src;
    filter = path: type:
      let
        rel = builtins.substring (builtins.stringLength (toString src) + 1) (-1) (toString path);
        initOnly = under rel "src/init" || rel == "src/cli/init.rs";
        # The directories above a member, which the filter must let through to reach it.
        aboveMember = builtins.any (m: builtins.substring 0 (builtins.stringLength rel + 1) m == rel + "/") driverMembers;
      in if withCli then
        builtins.elem rel [ "Cargo.toml" "Cargo.lock" "nix" "nix/driver.lock" ]
        || under rel "crates" || (under rel "src" && !initOnly)
      else
        builtins.elem rel [ "nix" driverWorkspace "${driverWorkspace}/Cargo.toml" "${driverWorkspace}/Cargo.lock" ]
        || aboveMember
        # A member's integration tests (its tests/) are no part of the binary.
        || builtins.any (m: under rel m && !under rel "${m}/tests") driverMembers;
  };

  binary = { name, package, bin, withCli }: import ./busybox-derivation.nix seeds {
    inherit name package bin rust;
    vendor = if withCli then cliVendor else vendor;
    # The driver's workspace root is copied over the source's root before cargo runs.
    workspace = if withCli then "" else driverWorkspace;
    script = ./driver.sh;
    source = sourceOf { name = "${name}-source"; inherit withCli; };
    rustRoot = rust.root;
  };

  cli = binary { name = "cuwheel"; package = "cuwheel"; bin = "cuwheel"; withCli = true; };
in
binary { name = "cuwheel-build"; package = "cuwheel-build"; bin = "cuwheel-build"; withCli = false; }
  // { inherit cli crates vendor cliVendor; }
