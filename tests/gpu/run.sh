#!/usr/bin/env bash
# On the GPU machine, in a copy of the repository: installs each demo_ext
# wheel given (files, or directories holding them) into a fresh venv that
# sees the machine's own torch, which is never reinstalled, and runs
# tests/gpu/check_ops.py three times: as the environment has it; with
# CUDA_DISABLE_PTX_JIT=1, so that only the machine code in the wheel may run;
# and with CUDA_FORCE_PTX_JIT=1, so that only the wheel's PTX runs (on a
# Hopper GPU that is tile_matmul's portable code, where the machine code's
# sm_90a image runs its wgmma code).
# With $OUT set, writes there: nvidia-smi.csv, gpu-results.md (every run's
# Markdown table) and run.log (all output). Exits 1 when anything fails.
#
# usage: bash tests/gpu/run.sh WHEEL_OR_DIR...   (PYTHON= picks the interpreter with torch; default python3)
set -euo pipefail
cd "$(dirname "$0")/../.."

die() {
  echo "gpu/run: $*" >&2
  exit 1
}

python=${PYTHON:-python3}
venv=target/gpu-check/venv

# One venv per wheel: two demo_ext wheels cannot share one.
wheels=()
collect_wheels() {
  local arg
  for arg in "$@"; do
    if [ -d "$arg" ]; then
      local found
      mapfile -t found < <(find "$arg" -maxdepth 1 -name '*.whl' -type f | sort)
      [ ${#found[@]} -gt 0 ] || die "no *.whl in the directory $arg; build them with bash scripts/gpu-prepare.sh and carry gpu-payload"
      wheels+=("${found[@]}")
    elif [ -f "$arg" ] && [[ "$arg" == *.whl ]]; then
      wheels+=("$arg")
    else
      die "$arg is neither a .whl file nor a directory; build the wheels with bash scripts/gpu-prepare.sh and carry gpu-payload"
    fi
  done
}

torch_identity() {
  "$1" -c 'import torch; print(torch.__version__, torch.__file__)'
}

# pip runs from the outer interpreter and installs into the venv (--python,
# pip >= 22.3), so the venv needs neither ensurepip nor a pip of its own.
vpip() {
  "$python" -m pip --python "$venv/bin/python" --disable-pip-version-check "$@"
}

pip_torch_version() {
  vpip show torch | sed -n 's/^Version: //p'
}

make_venv() {
  rm -rf "$venv"
  "$python" -m venv --without-pip --system-site-packages "$venv"
  # --system-site-packages reaches the base interpreter's site-packages only;
  # where python3 is itself a venv (torch installed in it), add that venv's
  # site directories too, through site.addsitedir so its .pth files run.
  local site_packages
  site_packages=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  "$python" - "$site_packages/outer_env.pth" <<'EOF'
import site, sys
if sys.prefix != sys.base_prefix:
    with open(sys.argv[1], "w", encoding="utf-8") as pth:
        for directory in site.getsitepackages():
            pth.write(f"import site; site.addsitedir({directory!r})\n")
EOF
}

# Sets status=1 when a check fails; stops the whole run (die) when the
# install itself goes wrong.
check_wheel() {
  local wheel=$1 torch_before=$2 pip_before=$3
  echo
  echo "=== $(basename "$wheel")"
  sha256sum "$wheel"
  make_venv
  vpip install --no-deps --no-index --no-cache-dir --no-compile "$wheel"

  local torch_after pip_after
  torch_after=$(torch_identity "$venv/bin/python") || die "the venv cannot import torch after installing $wheel"
  pip_after=$(pip_torch_version) || die "pip show torch failed in the venv after installing $wheel"
  echo "torch in the venv: $torch_after; pip show torch: Version $pip_after"
  [ "$torch_after" = "$torch_before" ] && [ "$pip_after" = "$pip_before" ] ||
    die "torch changed: before '$torch_before' (pip $pip_before), after '$torch_after' (pip $pip_after)"
  # demo_ext must come from the wheel, not from a source tree on sys.path.
  "$venv/bin/python" -c 'import importlib.util, sys
origin = importlib.util.find_spec("demo_ext").origin
print("demo_ext from", origin)
sys.exit(not origin.startswith(sys.prefix))' || die "demo_ext was not imported from the venv $venv"

  {
    echo "## $(basename "$wheel")"
    echo
    echo "- sha256: $(sha256sum "$wheel" | cut -d' ' -f1)"
    echo "- torch (untouched by the install: the same version and file before and after): ${torch_after%% *}"
    echo
  } >>"$markdown"
  env -u CUDA_DISABLE_PTX_JIT -u CUDA_FORCE_PTX_JIT "$venv/bin/python" tests/gpu/check_ops.py --markdown "$markdown" || status=1
  env -u CUDA_FORCE_PTX_JIT CUDA_DISABLE_PTX_JIT=1 "$venv/bin/python" tests/gpu/check_ops.py --markdown "$markdown" || status=1
  env -u CUDA_DISABLE_PTX_JIT CUDA_FORCE_PTX_JIT=1 "$venv/bin/python" tests/gpu/check_ops.py --markdown "$markdown" || status=1
}

main() {
  [ $# -gt 0 ] || die "usage: bash tests/gpu/run.sh WHEEL_OR_DIR... (e.g. gpu-payload/*.whl, made by bash scripts/gpu-prepare.sh)"
  collect_wheels "$@"
  command -v nvidia-smi >/dev/null || die "nvidia-smi not found: run this on the GPU machine"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv | tee "$nvidia_smi" ||
    die "nvidia-smi failed: is the NVIDIA driver loaded?"

  local torch_before pip_before
  torch_before=$(torch_identity "$python") ||
    die "$python cannot import torch; run this where torch is installed, or name its interpreter in PYTHON="
  "$python" -c 'import pip, sys; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))' ||
    die "$python needs pip >= 22.3 (for pip --python)"
  make_venv
  pip_before=$(pip_torch_version) || die "pip show torch failed in a venv over $python"
  [ -n "$pip_before" ] || die "pip show torch found no torch in a venv over $python"
  echo "torch before: $torch_before; pip show torch: Version $pip_before"

  status=0
  local wheel
  for wheel in "${wheels[@]}"; do
    check_wheel "$wheel" "$torch_before" "$pip_before"
  done
  echo
  if [ $status -eq 0 ]; then
    echo "gpu/run: every check passed for ${#wheels[@]} wheel(s)"
  else
    echo "gpu/run: FAILED (see the tables above)" >&2
  fi
  return $status
}

export PYTHONUNBUFFERED=1
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  nvidia_smi=$OUT/nvidia-smi.csv markdown=$OUT/gpu-results.md
  : >"$markdown"
  main "$@" 2>&1 | tee "$OUT/run.log"
else
  nvidia_smi=/dev/null markdown=/dev/null
  main "$@"
fi
