# `nix run .#publish -- --to DIR [--base-url URL] [--max-jobs N] [--cell CELL]...`: builds every
# cell's result (or only the cells named, each given once), in parallel, then runs the driver's
# `cuwheel publish` with those wheels. An unknown cell is refused before anything is built.
#
# The app depends on the cells' derivations (their .drv files), not on their outputs, so
# `nix run` builds only this script and the driver; the script then has Nix build the cells
# with `--max-jobs` (default `auto`: one build per core, whatever nix.conf says; a flake
# cannot set it without asking on every run), with the sandbox on and no substituters, as every
# cuwheel call does. Each wheel comes from its cell's audit node, which exists only when the
# audit passed; `cuwheel publish` audits each again before writing anything.
#
# In:  the seeds, then { cuwheel (the driver), cells (the cells' names) and results (their audit
#      derivations, in the same order) }.
# Out: a derivation whose bin/cuwheel-publish does the above; `nix-store` must be on PATH.
seeds: { cuwheel, cells, results }:
import ./busybox-derivation.nix seeds {
  name = "cuwheel-publish";
  inherit cuwheel cells;
  # The .drv files only. A plain `drvPath` carries a deep context, which would make every
  # output of every derivation in each cell's closure an input of this app, built before it
  # runs (whatever cells --cell names); without its output dependency, only the .drv files
  # and their closure of .drv files and sources are.
  drvs = map (r: builtins.unsafeDiscardOutputDependency r.drvPath) results;
  script = builtins.toFile "publish.sh" ''
    mkdir -p "$out/bin"
    p="$out/bin/cuwheel-publish"
    {
      echo "#!$busybox/bin/busybox sh"
      echo "cuwheel=$cuwheel cells='$cells' drvs='$drvs'"
      cat <<'EOS'
    set -eu
    jobs=auto
    picked=""
    n=$#
    while [ "$n" -gt 0 ]; do
      a=$1; shift; n=$((n - 1))
      case "$a" in
        --max-jobs) [ "$n" -gt 0 ] || { echo "cuwheel-publish: --max-jobs needs a number or auto" >&2; exit 2; }
                    jobs=$1; shift; n=$((n - 1)) ;;
        --max-jobs=*) jobs=''${a#--max-jobs=} ;;
        --cell) [ "$n" -gt 0 ] || { echo "cuwheel-publish: --cell needs a cell name" >&2; exit 2; }
                picked="$picked $1"; shift; n=$((n - 1)) ;;
        --cell=*) picked="$picked ''${a#--cell=}" ;;
        *) set -- "$@" "$a" ;;
      esac
    done
    command -v nix-store >/dev/null 2>&1 || {
      echo "cuwheel-publish: nix-store is not on PATH; run this app with the Nix that runs 'nix run'" >&2
      exit 1
    }
    what="every cell"
    if [ -n "$picked" ]; then
      # The derivation of each named cell ($cells and $drvs are in the same order).
      chosen=""
      for want in $picked; do
        i=0 found=""
        for c in $cells; do
          i=$((i + 1))
          [ "$c" = "$want" ] && found=$(echo $drvs | cut -d' ' -f"$i")
        done
        [ -n "$found" ] || {
          echo "cuwheel-publish: this project has no cell '$want'; its cells are: $cells" >&2
          exit 2
        }
        case " $chosen " in *" $found "*) ;; *) chosen="$chosen $found" ;; esac
      done
      drvs=$chosen
      what="the cells named:$picked"
    fi
    echo "cuwheel-publish: building $what (nix-store --realise --max-jobs $jobs)" >&2
    # shellcheck disable=SC2086 # $drvs is a space-separated list of store paths
    built=$(nix-store --realise --max-jobs "$jobs" --option sandbox true \
      --option sandbox-fallback false --option substituters "" $drvs)
    for r in $built; do
      for w in "$r"/*.whl; do set -- "$@" "$w"; done
    done
    exec "$cuwheel/bin/cuwheel" publish "$@"
    EOS
    } > "$p"
    chmod 555 "$p"
  '';
}
