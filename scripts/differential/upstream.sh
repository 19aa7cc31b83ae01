#!/usr/bin/env bash
# The maintainers' build of one corpus package, for scripts/differential.sh:
# on a machine with nvcc, torch and the cell's Python (the device machine:
# nvcc 13.0, torch 2.11.0+cu130, Python 3.12),
#   pip wheel . --no-build-isolation --no-deps
# through the package's own setup.py and torch.utils.cpp_extension, with
# TORCH_CUDA_ARCH_LIST=9.0 (the arch of the cell cuwheel's wheel was built
# for). Where setup.py hard-codes an arch list, the smallest patch that makes
# it build for 9.0 alone is applied; each is printed, and written to
# OUTDIR/<package>.patch.
#
#   bash scripts/differential/upstream.sh PACKAGE SDIST OUTDIR
#
# Leaves the wheel in OUTDIR and pip's log in OUTDIR/<package>.build.log.
set -euo pipefail
name=${1:?usage: upstream.sh PACKAGE SDIST OUTDIR}
sdist=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
out=$(mkdir -p "$3" && cd "$3" && pwd)
python=${PYTHON:-python3}
src=$(mktemp -d)
tar -xzf "$sdist" -C "$src"
top=$(find "$src" -mindepth 1 -maxdepth 1 -type d | head -n 1)
cp -a "$top" "$top.orig"
cd "$top"
case "$name" in
pytorch-fast-transformers)
  # Every CUDAExtension passes extra_compile_args=["-arch=compute_50"] (one
  # list, which torch hands nvcc; its sources are all .cu, so g++ never sees
  # it). nvcc 13 refuses compute_50 ("Unsupported gpu architecture"), so the
  # flag goes; TORCH_CUDA_ARCH_LIST=9.0 then picks the arch, as the cell's
  # --cuda-archs 9.0 did for cuwheel.
  sed -i 's/extra_compile_args=\["-arch=compute_50"\]/extra_compile_args=[]/' setup.py
  ;;
mamba-ssm | causal-conv1d)
  # setup.py builds its own -gencode list per nvcc version on top of
  # torch's (mamba-ssm for 13.0: sm_75, 80, 87, 90, 100, 120, 103, 110, 121;
  # causal-conv1d: sm_53, 62, 70, 72, 80, 87, 90, 100, the first four of
  # which nvcc 13 refuses); it is cut to sm_90, the cell's one arch, right
  # after it is built (both files mark the spot with the same comment).
  # MAMBA_FORCE_BUILD / CAUSAL_CONV1D_FORCE_BUILD (below) skip their
  # download of a prebuilt wheel.
  sed -i 's/^    # HACK: The compiler flag -D_GLIBCXX_USE_CXX11_ABI/    cc_flag = ["-gencode", "arch=compute_90,code=sm_90"]  # differential: the cell'"'"'s one arch\n&/' setup.py
  ;;
nerfacc | torch-points-kernels | gsplat)
  # setup.py asks torch for its distutils backend (use_ninja=False), which
  # compiles the sources one after another: nerfacc's and
  # torch-points-kernels' builds outran a device call that way. The ninja
  # backend runs the same nvcc and g++ command lines, MAX_JOBS at a time.
  sed -i 's/use_ninja=False/use_ninja=True/' setup.py
  # ninja runs in the build directory, where the relative include dirs of
  # gsplat and torch-points-kernels name nothing (the distutils backend
  # ran in the source tree): the same dirs, made absolute.
  case "$name" in
  gsplat) sed -i 's/include_dirs=\[extensions_dir_v2\]/include_dirs=[osp.abspath(extensions_dir_v2)]/' setup.py ;;
  torch-points-kernels)
    sed -i 's/include_dirs=\["{}\/include".format(\([a-z_]*\))\]/include_dirs=[os.path.abspath("{}\/include".format(\1))]/' setup.py
    # cpu/src/neighbors.cpp uses std::unique_ptr without <memory>, which
    # the device's g++ 13 headers no longer bring in through <random> and
    # <chrono>; the g++ 10 of cuwheel's cell (Debian 11's) compiles it as it is.
    sed -i 's/^#include <chrono>$/#include <memory>\n&/' cpu/src/neighbors.cpp
    ;;
  esac
  ;;
*)
  ;;
esac
(cd "$src" && diff -ru "$(basename "$top").orig" "$(basename "$top")") >"$out/$name.patch" || true
echo "upstream: $name: patch applied to the sdist:"
cat "$out/$name.patch"
export TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=${MAX_JOBS:-16} MAMBA_FORCE_BUILD=TRUE CAUSAL_CONV1D_FORCE_BUILD=TRUE
command -v nvcc >/dev/null || export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
echo "upstream: $name: $(nvcc --version | tail -n 2 | head -n 1); $("$python" -c 'import torch,sys; print("torch", torch.__version__, "python", sys.version.split()[0])')"
t0=$SECONDS
if [ "${EXT_JOBS:-1}" -gt 1 ]; then
  # setup.py builds its extensions one after the other (fast-transformers:
  # 15 single-TU modules: `pip wheel` did not finish within a device call's
  # limit, twice, once 318 s after a parallel `setup.py build_ext` had
  # built them all in 102 s). So: `setup.py build_ext -j EXT_JOBS bdist_wheel`, one setup.py
  # run, all modules at once, the wheel from the same build. torch's ninja
  # backend writes one build.ninja per build_temp, which parallel modules
  # would share, so ninja is kept off PATH: torch falls back to its
  # distutils backend, which passes the same flags to the same nvcc and g++.
  nopath=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r d; do [ -x "$d/ninja" ] || printf '%s:' "$d"; done)
  PATH=${nopath%:} "$(command -v "$python")" setup.py build_ext -j "$EXT_JOBS" bdist_wheel -d "$out" \
    >"$out/$name.build.log" 2>&1 || { tail -n 60 "$out/$name.build.log"; exit 1; }
else
  "$python" -m pip wheel . --no-build-isolation --no-deps --disable-pip-version-check -v -w "$out" \
    >"$out/$name.build.log" 2>&1 || { tail -n 60 "$out/$name.build.log"; exit 1; }
fi
echo "upstream: $name: built in $((SECONDS - t0)) s: $(cd "$out" && ls ./*.whl)"
rm -rf "$src"
