#!/usr/bin/env bash
# cuwheel on a corpus of real CUDA extensions from their PyPI sdists, with
# no hand edit of what `cuwheel init` writes (docs/reports/corpus.md holds
# the results).
#
#   bash scripts/corpus.sh run [PACKAGE...]     (default: every package below)
#       per package, in $WORK/<package>/:
#         1. the sdist, through pip's own index client, checked against the
#            sha256 pinned below (scripts/corpus/sdist.py), unpacked and
#            committed to a fresh git repository;
#         2. `cuwheel init` with only the four restriction flags
#            --torch 2.11 --cuda 13.0 --python 3.12 --cuda-archs 9.0
#            (one cell, one arch: a build that fits 2 cores), which locks,
#            writes flake.lock and stages what it wrote; then a commit;
#            also a dry run without --cuda-archs, for the archs init infers
#            per toolkit (torch 2.11/CUDA 13.0 and torch 2.9/CUDA 12.8);
#         3. `cuwheel fetch`, `nix build .#wheels.<cell>` for every cell (the
#            audit is part of the build), `cuwheel reproduce` with the full
#            check (every derivation of the cell built again);
#         4. scripts/corpus/pip-check.py on each wheel: pip installs it
#            (--no-deps --no-index, the wheel's own Python, ABI and platform
#            as pip's target), and its Requires-Dist resolve with
#            `pip install --dry-run` against a loopback index of stand-ins
#            with the names and versions the real index lists;
#         5. the wheels and their checks copied to $WORK/gpu/ for
#            scripts/corpus/gpu.sh, which the device runs.
#       Prints a results table; every log stays in $WORK.
#   bash scripts/corpus.sh bundle DIR
#       what the device needs for scripts/corpus/gpu.sh: $WORK/gpu/wheels
#       copied to DIR/wheels, and into DIR/deps the cp312 wheels of what the
#       checks' `# needs:` lines name, with their requirements, and what
#       `# needs-no-deps:` lines name, without (pip download; the device has no
#       network). Then, on the device: bash scripts/corpus/gpu.sh DIR.
#       A bundle over one device call's carry: first
#       `python3 scripts/corpus/xz_bundle.py pack DIR` (gpu.sh unpacks it).
#   bash scripts/corpus.sh list
#       the packages, one per line.
#
# Environment: WORK (default a new directory under ${TMPDIR:-/tmp}; reused
# when it exists: a package whose wheel is built is not built again unless
# FRESH=1), CUWHEEL (the cuwheel binary; default this checkout's
# target/release/cuwheel, brought up to date with cargo), CUWHEEL_FLAKE
# (the cuwheel flake the projects name; default this checkout), ARCHIVES
# (where init and lock find Python 3.12's headers, which no Debian suite
# carries; default examples/demo-ext/archives), REPRODUCE=0 (skip step 3's
# reproduce).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

die() {
  echo "corpus: $*" >&2
  exit 1
}
say() { echo "corpus: $(date +%H:%M:%S) $*" >&2; }

nix=(nix --extra-experimental-features 'nix-command flakes'
  --option sandbox true --option sandbox-fallback false --option substituters ''
  --option warn-dirty false --max-jobs auto)

# name version sha256 (of the sdist the index served when this was written).
packages() {
  cat <<'EOF'
torch-spline-conv 1.2.2 ed45a81da29f774665dbdd4709d7e534cdf16d2e7006dbd06957f35bd09661b2
torch-scatter 2.1.2 69b3aa435f2424ac6a1bfb6ff702da6eb73b33ca0db38fb26989c74159258e47
chamferdist 1.0.3 ac9d3a723329d230bcdd5ee8a01f13632ebae31b2ae221116579637ed57a4567
torch-points-kernels 0.7.0 a93d6c69fe2035e81c066b6ca6d2264cecdb368677152a231a69f686f00f6571
nerfacc 0.5.3 01850cbbd71b6aeab059cbfb695755f8b6604f3fdfe48c44925b4b97c0c324db
causal-conv1d 1.5.2 9b7d8ec8d07e3590a1dfa010e4e87d1442635c3f96d665a3c1ce3025d8cc4b84
torch-sparse 0.6.18 2f14c510a6e93f404c6ea357210615b3c15a71731f9dbd86f25434e34fb5a741
torch-harmonics 0.8.1 f9ff6b2a877e492c9a9fa98dec85eb4be36265e4ec737127fb6eb2537337e9ff
pytorch-fast-transformers 0.4.0 d1826bc31b9dfbcd018998b897667e89fc6566bd3f8c424cda9f0943544f7e90
mamba-ssm 2.3.0 8294e12125f76021e4e190f4137e84a84935920eeda5d0037a6917524456b303
torchsort 0.1.10 416a7dd2ab88332b27e98318d7fb2e0243b9fb6f1fffcf77760d63103d70dd04
torch-discounted-cumsum 1.1.0 34e6a7e10f416a7aa84e5fb4e00d6a84a0cfbb0a68bcf22a3434488360f0ea37
gsplat 1.0.0 77fb247b38e2db3f616beb30ee3a5cb9928492056390d6e617b6815b70bedc0d
mmcv 2.2.0 ac479247e808d8802f89eadf04d4118de86bdfe81361ec5aed0cc1bf731c67c9
flash-attn 2.8.3.post2 d0f9f0b08a986cdeadbffcf5ec8b3a8f514366c68ad1853d3ab061bc83cc340b
EOF
}

