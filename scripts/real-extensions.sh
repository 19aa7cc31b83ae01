#!/usr/bin/env bash
# cuwheel on two real PyPI extensions nobody here wrote: torch-cluster 1.6.3
# and grouped-gemm 0.3.0 (docs/reports/real-extensions.md records the results).
#
#   bash scripts/real-extensions.sh prepare PACKAGE DIR
#       gets PACKAGE's sdist with pip, unpacks it into DIR (outside this
#       repository), runs `cuwheel init DIR`, keeps init's pyproject.toml as
#       DIR/pyproject.inferred.toml, writes the reviewed config
#       (scripts/real-extensions/<name>.toml) as DIR/pyproject.toml, commits
#       everything to a fresh git repository in DIR (a flake sees only
#       tracked files), then `cuwheel lock` and `cuwheel fetch`. DIR is then
#       ready for `nix build DIR#wheels.<cell>`.
#   bash scripts/real-extensions.sh run [PACKAGE...]      (default: both)
#       prepare in a temporary directory, then per package: the config diff,
#       `cuwheel plan`, `nix build .#wheels.<cell>` for each cell (the audit
#       is part of the build), the wheel's Requires-Dist, the kernel objects
#       each cell's build compiled, `pip install` of each wheel into a venv of
#       the matching Python with torch 2.11 and an import; a results table.
#
# PACKAGE: torch-cluster or grouped-gemm.
# Environment: CUWHEEL (the cuwheel binary; default: this checkout's
# target/release/cuwheel, brought up to date with cargo), WORK (where `run`
# puts its directories; default a new one under ${TMPDIR:-/tmp}; kept),
# CELLS_<pkg> (cells to build instead of the default, e.g.
# CELLS_grouped_gemm="cu130-py312"), PYTHONS (interpreters for
# the import checks; default python3.11 python3.12 python3.13, those found),
# SKIP_IMPORT=1 (no venvs: they need torch 2.11 with its CUDA libraries,
# about 4 GB per Python from the package index).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
configs=$repo/scripts/real-extensions

die() {
  echo "real-extensions: $*" >&2
  exit 1
}
say() { echo "real-extensions: $*" >&2; }

nix=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters ''
  --max-jobs auto)

# Per package: its PyPI name and version, the reviewed config, the cells built
# by default (two Pythons of torch 2.11 / CUDA 13.0, or the one abi3 wheel),
# the module a Python import checks, and a CPU smoke test after the import.
package_info() {
  case "$1" in
  torch-cluster | torch_cluster)
    name=torch-cluster version=1.6.3 config=torch_cluster.toml
    default_cells="cu130-abi3"
    import_check='import torch, torch_cluster
x = torch.tensor([[-1., -1.], [-1., 1.], [1., -1.], [1., 1.]])
batch = torch.tensor([0, 0, 0, 0])
idx = torch_cluster.fps(x, batch, ratio=0.5, random_start=False)
assert idx.tolist() == [0, 3], idx
row, col = torch_cluster.knn(x, x, 2, batch, batch)
assert len(row) == 8, (row, col)
print("torch_cluster", torch_cluster.__version__, "fps", idx.tolist(), "knn edges", len(row),
      "cuda_version", torch.ops.torch_cluster.cuda_version())'
    ;;
  grouped-gemm | grouped_gemm)
    name=grouped-gemm version=0.3.0 config=grouped_gemm.toml
    default_cells="cu130-py312 cu130-py311 cu130-py313"
    import_check='import torch, grouped_gemm
from grouped_gemm import ops, backend
assert callable(ops.gmm) and hasattr(backend.backend, "gmm")
print("grouped_gemm", backend.backend.__file__, "gmm", backend.backend.gmm.__doc__.splitlines()[0])'
    ;;
  *) die "unknown package '$1': torch-cluster or grouped-gemm" ;;
  esac
  key=${config%.toml}
}

cuwheel_binary() {
  if [ -n "${CUWHEEL:-}" ]; then
    echo "$CUWHEEL"
    return
  fi
  # Always through cargo (a no-op when up to date): a release binary left from
  # an older checkout would lock without what this one adds.
  say "building cuwheel (cargo build --release)"
  (cd "$repo" && cargo build --release --locked --quiet >&2)
  echo "$repo/target/release/cuwheel"
}

