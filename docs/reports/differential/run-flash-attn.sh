#!/usr/bin/env bash
# What ran on the device for flash-attn's GPU slice and differential (issue 41), as
# `bash docs/reports/differential/run-flash-attn.sh` in a checkout carrying .devrun:
#   .devrun/g/      `corpus.sh bundle`'s layout for flash-attn alone: our wheel packed by
#                   scripts/corpus/xz_bundle.py (xz/), the check's wheels (deps/: pytest, einops)
#   .devrun/test_flash_attn.py   the sdist's tests/test_flash_attn.py (FLASH_ATTN_TESTS)
#   .devrun/sdist/flash_attn-2.8.3.post2.tar.gz   checked against scripts/corpus.sh's sha256
#   .devrun/st/     wheel 0.48.0 (setup.py imports wheel.bdist_wheel; the device lacks it)
# The maintainers' build (`pip wheel . --no-build-isolation`, FLASH_ATTENTION_FORCE_BUILD=TRUE so
# setup.py downloads nothing, FLASH_ATTN_CUDA_ARCHS=90 and TORCH_CUDA_ARCH_LIST=9.0 for the cell's
# one arch, MAX_JOBS=16) takes longer than one call, so it runs in its own process session in
# /tmp/fa, which outlives the call while the machine stays warm: a later call waits for it, or,
# finding the machine cold, starts it again. At LIMIT seconds a call returns and leaves the build
# running. CALL=1 (the default) also runs the GPU slice on our wheel, SLICE=0 no GPU slice at all.
# Once upstream's wheel exists: compare.py on both wheels (one cuobjdump per ELF image, every
# core), the GPU slice on it, and its extension module xz-compressed into $OUT in 15 MiB parts.
# (The first run, for the GPU slices, stopped the build at each call's limit and ninja resumed it.)
set -u
d=$(pwd)/.devrun
OUT=${OUT:-/tmp/out}
LIMIT=${LIMIT:-540}
mkdir -p "$OUT" /tmp/fa
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH # nvcc, and cuobjdump for compare.py
T0=$SECONDS
CALL=${CALL:-1}
SLICE=${SLICE:-1}
log=$OUT/upstream.txt
warm=$([ -d /tmp/fa/src ] && echo yes || echo no)
echo "call $CALL on $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; /tmp/fa kept from an earlier call: $warm" | tee "$log"

# Our wheel, rebuilt from its xz files (checked against its RECORD), for both jobs below.
# (gpu.sh would unpack it again while xz/ is there: moved aside once done.)
if [ -d "$d/g/xz" ]; then
  python3 scripts/corpus/xz_bundle.py unpack "$d/g" >>"$log" 2>&1 && mv "$d/g/xz" "$d/g/xz.done" || echo "xz unpack failed" | tee -a "$log"
fi
ours=$(ls "$d"/g/wheels/flash_attn-*.whl | head -n 1)

