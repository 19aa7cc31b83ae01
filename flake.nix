{
  description = "cuwheel: hermetic, reproducible PyTorch CUDA extension wheels";

  # No inputs: every toolchain is assembled from artifacts pinned in cuwheel.lock (added to the
  # store by `cuwheel fetch`), with nix/'s builtin-derivation functions.
  outputs = { self }:
    let
      system = "x86_64-linux";
      lockFile = ./examples/demo-ext/cuwheel.lock;
      nix = if builtins.pathExists lockFile then import ./nix/toolchains.nix lockFile
            else throw "examples/demo-ext/cuwheel.lock is missing: run `cuwheel lock` in examples/demo-ext.";
      lock = builtins.fromJSON (builtins.readFile lockFile);
      # The driver: Cargo.lock's crates and the lock's `driver.rust` toolchain (nix/driver.nix).
      cuwheel = import ./nix/driver.nix seeds {
        rust = nix.toolchains.${lock.driver.rust or (throw "examples/demo-ext/cuwheel.lock has no driver.rust toolchain: re-run `cuwheel lock` in examples/demo-ext.")};
        src = ./.;
      };
      app = { type = "app"; program = "${cuwheel}/bin/cuwheel"; };
      # The demo's plan, made by the Nix-built driver (import from derivation): its nodes are the
      # derivations (`nodes`, by name); `kernels` are the kernel objects.
      seeds = import ./nix/seeds.nix lock;
      projectDir = ./examples/demo-ext;
      planFile = import ./nix/plan-file.nix seeds { inherit cuwheel projectDir; };
      plan = builtins.fromJSON (builtins.readFile planFile);
      nodes = import ./nix/plan.nix seeds {
        inherit (nix) toolchains;
        inherit cuwheel projectDir plan;
      };
      kernels = builtins.listToAttrs (map (n: { name = n; value = nodes.${n}; })
        (builtins.filter (n: builtins.substring 0 7 n == "kernel-") (builtins.attrNames nodes)));
      # Each cell's result is its audit node: the wheel beside audit.txt and audit.json.
      wheels = builtins.mapAttrs (cell: c: nodes.${c.audit}) plan.cells;
      # wheels.all: one link per cell to its result. Lists reach the builder space-separated, in
      # the same (sorted) order.
      allWheels = import ./nix/busybox-derivation.nix seeds {
        name = "cuwheel-wheels";
        cells = builtins.attrNames wheels;
        results = builtins.attrValues wheels;
        script = builtins.toFile "wheels-all.sh" ''
          mkdir -p "$out"
          set -- $cells
          for result in $results; do ln -s "$result" "$out/$1"; shift; done
        '';
      };
      publish = import ./nix/publish.nix seeds { inherit cuwheel; results = builtins.attrValues wheels; };
    in {
      packages.${system} = { inherit cuwheel publish; default = cuwheel; };
      apps.${system} = {
        cuwheel = app;
        default = app;
        publish = { type = "app"; program = "${publish}/bin/cuwheel-publish"; };
      };
      legacyPackages.${system} = {
        inherit (nix) toolchains;
        inherit kernels nodes;
        wheels = wheels // { all = allWheels; };
        plan = planFile;
      };
      checks.${system} = builtins.listToAttrs (map (b: { name = "toolchain-${b}"; value = nix.checks.${b}; })
        (builtins.attrNames nix.checks));
    };
}