cuwheel_binary() {
  if [ -n "${CUWHEEL:-}" ]; then
    echo "$CUWHEEL"
    return
  fi
  say "building cuwheel (cargo build --release)"
  (cd "$repo" && cargo build --release --locked --quiet >&2)
  echo "$repo/target/release/cuwheel"
}

commit() {
  git -c user.name=corpus -c user.email=corpus@localhost commit -qm "$1"
}

# run_package NAME VERSION SHA256
run_package() {
  local name=$1 version=$2 sha256=$3
  local dir=$work/$name
  local row=$work/$name.row
  if [ -f "$row" ] && [ "${FRESH:-0}" != 1 ]; then
    say "$name: done before ($row); FRESH=1 builds it again"
    return
  fi
  rm -rf "$dir" "$dir".*.log
  mkdir -p "$dir/sdist"
  say "$name $version: sdist"
  local archive
  archive=$(python3 "$repo/scripts/corpus/sdist.py" "$name" "$version" "$sha256" "$dir/sdist")
  local top
  top=$(tar -tzf "$archive" | head -n 1 | cut -d/ -f1)
  tar -xzf "$archive" -C "$dir" --no-same-owner
  mv "$dir/$top" "$dir/src"
  cd "$dir/src"
  git init -q
  git add -A
  commit "$name $version: the sdist"
  say "$name: cuwheel init (dry run per toolkit)"
  "$cuwheel" init . --dry-run --torch 2.11,2.9 --cuda 13.0,12.8 --python 3.12 \
    >"$dir/init-per-toolkit.toml" 2>"$dir.init-per-toolkit.log" || true
  say "$name: cuwheel init --torch 2.11 --cuda 13.0 --python 3.12 --cuda-archs 9.0"
  local t0=$SECONDS rc=0
  "$cuwheel" init . --torch 2.11 --cuda 13.0 --python 3.12 --cuda-archs 9.0 \
    >"$dir.init.log" 2>&1 || rc=$?
  local init_secs=$((SECONDS - t0))
  if [ $rc -ne 0 ]; then
    tail -n 20 "$dir.init.log" >&2
    printf '| %s %s | init failed (%s s): %s | | | | | | |\n' "$name" "$version" "$init_secs" \
      "$(grep -m1 '^error' "$dir.init.log" | cut -c1-200)" >"$row"
    return
  fi
  commit "cuwheel init"
  say "$name: cuwheel fetch"
  "$cuwheel" fetch >"$dir.fetch.log" 2>&1 || {
    tail -n 20 "$dir.fetch.log" >&2
    printf '| %s %s | fetch failed | | | | | | |\n' "$name" "$version" >"$row"
    return
  }
  local cells
  cells=$("$cuwheel" plan --no-store --json | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["cells"]))')
  local cell built="" build_secs=0 kernels=0 bindings=0 audit="" reproduced="" piped="" wheels=()
  for cell in $cells; do
    say "$name: nix build .#wheels.$cell"
    t0=$SECONDS rc=0
    "${nix[@]}" build -L ".#wheels.$cell" -o "$dir/result-$cell" >"$dir.build-$cell.log" 2>&1 || rc=$?
    build_secs=$((build_secs + SECONDS - t0))
    kernels=$((kernels + $(grep -cE "^building '/nix/store/[a-z0-9]+-kernel-" "$dir.build-$cell.log" || true)))
    bindings=$((bindings + $(grep -cE "^building '/nix/store/[a-z0-9]+-binding-" "$dir.build-$cell.log" || true)))
    if [ $rc -ne 0 ]; then
      tail -n 40 "$dir.build-$cell.log" >&2
      built+="$cell failed; "
      continue
    fi
    local wheel
    wheel=$(find -L "$dir/result-$cell" -maxdepth 1 -name '*.whl' | head -n 1)
    wheels+=("$wheel")
    audit+="$(head -n 1 "$dir/result-$cell/audit.txt"); "
    say "$name: pip-check $(basename "$wheel")"
    piped+="$(python3 "$repo/scripts/corpus/pip-check.py" "$wheel" "$dir" 3.12 2>&1 | tail -n 1 | sed 's/^pip-check: //'); "
    built+="$cell ok; "
    if [ "${REPRODUCE:-1}" != 0 ]; then
      say "$name: cuwheel reproduce $(basename "$wheel") (full check)"
      t0=$SECONDS rc=0
      "$cuwheel" reproduce "$wheel" >"$dir.reproduce-$cell.log" 2>&1 || rc=$?
      case $rc in
      0) reproduced+="identical ($((SECONDS - t0)) s); " ;;
      3) reproduced+="DIFFERS (see $dir.reproduce-$cell.log); " ;;
      *) reproduced+="could not run (exit $rc, $dir.reproduce-$cell.log); " ;;
      esac
    fi
  done
  mkdir -p "$work/gpu/wheels"
  local w
  for w in "${wheels[@]}"; do
    cp -f "$w" "$work/gpu/wheels/"
  done
  local archs
  archs=$(grep -m1 '^cuda-archs' "$dir/init-per-toolkit.toml" | sed 's/^cuda-archs = //' || true)
  printf '| %s %s | %s | %s | %s s init, %s s build | %s kernel, %s binding | %s | %s | %s |\n' \
    "$name" "$version" "${built% ; }" "${archs:-none inferred}" "$init_secs" "$build_secs" \
    "$kernels" "$bindings" "${audit%; }" "${reproduced:-not run}" "${piped%; }" >"$row"
  say "$name: $(cat "$row")"
}