if [ ! -d /tmp/fa/src ]; then
  mkdir -p /tmp/fa/x && tar -xzf "$d"/sdist/flash_attn-2.8.3.post2.tar.gz -C /tmp/fa/x && mv /tmp/fa/x/flash_attn-2.8.3.post2 /tmp/fa/src
  python3 -m venv --system-site-packages /tmp/fa/bv
  python3 -c 'import site; print("\n".join(site.getsitepackages()))' >"$(/tmp/fa/bv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/parent-site.pth"
  /tmp/fa/bv/bin/python -m pip install -q --no-index --no-deps "$d"/st/*.whl >>"$log" 2>&1
fi
up=$(ls /tmp/fa/wheel/flash_attn-*.whl 2>/dev/null | head -n 1)
bp=$(cat /tmp/fa/build.pid 2>/dev/null)
if [ -z "$up" ] && [ -n "$bp" ] && kill -0 "$bp" 2>/dev/null; then
  echo "build (pid $bp) still running from an earlier call" | tee -a "$log"
elif [ -z "$up" ]; then
  echo "upstream: $(nvcc --version | tail -n 2 | head -n 1); $(/tmp/fa/bv/bin/python -c 'import torch,sys; print("torch", torch.__version__, "python", sys.version.split()[0])'); $(ninja --version 2>/dev/null | sed 's/^/ninja /')" | tee -a "$log"
  # Its own session: it outlives this call while the machine stays warm.
  (cd /tmp/fa/src && FLASH_ATTENTION_FORCE_BUILD=TRUE FLASH_ATTN_CUDA_ARCHS=90 TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 \
    exec setsid /tmp/fa/bv/bin/python -m pip wheel . --no-build-isolation --no-deps --disable-pip-version-check -v -w /tmp/fa/wheel \
    >>/tmp/fa/build.log 2>&1 </dev/null) &
  bp=$!
  echo "$bp" >/tmp/fa/build.pid
  date +%s >/tmp/fa/build.start
  echo "build started at $((SECONDS - T0)) s of this call" >>"$log"
fi

if [ "$CALL" = 1 ] && [ "$SLICE" = 1 ]; then
  FLASH_ATTN_TESTS=$d/test_flash_attn.py timeout $((LIMIT - 60)) bash scripts/corpus/gpu.sh "$d/g" flash_attn >"$OUT/gpu-ours.txt" 2>&1
  echo "gpu ours rc $? at $((SECONDS - T0)) s" >>"$OUT/gpu-ours.txt"
fi

if [ -z "$up" ]; then
  while [ -z "$(ls /tmp/fa/wheel/flash_attn-*.whl 2>/dev/null)" ] && kill -0 "$bp" 2>/dev/null && [ $((SECONDS - T0)) -lt "$LIMIT" ]; do sleep 5; done
  sleep 2
  if kill -0 "$bp" 2>/dev/null; then
    echo "build still running at $((SECONDS - T0)) s (the call's limit), $(($(date +%s) - $(cat /tmp/fa/build.start))) s since it started" >>"$log"
  else
    echo "build ended at $((SECONDS - T0)) s of this call, $(($(date +%s) - $(cat /tmp/fa/build.start))) s since it started" >>"$log"
  fi
fi
tail -n 20 /tmp/fa/build.log >>"$log"
nl=$(ls /tmp/fa/src/build/temp.*/.ninja_log 2>/dev/null | head -n 1)
[ -n "$nl" ] && cp "$nl" "$OUT/ninja_log.txt"
echo "objects finished: $(find /tmp/fa/src/build -name '*.o' -path '*flash_*' 2>/dev/null | wc -l)" | tee -a "$log"
up=$(ls /tmp/fa/wheel/flash_attn-*.whl 2>/dev/null | head -n 1)

if [ -n "$up" ]; then
  echo "upstream wheel: $(basename "$up") $(stat -c %s "$up") bytes" | tee -a "$log"
  left=$((LIMIT - (SECONDS - T0)))
  (t=$SECONDS; timeout $((left > 60 ? left : 60)) python3 scripts/differential/compare.py "$ours" "$up" /tmp/fa/cmp >/dev/null 2>&1
    echo "compare rc $? in $((SECONDS - t)) s" >>"$log"; cp /tmp/fa/cmp/summary.txt "$OUT/compare-summary.txt"; cp /tmp/fa/cmp/details.txt "$OUT/compare-details.txt") &
  (python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); sys.stdout.buffer.write(z.read([n for n in z.namelist() if n.endswith(".so")][0]))' "$up" |
    xz -T4 -6 | split -b 15M - "$OUT/upstream-so.xz.") &
  if [ "$SLICE" = 1 ]; then
    mkdir -p /tmp/fa/gu/wheels && cp "$up" /tmp/fa/gu/wheels/ && ln -sfn "$d/g/deps" /tmp/fa/gu/deps
    FLASH_ATTN_TESTS=$d/test_flash_attn.py timeout $((left > 30 ? left : 30)) bash scripts/corpus/gpu.sh /tmp/fa/gu flash_attn >"$OUT/gpu-upstream.txt" 2>&1
    echo "gpu upstream rc $? at $((SECONDS - T0)) s" >>"$OUT/gpu-upstream.txt"
  fi
  wait
  sha256sum "$up" | tee -a "$log"
fi
grep -hE 'checks passed|FAIL|rc |objects|build ' "$OUT"/*.txt | tail -n 40
cat "$OUT/compare-summary.txt" 2>/dev/null
