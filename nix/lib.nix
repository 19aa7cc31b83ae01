# cuwheel as a flake library: a project's source in, the project flake's outputs out.
#
# In:  { src (the project: pyproject.toml and the sources), lock (its cuwheel.lock; default
#      src + "/cuwheel.lock") }. cuwheel's own source is this file's repository (../.:
#      Cargo.*, crates/ and nix/driver.lock build the driver; src/ too, the CLI).
# Out: the outputs of a flake that builds the project on x86_64-linux:
#   legacyPackages.x86_64-linux.{wheels.<cell>, wheels.all, pypi.<cell>, compat.<cell>, nodes,
#                                kernels, toolchains, plan, project}
#   packages.x86_64-linux.{cuwheel, driver, publish}, apps.x86_64-linux.{cuwheel, publish},
#   checks.x86_64-linux.{toolchain-<bundle>, wheel-<cell>}
# `project` is the project's identity (name, config-sha256, src, lock), which `cuwheel plan`,
# `reproduce` and `cache export` compare with the project they are given. Everything built from
# the lock first checks that pyproject.toml's [tool.cuwheel] is the one the lock was made for,
# and refuses, before any build, with the command that locks it again.
#
# The driver (bin/cuwheel-build, what every derivation runs) and the CLI (bin/cuwheel, the
# `cuwheel` package and app) are built from cuwheel's Cargo.lock with the Rust toolchain of
# cuwheel's own lock (nix/driver.lock); the project's lock pins only the project's toolchains
# and seeds. Building wheels compiles the driver alone.
let
  system = "x86_64-linux";

  driverLock = builtins.fromJSON (builtins.readFile ./driver.lock);
  driver = import ./driver.nix (import ./seeds.nix driverLock) {
    rust = (import ./toolchains.nix ./driver.lock).toolchains.${driverLock.driver.rust};
    # A path, not the flake's `self`: builtins.path's filter then sees the same paths in any
    # store (a store rooted elsewhere included).
    src = ../.;
  };
  cuwheel = driver.cli;
  app = program: { type = "app"; inherit program; };

  mkProject = { src, lock ? src + "/cuwheel.lock" }:
    let
      where = toString src;
      pyprojectFile = src + "/pyproject.toml";
      pyproject =
        if builtins.pathExists pyprojectFile then builtins.fromTOML (builtins.readFile pyprojectFile)
        else throw "cuwheel: ${where} has no pyproject.toml (a flake sees only the files git tracks: `git add pyproject.toml`).";
      config = pyproject.tool.cuwheel or (throw "cuwheel: ${where}/pyproject.toml has no [tool.cuwheel] table: write one (cuwheel init; docs/guide/init.md).");
      # What `cuwheel lock` records as config-sha256.
      configSha256 = import ./config-digest.nix config;
      lockData =
        if builtins.pathExists lock then builtins.fromJSON (builtins.readFile lock)
        else throw "cuwheel: ${toString lock} is missing: run `cuwheel lock --project <the project directory>`, then `git add cuwheel.lock` (a flake sees only the files git tracks).";
      # Everything built from the lock passes through here first.
      fresh = value:
        if lockData."config-sha256" or null == configSha256 then value
        else throw ("cuwheel: ${toString lock} was written for another [tool.cuwheel] (config-sha256 "
          + "${lockData."config-sha256" or "missing"}; pyproject.toml's is now ${configSha256}): the "
          + "config changed after `cuwheel lock`. Run `cuwheel lock --project <the project directory>` "
          + "to lock it again, then build.");

      seeds = import ./seeds.nix lockData;
      nix = import ./toolchains.nix lock;
      planFile = import ./plan-file.nix seeds { inherit driver lock; projectDir = src; };
      # The plan the Nix-built driver made (import from derivation): its nodes are the
      # derivations, `kernels` the kernel objects among them.
      plan = builtins.fromJSON (builtins.readFile planFile);
      nodes = import ./plan.nix seeds {
        inherit (nix) toolchains;
        inherit driver plan;
        projectDir = src;
      };
      kernels = builtins.listToAttrs (map (n: { name = n; value = nodes.${n}; })
        (builtins.filter (n: builtins.substring 0 7 n == "kernel-") (builtins.attrNames nodes)));
      # Each cell's result is its audit node: the wheel beside audit.txt and audit.json.
      wheels = builtins.mapAttrs (cell: c: nodes.${c.audit}) plan.cells;
      # compat.<cell>: compat.txt and compat.json, which torch releases of the cell's CUDA major
      # load its audited wheel. Only when asked: it reads torch wheels the cell's build does not.
      compat = builtins.mapAttrs (cell: c: nodes.${c.compat}) plan.cells;
      # wheels.all: one link per cell to its result. Lists reach the builder space-separated, in
      # the same (sorted) order.
      allWheels = import ./busybox-derivation.nix seeds {
        name = "cuwheel-wheels";
        cells = builtins.attrNames wheels;
        results = builtins.attrValues wheels;
        script = builtins.toFile "wheels-all.sh" ''
          mkdir -p "$out"
          set -- $cells
          for result in $results; do ln -s "$result" "$out/$1"; shift; done
        '';
      };
      # The PyPI variant's results ([tool.cuwheel.pypi]), by cell: wheels with no local label,
      # from the same links.
      # Without a PyPI table there is no limit to pass: the app refuses --pypi before using it.
      pypiPlan = plan.pypi or { max_file_size = null; cells = { }; };
      pypiWheels = builtins.mapAttrs (cell: c: nodes.${c.audit}) pypiPlan.cells;
      publish = import ./publish.nix seeds {
        inherit cuwheel;
        cells = builtins.attrNames wheels;
        results = builtins.attrValues wheels;
        pypiCells = builtins.attrNames pypiWheels;
        pypiResults = builtins.attrValues pypiWheels;
        maxFileSize = pypiPlan.max_file_size;
      };

      toolchainChecks = builtins.listToAttrs (map (b: { name = "toolchain-${b}"; value = nix.checks.${b}; })
        (builtins.attrNames nix.checks));
      wheelChecks = builtins.listToAttrs (map (c: { name = "wheel-${c}"; value = wheels.${c}; })
        (builtins.attrNames wheels));
    in {
      packages.${system} = {
        inherit cuwheel driver;
        publish = fresh publish;
        default = cuwheel;
      };
      apps.${system} = {
        cuwheel = app "${cuwheel}/bin/cuwheel";
        default = app "${cuwheel}/bin/cuwheel";
        publish = app "${fresh publish}/bin/cuwheel-publish";
      };
      legacyPackages.${system} = builtins.mapAttrs (_: fresh) {
        inherit (nix) toolchains;
        inherit kernels nodes compat;
        wheels = wheels // { all = allWheels; };
        pypi = pypiWheels;
        plan = planFile;
      } // {
        # Not checked for freshness: `cuwheel` compares it with the project it is given.
        project = {
          name = pyproject.project.name or null;
          config-sha256 = configSha256;
          src = where;
          lock = toString lock;
        };
      };
      checks.${system} = builtins.mapAttrs (_: fresh) (toolchainChecks // wheelChecks);
    };
in
{
  inherit mkProject cuwheel driver;
}
