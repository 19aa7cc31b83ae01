# `nix run .#publish -- [--to DIR [--base-url URL]] [--pypi DIR] [--max-jobs N] [--cell CELL]...`:
# builds every cell's result (or only the cells named, each given once), in parallel, then runs
# the CLI's `cuwheel publish` with those wheels. An unknown cell is refused before anything
# is built. With --pypi, the PyPI variant's wheels (`[tool.cuwheel.pypi]`: no local label, from
# the same links) are built too and go first, through `cuwheel publish --pypi DIR
# --max-file-size N`, which checks PyPI's rules before writing; then --to's index, if given.
#
# The app depends on the cells' derivations (their .drv files), not on their outputs, so
# `nix run` builds only this script and the CLI; the script then has Nix build the cells
# with `--max-jobs` (default `auto`: one build per core, whatever nix.conf says; a flake
# cannot set it without asking on every run), with the sandbox on and no substituters, as every
# cuwheel call does. Each wheel comes from its cell's audit node, which exists only when the
# audit passed; `cuwheel publish` audits each again before writing anything.
#
# In:  the seeds, then { cuwheel (the CLI: driver.nix's `cli`), cells (the cells' names) and results (their audit
#      derivations, in the same order), pypiCells, pypiResults (the same for the PyPI wheels)
#      and maxFileSize (PyPI's limit in bytes, from the plan; null without a PyPI variant) }.
# Out: a derivation whose bin/cuwheel-publish does the above; `nix-store` must be on PATH.
seeds: { cuwheel, cells, results, pypiCells, pypiResults, maxFileSize }:
import ./busybox-derivation.nix seeds {
  name = "cuwheel-publish";
  inherit cuwheel cells pypiCells;
  # The .drv files only. A plain `drvPath` carries a deep context, which would make every
  # output of every derivation in each cell's closure an input of this app, built before it
  # runs (whatever cells --cell names); without its output dependency, only the .drv files
  # and their closure of .drv files and sources are.
  drvs = map (r: builtins.unsafeDiscardOutputDependency r.drvPath) results;
  pypiDrvs = map (r: builtins.unsafeDiscardOutputDependency r.drvPath) pypiResults;
  maxFileSize = if maxFileSize == null then "" else toString maxFileSize;
  script = builtins.toFile "publish.sh" ''
    mkdir -p "$out/bin"
    p="$out/bin/cuwheel-publish"
    {
      echo "#!$busybox/bin/busybox sh"
      echo "cuwheel=$cuwheel cells='$cells' drvs='$drvs'"
      echo "pypiCells='$pypiCells' pypiDrvs='$pypiDrvs' maxFileSize=$maxFileSize"
      cat <<'EOS'
    set -eu
    jobs=auto
    picked=""
    pypi=""
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
        --pypi) [ "$n" -gt 0 ] || { echo "cuwheel-publish: --pypi needs a directory" >&2; exit 2; }
                pypi=$1; shift; n=$((n - 1)) ;;
        --pypi=*) pypi=''${a#--pypi=} ;;
        *) set -- "$@" "$a" ;;
      esac
    done
    command -v nix-store >/dev/null 2>&1 || {
      echo "cuwheel-publish: nix-store is not on PATH; run this app with the Nix that runs 'nix run'" >&2
      exit 1
    }
    if [ -n "$pypi" ] && [ -z "$pypiCells" ]; then
      echo "cuwheel-publish: --pypi: this project names no PyPI variant; add [tool.cuwheel.pypi] with the CUDA (and torch) whose cells go to PyPI, then run cuwheel lock" >&2
      exit 2
    fi
    if [ -z "$pypi" ] && [ "$#" = 0 ]; then
      echo "cuwheel-publish: say where to publish: --to DIR (the per-CUDA index), --pypi DIR (the PyPI variant's wheels, for an upload), or both" >&2
      exit 2
    fi
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
      # The PyPI wheels of the cells named.
      chosen=""
      i=0
      for c in $pypiCells; do
        i=$((i + 1))
        case " $picked " in *" $c "*) chosen="$chosen $(echo $pypiDrvs | cut -d' ' -f"$i")" ;; esac
      done
      pypiDrvs=$chosen
    fi
    # Only the index's cells without --to, only the PyPI ones without it.
    [ "$#" = 0 ] && drvs=""
    [ -n "$pypi" ] || pypiDrvs=""
    [ -n "$pypi" ] && what="$what (and their PyPI wheels)"
    if [ -n "$pypi" ] && [ -z "$pypiDrvs" ]; then
      echo "cuwheel-publish: --pypi: none of the cells named goes to PyPI; its cells are: $pypiCells" >&2
      exit 2
    fi
    echo "cuwheel-publish: building $what (nix-store --realise --max-jobs $jobs)" >&2
    # shellcheck disable=SC2086 # $drvs is a space-separated list of store paths
    built=$(nix-store --realise --max-jobs "$jobs" --option sandbox true \
      --option sandbox-fallback false --option substituters "" $drvs $pypiDrvs)
    index=$#
    pypiWheels=""
    for r in $built; do
      case "$r" in
        */*-audit-pypi-*) for w in "$r"/*.whl; do pypiWheels="$pypiWheels $w"; done ;;
        *) for w in "$r"/*.whl; do set -- "$@" "$w"; done ;;
      esac
    done
    if [ -n "$pypi" ]; then
      # shellcheck disable=SC2086 # store paths have no spaces
      "$cuwheel/bin/cuwheel" publish --pypi "$pypi" --max-file-size "$maxFileSize" $pypiWheels
    fi
    [ "$index" = 0 ] || exec "$cuwheel/bin/cuwheel" publish "$@"
    EOS
    } > "$p"
    chmod 555 "$p"
  '';
}
