# A toolchain that is one Debian root plus a script exposing its programs (kinds `gcc`, `rust`).
#
# In:  the seeds, the artifact lookup, then { name, toolchain, script, env ? {} } (`toolchain` a
#      `toolchains` entry of the lock whose `artifacts` are the .deb closure; `env` extra
#      attributes for the script).
# Out: what `script` makes of the root, with attribute `root`: the Debian root.
seeds: artifact: { name, toolchain, script, env ? { } }:
let
  root = import ./debian-root.nix seeds {
    name = "${name}-root";
    debs = map artifact toolchain.artifacts;
  };
in
import ./busybox-derivation.nix seeds ({ inherit name root script; } // env) // { inherit root; }
