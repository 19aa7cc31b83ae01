#!/usr/bin/env bash
# Proof of an aarch64 wheel without an ARM machine (#25): imports it under
# qemu-user on this x86_64 machine, with an aarch64 CPython from Debian and
# the aarch64 torch (and its CUDA libraries) from PyPI, lists the torch ops
# it registers, and checks that cuwheel's static load check agrees with the
# import. docs/reports/aarch64.md records a run.
#
#   bash scripts/aarch64-import.sh WHEEL...
#
# Every wheel must be for aarch64 and one CPython (cp3XY, or abi3: then
# PYTHON, default 3.11). For each wheel, in $WORK (default
# target/aarch64-import; kept, and reused by later runs):
#   1. qemu-user-static, installed with apt-get (saying so) when missing;
#   2. an arm64 root: the dependency closure of Debian's python3.X-minimal,
#      libpython3.X-stdlib and libstdc++6 for arm64, from the Debian suite
#      that carries that Python, downloaded by apt-get with a private
#      configuration (arm64 lists, an empty dpkg status: this machine's apt
#      state is left alone) and unpacked with dpkg-deb;
#   3. torch as the wheel's Requires-Dist asks, for aarch64 with its whole
#      dependency closure: pip install --target with --platform for every
#      manylinux_2_N_aarch64 tag (pip takes no older tag than the ones
#      given);
#   4. `import torch`, then each extension module of the wheel, under
#      qemu-aarch64-static; the ops the import registered with torch;
#   5. `cuwheel audit` with the load check against tables of that torch,
#      its CUDA runtime and the arm64 root (`cuwheel symbols`): the import
#      and the check must agree (both load, or neither).
# Exits 0 when every wheel imports and its check agrees; 1 otherwise.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$HOME/.cargo/bin:$PATH"

[ $# -gt 0 ] || { sed -n '2,27p' "$0" >&2; exit 2; }
work=${WORK:-$repo/target/aarch64-import}
mkdir -p "$work"
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo

if ! command -v qemu-aarch64-static >/dev/null; then
  echo "aarch64-import: qemu-aarch64-static is missing; installing qemu-user-static (apt-get; needs root)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null
fi
cargo build --locked --quiet
cuwheel=$repo/target/debug/cuwheel
pip=$repo/target/demo-venv/bin/pip
[ -x "$pip" ] || { python3 -m venv "$repo/target/demo-venv"; }

# What a wheel is: its Python, its torch requirement, its modules.
inspect() {
  python3 - "$1" <<'EOF'
import re, sys, zipfile
path = sys.argv[1]
name = path.rsplit("/", 1)[-1]
parts = name[:-4].split("-")
python, abi, platform = parts[-3:]
if not platform.endswith("_aarch64"):
    sys.exit(f"{name}: tagged {platform}, not an aarch64 wheel")
with zipfile.ZipFile(path) as z:
    metadata = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    torch = [l.split(":", 1)[1].strip() for l in z.read(metadata).decode().splitlines()
             if l.startswith("Requires-Dist:") and re.match(r"torch\b", l.split(":", 1)[1].strip())]
    modules = [n[:-3].split(".", 1)[0].replace("/", ".") for n in z.namelist()
               if n.endswith(".so") and (".cpython-" in n or ".abi3." in n)]
version = "" if abi == "abi3" else f"{python[2]}.{python[3:]}"
print(version)
print(torch[0].split(";")[0].replace(" ", "") if torch else "torch")
print(" ".join(modules))
EOF
}

# The Debian suite that carries CPython 3.X for arm64.
suite_of() {
  case "$1" in
    3.9) echo bullseye ;; 3.11) echo bookworm ;; 3.13) echo trixie ;;
    3.14|3.15) echo unstable ;;
    *) echo "aarch64-import: no Debian suite carries CPython $1 for arm64 (3.9, 3.11, 3.13, 3.14, 3.15 do)" >&2; return 1 ;;
  esac
}

