# Trivial derivations, to measure Nix's own cost per derivation (bench/matrix.py).
#
# In:  count, nonce (makes every name, hence every derivation, new), script (the build script's
#      text: `touch $out` by default). Out: a list of `count` derivations built with the repo's
#      busybox seed (nix/busybox-derivation.nix, as every cuwheel node is).
{ count, nonce, script ? "touch $out" }:
let
  lock = builtins.fromJSON (builtins.readFile ../examples/demo-ext/cuwheel.lock);
  seeds = import ../nix/seeds.nix lock;
  bbDrv = import ../nix/busybox-derivation.nix seeds;
  scriptFile = builtins.toFile "bench-trivial.sh" script;
in
builtins.genList (i: bbDrv {
  name = "bench-trivial-${nonce}-${toString i}";
  script = scriptFile;
}) count
