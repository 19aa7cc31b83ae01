# Every artifact of the lock, by store name, as a pinned fixed-output derivation.
#
# In:  the parsed lock and the seeds. Out: a function from a store name to its derivation; a name
#      the lock does not list is an evaluation error that says so.
lock: seeds:
let
  all = builtins.mapAttrs (name: a: import ./pinned.nix {
    inherit name;
    inherit (a) sha256;
    inherit (seeds) busybox;
  }) lock.artifacts;
in
name: all.${name} or (throw "cuwheel.lock names the artifact '${name}' in a toolchain but has no artifacts.\"${name}\" entry: re-run `cuwheel lock`.")
