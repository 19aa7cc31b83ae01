# `nix run .#publish -- --to DIR [--base-url URL]`: the driver's `cuwheel publish` with every
# cell's wheel. Each wheel comes from its cell's audit node, which exists only when the audit
# passed; `cuwheel publish` audits each again before writing anything.
#
# In:  the seeds, then { cuwheel (the driver), results (the cells' audit outputs) }.
# Out: a derivation whose bin/cuwheel-publish runs `cuwheel publish "$@" <every wheel>`.
seeds: { cuwheel, results }:
import ./busybox-derivation.nix seeds {
  name = "cuwheel-publish";
  inherit cuwheel results;
  script = builtins.toFile "publish.sh" ''
    mkdir -p "$out/bin"
    p="$out/bin/cuwheel-publish"
    {
      echo "#!$busybox/bin/busybox sh"
      printf 'exec %s/bin/cuwheel publish "$@"' "$cuwheel"
      for r in $results; do
        for w in "$r"/*.whl; do printf ' %s' "$w"; done
      done
      echo
    } > "$p"
    chmod 555 "$p"
  '';
}
