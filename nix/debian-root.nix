# A list of .deb files unpacked into one merged root: compiler and sysroot at once.
#
# In:  the seeds, then { name, debs (derivations of pinned .debs), members (optional: a debs
#      store name -> member paths such as "./usr/include", a directory taking its whole subtree
#      (busybox tar matches names, not wildcards), to take only part of a big .deb) }.
# Out: a store path holding the merged tree: absolute symlinks made relative, merged-/usr links
#      (lib -> usr/lib, ...) where the suite ships only the /usr side, and every dynamic ELF file
#      patched to run on this root's own loader and libraries (see lib.sh, patch_elf).
seeds: { name, debs, members ? { } }:
import ./busybox-derivation.nix seeds {
  inherit name;
  script = ./debian-root.sh;
  debSpecs = builtins.concatStringsSep "\n"
    (map (d: builtins.concatStringsSep " " ([ "${d}" ] ++ members.${d.name} or [ ])) debs);
}
