# Toolchain kinds `python-headers` and `python-archive`: the C headers of one CPython build.
#
# In:  the seeds, the artifact lookup, then { name, toolchain }.
#      python-headers: Debian's libpython3.X-dev (`version` is "3.X");
#      python-archive: one archive (`version` "3.12" or "3.13t"; `include`, the member directory
#      holding Python.h; `pyconfig`, the member that is the real pyconfig.h), read by
#      crates/cuwheel-registry/src/archive.rs when locking.
# Out: include/python<version>/ with Python.h and the real pyconfig.h in place (Debian's and
#      Ubuntu's is a stub that includes the multiarch one from include/x86_64-linux-gnu/).
seeds: artifact: { name, toolchain }:
import ./busybox-derivation.nix seeds ({
  inherit name;
  script = ./python-headers.sh;
  pythonVersion = toolchain.version;
} // (if toolchain.kind == "python-archive" then {
  archive = artifact (builtins.head toolchain.artifacts);
  include = toolchain.include;
  pyconfig = toolchain.pyconfig;
} else {
  debs = map artifact toolchain.artifacts;
}))
