# A derivation whose builder is the busybox seed running a script after lib.sh.
#
# In:  the seeds, then { name, script (a path), ... }: other attributes become the build's
#      environment. Out: the derivation.
seeds: { name, script, ... }@attrs:
derivation (builtins.removeAttrs attrs [ "script" ] // {
  inherit name;
  system = "x86_64-linux";
  builder = "${seeds.busybox}/bin/busybox";
  args = [ "sh" "-euc" ". ${./lib.sh}; . ${script}" ];
  inherit (seeds) busybox patchelf;
})
