# Toolchain kind `python-headers`: the C headers of one CPython from Debian's libpython3.X-dev.
#
# In:  the seeds, the artifact lookup, then { name, toolchain } (`version` is "3.X").
# Out: include/python3.X/ with Python.h and the real pyconfig.h in place (Debian's is a stub that
#      includes the multiarch one from include/x86_64-linux-gnu/).
seeds: artifact: { name, toolchain }:
import ./busybox-derivation.nix seeds {
  inherit name;
  script = ./python-headers.sh;
  debs = map artifact toolchain.artifacts;
  pythonVersion = toolchain.version;
}
