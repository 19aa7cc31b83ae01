# The plan of a project, made by the Nix-built driver: `cuwheel plan --json` in the sandbox.
#
# In:  the seeds, then { cuwheel (the driver), projectDir (a path holding pyproject.toml,
#      cuwheel.lock and the sources) }. Out: the derivation whose output is plan.json; the flake
#      reads it back with import from derivation. Its inputs are the driver and the project, so
#      it reruns (cheaply) when either changes; the nodes built from it change only where the
#      plan's text or their own sources do.
seeds: { cuwheel, projectDir }:
import ./busybox-derivation.nix seeds {
  name = "cuwheel-plan.json";
  inherit cuwheel;
  # The project as the driver reads it: no build results, VCS or Python cache directories.
  project = builtins.path {
    name = "cuwheel-project";
    path = projectDir;
    filter = path: type:
      let base = baseNameOf path; in
      !(type == "symlink" && builtins.substring 0 6 base == "result")
      && !(builtins.elem base [ ".git" "target" "__pycache__" ]);
  };
  script = builtins.toFile "plan.sh" ''
    "$cuwheel/bin/cuwheel" plan --json --project "$project" > "$out"
  '';
}
