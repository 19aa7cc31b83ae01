# The plan of a project, made by the Nix-built driver: `cuwheel-build plan --json` in the sandbox.
#
# In:  the seeds, then { driver (driver.nix: bin/cuwheel-build), projectDir (a path holding pyproject.toml and the
#      sources), lock (its cuwheel.lock, which may live elsewhere) }. Out: the derivation whose
#      output is plan.json; the flake reads it back with import from derivation. Its inputs are
#      the driver, the project and the lock, so it reruns (cheaply) when one changes; the nodes
#      built from it change only where the plan's text or their own sources do.
seeds: { driver, projectDir, lock }:
import ./busybox-derivation.nix seeds {
  name = "cuwheel-plan.json";
  inherit driver;
  # The project as the driver reads it: no build results, VCS or Python cache directories, and
  # no lock (the one given is put in its place).
  project = builtins.path {
    name = "cuwheel-project";
    path = projectDir;
    filter = path: type:
      let base = baseNameOf path; in
      !(type == "symlink" && builtins.substring 0 6 base == "result")
      && !(builtins.elem base [ ".git" "target" "__pycache__" ])
      && path != toString projectDir + "/cuwheel.lock";
  };
  lock = builtins.path { name = "cuwheel.lock"; path = lock; };
  script = builtins.toFile "plan.sh" ''
    cp -r "$project" project
    chmod -R u+w project
    cp "$lock" project/cuwheel.lock
    "$driver/bin/cuwheel-build" plan --json --project project > "$out"
  '';
}
