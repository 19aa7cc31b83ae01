#!/usr/bin/env bash
# The PyPI channel end to end on a GPU machine with no network: `cuwheel upload` sends the
# demo's PyPI-variant wheels (no local label) with real twine to a real pypiserver on loopback
# that demands a password, real pip installs demo-ext from that index next to the machine's own
# torch, and its three CUDA operations run on the GPU against torch's own arithmetic. A wrong
# password stores nothing; a wheel with a local label is refused before twine starts.
#
#   bash scripts/pypi-gpu.sh DIR
#
# DIR (copied to the machine; `docs/guide/publishing.md` says how it is made) holds:
#   cuwheel   the cuwheel binary (target/release/cuwheel)
#   wheels/   pypiserver, passlib, twine and their dependencies, as wheels for this Python
#   dist/     the PyPI variant's wheels (`nix run .#publish -- --pypi DIR/dist`)
#   labelled/ one labelled wheel of the same cell (`0.1.0+pt211cu130`)
# Prints what each step did; exits non-zero at the first that does not do what it should.
set -euo pipefail
dir=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

python3 -m venv --system-site-packages "$work/tools"
"$work/tools/bin/pip" install -q --no-index --find-links "$dir/wheels" pypiserver passlib twine
"$work/tools/bin/python" - "$work/htpasswd" <<'PY'
import sys
from passlib.apache import HtpasswdFile
h = HtpasswdFile(sys.argv[1], new=True)
h.set_password("maintainer", "gpu-check-password")
h.save()
PY
port=$("$work/tools/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/packages"
"$work/tools/bin/pypi-server" run --host 127.0.0.1 --port "$port" --authenticate update \
  --passwords "$work/htpasswd" --disable-fallback "$work/packages" 2>"$work/server.log" &
server=$!
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.2
done
url="http://127.0.0.1:$port/"
upload() {
  TWINE_USERNAME=maintainer TWINE_PASSWORD=$1 "$dir/cuwheel" upload --repository-url "$url" \
    --twine "$work/tools/bin/twine" "${@:2}"
}

echo "pypi-gpu: a wrong password"
if upload wrong-password "$dir"/dist/*.whl >"$work/wrong.log" 2>&1; then
  echo "pypi-gpu: FAIL: the server took a wrong password" >&2; exit 1
fi
[ -z "$(ls "$work/packages")" ] || { echo "pypi-gpu: FAIL: stored after a wrong password" >&2; exit 1; }
echo "pypi-gpu: refused, nothing stored"

echo "pypi-gpu: a labelled wheel"
if upload gpu-check-password "$dir"/labelled/*.whl >"$work/labelled.log" 2>&1; then
  echo "pypi-gpu: FAIL: a local version was uploaded" >&2; exit 1
fi
grep -o "has a local label, and PyPI refuses local versions" "$work/labelled.log"
grep -q "uploading with" "$work/labelled.log" && { echo "pypi-gpu: FAIL: twine ran" >&2; exit 1; }

echo "pypi-gpu: the PyPI variant"
upload gpu-check-password "$dir"/dist/*.whl
ls -l "$work/packages"
for wheel in "$dir"/dist/*.whl; do
  cmp "$wheel" "$work/packages/$(basename "$wheel")"
done
echo "pypi-gpu: stored byte for byte"

python3 -m venv --system-site-packages "$work/user"
# Where python3 is itself a venv (the GPU machine's is), --system-site-packages reaches the base
# interpreter, not that venv's torch: a .pth adds it.
python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
  >"$("$work/user/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/parent-site.pth"
"$work/user/bin/pip" install --disable-pip-version-check --no-cache-dir \
  --index-url "${url}simple/" demo-ext==0.1.0
cd "$work"
"$work/user/bin/python" - <<'PY'
import importlib.metadata as md
import torch
import demo_ext

print("demo-ext", md.version("demo-ext"), "from", demo_ext.__file__)
print("torch", torch.__version__, "on", torch.cuda.get_device_name())
torch.manual_seed(0)
x = torch.randn(64, 256, device="cuda", dtype=torch.float32, requires_grad=True)
y = torch.randn(64, 256, device="cuda")
bias = torch.randn(256, device="cuda")
checks = {
    "axpby": (demo_ext.axpby(x, y, 2.0, -0.5), 2.0 * x - 0.5 * y),
    "row_norm": (demo_ext.row_norm(x), x.norm(dim=1)),
    "bias_gelu": (demo_ext.bias_gelu(x, bias),
                  torch.nn.functional.gelu(x + bias, approximate="tanh")),
}
failed = 0
for name, (got, want) in checks.items():
    ok = torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    (g,) = torch.autograd.grad(got.sum(), x)
    (w,) = torch.autograd.grad(want.sum(), x)
    grad_ok = torch.allclose(g, w, rtol=1e-4, atol=1e-5)
    print(f"{name}: forward {'ok' if ok else 'DIFFERS'}, backward {'ok' if grad_ok else 'DIFFERS'}"
          f" (max |diff| {(got - want).abs().max().item():.2e})")
    failed += (not ok) + (not grad_ok)
raise SystemExit(failed)
PY
echo "pypi-gpu: every check passed"
