# The lock's toolchains as derivations, by kind, plus its bundles and their checks.
#
# In:  the path of a cuwheel.lock (or of nix/driver.lock, which has no bundles). Out:
#      { toolchains, checks }:
#   toolchains.<name>   every entry of the lock's `toolchains` (built by the file of its kind) and
#                       every bundle (a directory of links to its toolchains, by name);
#   checks.<bundle>     check.nix with the bundle's gcc, CUDA and torch.
# Which artifacts make up which toolchain is the lock's business; this file only dispatches.
lockFile:
let
  lock = { bundles = { }; } // builtins.fromJSON (builtins.readFile lockFile);
  seeds = import ./seeds.nix lock;
  artifact = import ./artifacts.nix lock seeds;
  bbDrv = import ./busybox-derivation.nix seeds;

  kinds = {
    gcc = name: toolchain: import ./gcc.nix seeds artifact { inherit name toolchain; };
    python-headers = name: toolchain: import ./python-headers.nix seeds artifact { inherit name toolchain; };
    python-archive = name: toolchain: import ./python-headers.nix seeds artifact { inherit name toolchain; };
    torch = name: toolchain: import ./torch.nix seeds artifact { inherit name toolchain; };
    rust = name: toolchain: import ./rust.nix seeds artifact { inherit name toolchain; };
  };

  # A CUDA toolkit's kind is its toolkit source's (crates/cuwheel-build/src/lock/toolkits/, one module each), and
  # nix/<kind>.nix builds it: called with this file's context, then { name, toolchain }.
  isCuda = kind: builtins.match "cuda-[a-z0-9]+(-[a-z0-9]+)*" kind != null;
  cuda = name: toolchain:
    let file = ./. + "/${toolchain.kind}.nix";
    in if builtins.pathExists file
       then import file { inherit seeds artifact lock toolchainNamed; } { inherit name toolchain; }
       else throw "cuwheel.lock: toolchain '${name}' has kind '${toolchain.kind}', a toolkit source's, but nix/${toolchain.kind}.nix, which would build it, does not exist";

  build = name: toolchain:
    if isCuda toolchain.kind then cuda name toolchain
    else (kinds.${toolchain.kind} or (throw "cuwheel.lock: toolchain '${name}' has kind '${toolchain.kind}', which nix/ cannot build (known: ${builtins.concatStringsSep ", " (builtins.attrNames kinds)}, and cuda-* kinds that have a nix/<kind>.nix)"))
      name toolchain;

  built = builtins.mapAttrs build lock.toolchains;
  toolchainNamed = name: built.${name} or (throw "cuwheel.lock names the toolchain '${name}' but has no toolchains.\"${name}\" entry: re-run `cuwheel lock`.");

  bundle = name: members: bbDrv {
    name = "toolchains-${name}";
    links = builtins.concatStringsSep "\n" (map (m: "${m} ${toolchainNamed m}") members);
    script = builtins.toFile "bundle.sh" ''
      mkdir -p "$out"
      echo "$links" | while read -r n p; do ln -s "$p" "$out/$n"; done
    '';
  };

  clash = builtins.filter (b: lock.toolchains ? ${b}) (builtins.attrNames lock.bundles);

  # A bundle's roles: which kinds fill each.
  roles = {
    gcc = kind: kind == "gcc";
    cuda = isCuda;
    torch = kind: kind == "torch";
    python = kind: kind == "python-headers" || kind == "python-archive";
  };
  # The bundle's members of one role.
  members = b: role:
    builtins.filter (n: roles.${role} (lock.toolchains.${n}.kind or "")) lock.bundles.${b};
  # The one member of a role.
  member = b: role:
    let m = members b role;
    in if builtins.length m == 1 then toolchainNamed (builtins.head m)
       else throw "cuwheel.lock: bundle '${b}' has ${toString (builtins.length m)} ${role} toolchains, expected one";
  # A bundle serves one CUDA but may hold several torch releases of it (torch 2.11 to 2.14 are
  # all CUDA 13.0): the check compiles against the first by name.
  firstName = b: role:
    let m = members b role;
    in if m != [ ] then builtins.head m
       else throw "cuwheel.lock: bundle '${b}' has no ${role} toolchain";
in
if clash != [ ] then throw "cuwheel.lock: ${builtins.concatStringsSep ", " clash} is both a toolchain and a bundle name"
else {
  toolchains = built // builtins.mapAttrs bundle lock.bundles;
  checks = builtins.mapAttrs (b: _: import ./check.nix seeds {
    name = "toolchain-check-${b}";
    gcc = member b "gcc";
    gccMajor = lock.toolchains.${firstName b "gcc"}.gcc;
    cuda = member b "cuda";
    torch = toolchainNamed (firstName b "torch");
    cxxStandard = lock.toolchains.${firstName b "torch"}.cxx-standard;
    pythons = map toolchainNamed (members b "python");
  }) lock.bundles;
}
