# The driver's plan as derivations. No build logic lives here: each node's script and inputs come
# from `cuwheel plan --json` (plan-file.nix runs it); this file only resolves the inputs to store
# paths.
#
# In:  the seeds, then { toolchains (toolchains.nix's set), cuwheel (the Nix-built driver, for the
#      nodes it runs), projectDir (the project the plan was made for: sources are read from it),
#      plan (the parsed plan JSON) }.
# Out: node name → derivation.
#
# Inputs, by the shape of their JSON (each becomes the environment variable that keys it):
#   { "toolchain": "cuda130" }                       toolchains.cuda130
#   { "toolchain": "torch211", "output": "headers" } toolchains.torch211.headers
#   { "source": "csrc/kernels/x.cu" }                that file (or directory) alone as a store path,
#                                                    so editing one source changes only its nodes
#   { "node": "<name>" }                             another node's derivation
#   { "driver": true }                               the driver
seeds: { toolchains, driver, projectDir, plan }:
let
  bbDrv = import ./busybox-derivation.nix seeds;

  # A store name for a project-relative path: `/` and anything Nix refuses become `-`.
  storeName = rel: "source-" + builtins.concatStringsSep ""
    (map (c: if builtins.match "[A-Za-z0-9+._?=-]" c != null then c else "-")
      (builtins.genList (i: builtins.substring i 1 rel) (builtins.stringLength rel)));

  # Names busybox-derivation.nix and `derivation` set themselves.
  reserved = [ "name" "script" "system" "builder" "args" "busybox" "patchelf" "out" "outputs" ];

  resolve = node: var: input:
    if builtins.elem var reserved then
      throw "cuwheel plan: node '${node}' has an input named '${var}', which the derivation sets itself"
    else if input ? toolchain then
      let t = toolchains.${input.toolchain} or (throw "cuwheel plan: node '${node}' needs the toolchain '${input.toolchain}', which cuwheel.lock does not have: re-run `cuwheel lock`");
      in if input ? output then t.${input.output} or (throw "cuwheel plan: toolchain '${input.toolchain}' has no output '${input.output}'") else t
    else if input ? source then
      builtins.path { path = projectDir + "/${input.source}"; name = storeName input.source; }
    else if input ? driver then driver
    else if input ? node then
      nodes.${input.node} or (throw "cuwheel plan: node '${node}' needs the node '${input.node}', which the plan does not have")
    else throw "cuwheel plan: node '${node}', input '${var}': not a toolchain, source or node (${builtins.toJSON input})";

  nodes = builtins.mapAttrs (name: node: bbDrv ({
    inherit name;
    script = builtins.toFile "${name}.sh" node.script;
  } // builtins.mapAttrs (resolve name) node.inputs)) plan.nodes;
in
nodes