arm_root() { # PYTHON -> prints the root's path
  local py=$1 suite root apt
  suite=$(suite_of "$py")
  root=$work/root-$py
  if [ ! -e "$root/.done" ]; then
    echo "aarch64-import: arm64 CPython $py from Debian $suite" >&2
    apt=$work/apt-$suite
    rm -rf "$root" "$apt"
    mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$root"
    : > "$apt/status"
    local opts=(-o APT::Architectures::=arm64 -o APT::Architecture=arm64
      -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status"
      -o "Dir::Cache::archives=$apt/archives" -o Debug::NoLocking=1
      -o APT::Default-Release="$suite")
    apt-get -qq "${opts[@]}" update
    apt-get -qq "${opts[@]}" install --download-only -y --no-install-recommends \
      "python$py-minimal" "libpython$py-stdlib" libstdc++6 >/dev/null
    for deb in "$apt"/archives/*.deb; do dpkg-deb -x "$deb" "$root"; done
    touch "$root/.done"
  fi
  echo "$root"
}

torch_site() { # PYTHON REQUIREMENT -> prints the directory's path
  local py=$1 req=$2 site platforms=()
  site=$work/site-$py-$(echo "$req" | tr -c 'A-Za-z0-9.\n' _)
  if [ ! -e "$site/.done" ]; then
    echo "aarch64-import: $req for aarch64 CPython $py (pip, with its CUDA libraries)" >&2
    rm -rf "$site"
    for n in $(seq 17 39); do platforms+=(--platform "manylinux_2_${n}_aarch64"); done
    "$pip" install -q --disable-pip-version-check --target "$site" "${platforms[@]}" \
      --platform manylinux2014_aarch64 --python-version "$py" --implementation cp \
      --abi "cp${py/./}" --only-binary=:all: "$req" >&2
    touch "$site/.done"
  fi
  echo "$site"
}

status=0
for wheel in "$@"; do
  wheel=$(realpath "$wheel")
  name=$(basename "$wheel")
  { read -r py; read -r req; read -r modules; } < <(inspect "$wheel")
  py=${py:-${PYTHON:-3.11}}
  root=$(arm_root "$py")
  site=$(torch_site "$py" "$req")
  ext=$work/ext/$name
  rm -rf "$ext" && mkdir -p "$ext"
  python3 -m zipfile -e "$wheel" "$ext"

  echo "aarch64-import: $name: import under qemu-aarch64-static (CPython $py, $req)"
  set +e
  PYTHONHOME=$root/usr PYTHONPATH=$ext:$site PYTHONDONTWRITEBYTECODE=1 \
    qemu-aarch64-static -L "$root" "$root/usr/bin/python$py" - $modules <<'EOF'
import importlib, platform, sys, time
start = time.time()
import torch
before = set(torch._C._dispatch_get_all_op_names())
print(f"  torch {torch.__version__} (CUDA {torch.version.cuda}) on {platform.machine()}, "
      f"imported in {time.time() - start:.0f} s")
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    public = sorted(n for n in dir(module) if not n.startswith("_"))
    print(f"  imported {name} from {module.__file__.rsplit('/', 1)[-1]}: {', '.join(public) or '(no public names)'}")
ops = sorted(set(torch._C._dispatch_get_all_op_names()) - before)
print(f"  ops registered with torch: {', '.join(ops) if ops else 'none'}")
EOF
  imported=$?
  set -e

  # The static check, against the same torch, its CUDA runtime and the root.
  tables=$work/tables/$py-$(basename "$site")
  mkdir -p "$tables"
  [ -s "$tables/torch.symbols" ] || "$cuwheel" symbols "$site/torch/lib" -o "$tables/torch.symbols"
  [ -s "$tables/cuda.symbols" ] || "$cuwheel" symbols "$site/nvidia/cu13/lib" -o "$tables/cuda.symbols" 2>/dev/null \
    || "$cuwheel" symbols "$site/nvidia/cuda_runtime/lib" -o "$tables/cuda.symbols"
  [ -s "$tables/root.symbols" ] || "$cuwheel" symbols "$root/lib" "$root/usr/lib/aarch64-linux-gnu" -o "$tables/root.symbols"
  version=$(PYTHONPATH=$site python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from importlib.metadata import version; print(version("torch"))' "$site")
  set +e
  "$cuwheel" audit --json --torch "$version=$tables/torch.symbols" \
    --with "CUDA runtime=$tables/cuda.symbols" --with "baseline system=$tables/root.symbols" \
    "$wheel" > "$work/$name.audit.json"
  set -e
  loads=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))[0]; print(all(v["loads"] for v in r["torch_load"]["releases"]))' "$work/$name.audit.json")
  if [ "$imported" = 0 ] && [ "$loads" = True ]; then
    echo "aarch64-import: $name: imports, and the load check agrees (loads with torch $version)"
  elif [ "$imported" != 0 ] && [ "$loads" = False ]; then
    echo "aarch64-import: $name: does not import, and the load check agrees (does not load with torch $version)"
    status=1
  else
    echo "aarch64-import: $name: the import (exit $imported) and the load check (loads: $loads) DISAGREE; see $work/$name.audit.json" >&2
    status=1
  fi
done
exit $status