# prepare PACKAGE DIR
prepare() {
  package_info "$1"
  local dir=$2 cuwheel
  cuwheel=$(cuwheel_binary)
  [ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || die "$dir exists and is not empty; name a new directory"
  case "$(realpath -m "$dir")/" in
  "$repo"/*) die "$dir is inside the cuwheel checkout; name a directory outside it (a flake would see it as part of cuwheel)" ;;
  esac
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local scratch
  scratch=$(mktemp -d)
  # Both setup.py files import torch, so pip's metadata step fails where
  # torch is not installed: --no-clean keeps the unpacked sdist in pip's
  # temporary directory (under TMPDIR), which is the tree used.
  say "$name $version: pip download (sdist)"
  TMPDIR=$scratch python3 -m pip download --disable-pip-version-check --no-deps \
    --no-binary :all: --no-build-isolation --no-clean "$name==$version" \
    -d "$scratch/sdist" >"$scratch/pip.log" 2>&1 || true
  local trees
  mapfile -t trees < <(find "$scratch" -mindepth 2 -maxdepth 2 -path "$scratch/pip-*" -type d -exec test -f '{}/setup.py' ';' -print)
  [ ${#trees[@]} -eq 1 ] || {
    cat "$scratch/pip.log" >&2
    die "expected one unpacked sdist of $name==$version under $scratch, found ${#trees[@]}"
  }
  cp -a "${trees[0]}/." "$dir/"
  rm -rf "$scratch"
  say "$name: cuwheel init"
  # init ends by running `cuwheel lock` on what it wrote, which may fail
  # (the review is what fixes it): its output is kept, its status is not.
  "$cuwheel" init "$dir" >"$dir.init.log" 2>&1 || true
  [ -f "$dir/pyproject.toml" ] || {
    cat "$dir.init.log" >&2
    die "cuwheel init wrote no pyproject.toml"
  }
  cp "$dir/pyproject.toml" "$dir/pyproject.inferred.toml"
  cp "$configs/$config" "$dir/pyproject.toml"
  rm -f "$dir/cuwheel.lock"
  (
    cd "$dir"
    git init -q
    git add -A
    git -c user.name=cuwheel -c user.email=cuwheel@localhost commit -qm "$name $version: sdist, cuwheel init, reviewed config"
    say "$name: cuwheel lock"
    # The Python 3.12 headers archive grouped-gemm's config names.
    "$cuwheel" lock --archives "$repo/examples/demo-ext/archives" >&2
    say "$name: cuwheel fetch"
    "$cuwheel" fetch --archives "$repo/examples/demo-ext/archives" >&2
    git add -A
    git -c user.name=cuwheel -c user.email=cuwheel@localhost commit -qm "cuwheel lock"
  )
  say "$name: ready in $dir (nix build $dir#wheels.<cell>; cells: $default_cells)"
}

# The interpreters asked for that run, as "pyXY path".
pythons() {
  local p tag
  for p in ${PYTHONS:-python3.11 python3.12 python3.13}; do
    tag=$("$p" -c 'import sys; print(f"py{sys.version_info[0]}{sys.version_info[1]}")' 2>/dev/null) || continue
    echo "$tag $(command -v "$p")"
  done
}

# torch's requirements for this platform other than its CUDA libraries
# (nvidia-*, cuda-toolkit), read from the torch installed in the venv.
torch_requirements='import importlib.metadata
from pip._vendor.packaging.requirements import Requirement
for text in importlib.metadata.requires("torch") or []:
    requirement = Requirement(text)
    if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
        continue
    if requirement.name.startswith("nvidia-") or requirement.name == "cuda-toolkit":
        continue
    requirement.marker = None
    print(requirement)'

# A venv of python $2 with torch 2.11 from the package index, in $1. The
# first one gets torch with every dependency; the next ones share its CUDA
# libraries (the nvidia-* wheels, about 2.7 GB, the same files for every
# Python): torch and its other dependencies are installed, and its
# site-packages/nvidia is a link to the first venv's.
torch_venv() {
  local venv=$1 python=$2 shared
  [ ! -x "$venv/bin/python" ] || return 0
  shared=$(find "$work" -mindepth 5 -maxdepth 5 -path "$work/venv-*/lib/python3*/site-packages/nvidia" -type d | head -n 1)
  "$python" -m venv "$venv"
  local vpip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
  if [ -z "$shared" ]; then
    "${vpip[@]}" install 'torch==2.11.*' >&2
    return
  fi
  "${vpip[@]}" install --no-deps 'torch==2.11.*' >&2
  local requirements
  mapfile -t requirements < <("$venv/bin/python" -c "$torch_requirements")
  "${vpip[@]}" install "${requirements[@]}" >&2
  ln -s "$shared" "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/nvidia"
}

# Installs wheel $2 into venv $1: the wheel itself, then its requirements
# other than torch (which stays the venv's, with its shared CUDA libraries).
install_wheel() {
  local venv=$1 wheel=$2
  local vpip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
  "${vpip[@]}" install --force-reinstall --no-deps "$wheel" || return
  local requirements
  mapfile -t requirements < <(unzip -p "$wheel" '*.dist-info/METADATA' |
    sed -n 's/^Requires-Dist: //p' | grep -v ';' | grep -v '^torch[ <>=!~]' || true)
  [ ${#requirements[@]} -eq 0 ] || "${vpip[@]}" install "${requirements[@]}"
}

run_package() {
  package_info "$1"
  local dir=$work/$key cuwheel
  cuwheel=$(cuwheel_binary)
  local started=$SECONDS
  prepare "$1" "$dir"
  local report=$work/$key.report.md
  {
    echo "## $name $version"
    echo
    echo '```diff'
    diff -u --label "inferred (cuwheel init)" --label "final (scripts/real-extensions/$config)" \
      "$dir/pyproject.inferred.toml" "$dir/pyproject.toml" || true
    echo '```'
    echo
    echo '```'
    (cd "$dir" && "$cuwheel" plan --no-store | tail -n 1)
    echo '```'
  } >"$report"
  local cells_var=CELLS_$key cell
  local cells=(${!cells_var:-$default_cells})
  for cell in "${cells[@]}"; do
    local log=$work/$key.$cell.build.log t0=$SECONDS rc=0
    say "$name: nix build .#wheels.$cell"
    (cd "$dir" && "${nix[@]}" build -L ".#wheels.$cell" -o "$work/result-$key-$cell") >"$log" 2>&1 || rc=$?
    local secs=$((SECONDS - t0))
    local kernels bindings
    kernels=$(grep -cE "^building '/nix/store/[a-z0-9]+-kernel-" "$log" || true)
    bindings=$(grep -cE "^building '/nix/store/[a-z0-9]+-binding-" "$log" || true)
    if [ $rc -ne 0 ]; then
      tail -n 40 "$log" >&2
      printf '| %s | %s | build failed (%s s, see %s) | | | | | |\n' "$name" "$cell" "$secs" "$log" >>"$work/table"
      continue
    fi
    local wheel
    wheel=$(find -L "$work/result-$key-$cell" -maxdepth 1 -name '*.whl' | head -n 1)
    local audit size requires
    audit=$(head -n 1 "$work/result-$key-$cell/audit.txt")
    size=$(stat -L -c %s "$wheel")
    requires=$(unzip -p "$wheel" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p' | paste -sd ';' | sed 's/;/; /g')
    local imports=""
    if [ "${SKIP_IMPORT:-0}" != 1 ]; then
      local tag py path
      tag=$(basename "$wheel" | cut -d- -f3)
      while read -r py path; do
        [ "$tag" = cp39 ] || [ "$tag" = "cp${py#py}" ] || continue
        say "$name: pip install $(basename "$wheel") into a $py venv with torch 2.11"
        torch_venv "$work/venv-$py" "$path"
        local out
        if out=$(install_wheel "$work/venv-$py" "$wheel" 2>&1 &&
          (cd "$work" && "$work/venv-$py/bin/python" -c "$import_check" 2>&1)); then
          imports+="$py ok; "
          echo "$py: $out" >>"$work/$key.imports.log"
        else
          imports+="$py FAILED; "
          echo "$py: $out" >>"$work/$key.imports.log"
          echo "$out" | tail -n 20 >&2
        fi
      done < <(pythons)
    fi
    printf '| %s | %s | %s s | %s | %s (%s bytes) | %s | %s kernel, %s binding compiles | %s |\n' \
      "$name" "$cell" "$secs" "$audit" "$(basename "$wheel")" "$size" "$requires" \
      "$kernels" "$bindings" "${imports:-not run}" >>"$work/table"
  done
  say "$name: done in $((SECONDS - started)) s; report $report"
}

case "${1:-}" in
prepare)
  [ $# -eq 3 ] || die "usage: bash scripts/real-extensions.sh prepare PACKAGE DIR"
  prepare "$2" "$3"
  ;;
run)
  shift
  packages=("$@")
  [ ${#packages[@]} -gt 0 ] || packages=(torch-cluster grouped-gemm)
  work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/cuwheel-real-ext.XXXXXX")}
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  : >"$work/table"
  for package in "${packages[@]}"; do
    run_package "$package"
  done
  echo
  echo "| package | cell | nix build | audit | wheel | Requires-Dist | compiled in this build | pip install + import |"
  echo "|---|---|---|---|---|---|---|---|"
  cat "$work/table"
  echo
  echo "(config diffs and plans: $work/*.report.md; logs: $work/*.log)"
  ! grep -q 'FAILED\|build failed' "$work/table"
  ;;
*) die "usage: bash scripts/real-extensions.sh prepare PACKAGE DIR | run [PACKAGE...]" ;;
esac