case "${1:-}" in
bundle)
  [ $# -eq 2 ] || die "usage: bash scripts/corpus.sh bundle DIR"
  [ -n "${WORK:-}" ] || die "name the run's directory in WORK"
  mkdir -p "$2/wheels" "$2/deps"
  cp -f "$WORK"/gpu/wheels/*.whl "$2/wheels/"
  needs=$(sed -n 's/^# needs: //p' "$repo"/scripts/corpus/checks/*.py | tr ' ' '\n' | sort -u)
  # shellcheck disable=SC2086
  [ -z "$needs" ] || python3 -m pip download -q --disable-pip-version-check --only-binary :all: \
    --python-version 3.12 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    -d "$2/deps" $needs
  nodeps=$(sed -n 's/^# needs-no-deps: //p' "$repo"/scripts/corpus/checks/*.py | tr ' ' '\n' | sort -u)
  # shellcheck disable=SC2086
  [ -z "$nodeps" ] || python3 -m pip download -q --disable-pip-version-check --only-binary :all: --no-deps \
    --python-version 3.12 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    -d "$2/deps" $nodeps
  ;;
list)
  packages | cut -d' ' -f1-2
  ;;
run)
  shift
  work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/cuwheel-corpus.XXXXXX")}
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  case "$work/" in
  "$repo"/*) die "WORK=$work is inside the cuwheel checkout; name a directory outside it" ;;
  esac
  cuwheel=$(cuwheel_binary)
  export CUWHEEL_FLAKE=${CUWHEEL_FLAKE:-git+file://$repo}
  export CUWHEEL_ARCHIVES=${ARCHIVES:-$repo/examples/demo-ext/archives}
  wanted=("$@")
  while read -r name version sha256; do
    if [ ${#wanted[@]} -gt 0 ] && ! printf '%s\n' "${wanted[@]}" | grep -qx "$name"; then
      continue
    fi
    (run_package "$name" "$version" "$sha256") || say "$name: stopped (see $work/$name.*.log)"
  done < <(packages)
  echo
  echo "| package | cells built | archs init infers per toolkit (no --cuda-archs) | seconds | compiled | audit | reproduce (full check) | pip |"
  echo "|---|---|---|---|---|---|---|---|"
  cat "$work"/*.row 2>/dev/null || true
  echo
  echo "(logs: $work/*.log; wheels for the GPU run: $work/gpu/wheels)"
  ;;
*) die "usage: bash scripts/corpus.sh run [PACKAGE...] | bundle DIR | list" ;;
esac
