#!/usr/bin/env bash
# The corpus's GPU run, on the device machine (torch 2.11+cu130, Python 3.12,
# no network): per wheel in DIR/wheels, a fresh venv that sees the system's
# torch (--system-site-packages), `pip install --no-index` of the wheel and
# of what its check needs (DIR/wheels holds the corpus's own wheels, DIR/deps
# the pure-PyPI dependencies, both gathered on the build machine), then its
# check: scripts/corpus/checks/<module>.py, which compares the CUDA ops with
# the package's own CPU or pure-PyTorch reference, forward and backward.
#
#   bash scripts/corpus/gpu.sh DIR [PACKAGE...]
#
# Prints each check's output and a table; exits 1 if any check failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(cd "${1:?usage: gpu.sh DIR [PACKAGE...]}" && pwd)
shift
python=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
"$python" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'

# wheel distribution name -> check script, and the corpus wheels it needs beside it.
check_of() {
  case "$1" in
  torch_scatter) echo torch_scatter ;;
  torch_sparse) echo "torch_sparse torch_scatter" ;;
  torch_spline_conv) echo torch_spline_conv ;;
  nerfacc) echo nerfacc ;;
  torch_points_kernels) echo torch_points_kernels ;;
  torch_harmonics) echo torch_harmonics ;;
  causal_conv1d) echo causal_conv1d ;;
  chamferdist) echo chamferdist ;;
  pytorch_fast_transformers) echo "fast_transformers" ;;
  mamba_ssm) echo mamba_ssm ;;
  torchsort) echo torchsort ;;
  torch_discounted_cumsum) echo torch_discounted_cumsum ;;
  gsplat) echo "gsplat nerfacc" ;;
  mmcv) echo mmcv ;;
  flash_attn) echo flash_attn ;;
  *) echo "" ;;
  esac
}

# Wheels that travelled xz-compressed (scripts/corpus/xz_bundle.py pack) are rebuilt first.
if [ -d "$dir/xz" ]; then
  "$python" "$here/xz_bundle.py" unpack "$dir" || exit 1
fi

table=""
failed=0
for wheel in "$dir"/wheels/*.whl; do
  dist=$(basename "$wheel" | cut -d- -f1)
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$dist"; then
    continue
  fi
  read -r check extra <<<"$(check_of "$dist")"
  if [ -z "$check" ]; then
    table+="| $dist | no check script | |"$'\n'
    continue
  fi
  venv=$(mktemp -d)/venv
  "$python" -m venv --system-site-packages "$venv"
  # Where python3 is itself a venv (the device's is), --system-site-packages
  # reaches the base interpreter, not that venv's torch: a .pth adds it.
  "$python" -c 'import site; print("\n".join(site.getsitepackages()))' \
    >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/parent-site.pth"
  pip=("$venv/bin/python" -m pip install --disable-pip-version-check -q --no-index --find-links "$dir/wheels" --find-links "$dir/deps")
  needs=$(sed -n 's/^# needs: //p' "$here/checks/$check.py" | head -n 1)
  echo "=== $dist: pip install $(basename "$wheel") ${extra:+($extra) }${needs:+(needs: $needs)}"
  if ! "${pip[@]}" --no-deps "$wheel"; then
    table+="| $dist | pip install failed | |"$'\n'
    failed=1
    continue
  fi
  for other in $extra; do
    "${pip[@]}" --no-deps "$other" || true
  done
  # shellcheck disable=SC2086
  [ -z "$needs" ] || "${pip[@]}" $needs || echo "(installing $needs failed)"
  # What a check names on a `# needs-no-deps:` line is installed without its
  # own requirements (mmcv's name opencv-python and matplotlib, which its ops
  # never import).
  nodeps=$(sed -n 's/^# needs-no-deps: //p' "$here/checks/$check.py" | head -n 1)
  # shellcheck disable=SC2086
  [ -z "$nodeps" ] || "${pip[@]}" --no-deps $nodeps || echo "(installing $nodeps failed)"
  # -P: the checks directory is not put on sys.path (a check named like
  # its package would shadow it); run from / so that no source tree does.
  out=$(cd / && timeout 900 "$venv/bin/python" -P "$here/checks/$check.py" 2>&1)
  rc=$?
  echo "$out"
  summary=$(echo "$out" | grep -E ': [0-9]+/[0-9]+ checks passed' | tail -n 1)
  table+="| $dist | ${summary:-no summary} | exit $rc |"$'\n'
  [ $rc -eq 0 ] || failed=1
done
echo
echo "| package | checks | status |"
echo "|---|---|---|"
printf '%s' "$table"
exit $failed
