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
# one arch, MAX_JOBS=16) takes longer than one call, so it is resumable: the tree and its ninja
# build directory stay in /tmp/fa, and a call that finds them (the machine kept warm between calls)
# goes on where the last one stopped; ninja skips every object it finished. At LIMIT seconds the
# build's process group is stopped (140 s sooner on a cold machine with PARTIAL=1). CALL=1 (the
# default) also runs the GPU slice on our wheel; PARTIAL=1 compares the objects finished so far
# with our wheel's kernels when upstream's wheel is not there yet (partial.txt). Once upstream's
# wheel exists: compare.py on both wheels, the same GPU slice on it, and its extension module
# xz-compressed into $OUT.
set -u
d=$(pwd)/.devrun
OUT=${OUT:-/tmp/out}
LIMIT=${LIMIT:-540}
mkdir -p "$OUT" /tmp/fa
T0=$SECONDS
CALL=${CALL:-1}
log=$OUT/upstream.txt
warm=$([ -d /tmp/fa/src ] && echo yes || echo no)
echo "call $CALL on $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; /tmp/fa kept from an earlier call: $warm" | tee "$log"
# A cold machine cannot finish the build in this call: stop it sooner, to leave the partial
# comparison its time.
[ "${PARTIAL:-0}" = 1 ] && [ $warm = no ] && LIMIT=$((LIMIT - 140))

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
if [ -z "$up" ]; then
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
  echo "upstream: $(nvcc --version | tail -n 2 | head -n 1); $(/tmp/fa/bv/bin/python -c 'import torch,sys; print("torch", torch.__version__, "python", sys.version.split()[0])'); $(ninja --version 2>/dev/null | sed 's/^/ninja /')" | tee -a "$log"
  (cd /tmp/fa/src && FLASH_ATTENTION_FORCE_BUILD=TRUE FLASH_ATTN_CUDA_ARCHS=90 TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 \
    exec setsid nice -n 5 /tmp/fa/bv/bin/python -m pip wheel . --no-build-isolation --no-deps --disable-pip-version-check -v -w /tmp/fa/wheel \
    >>/tmp/fa/build.log 2>&1) &
  bp=$!
  echo "build started at $((SECONDS - T0)) s of this call" >>"$log"
fi

if [ "$CALL" = 1 ]; then
  FLASH_ATTN_TESTS=$d/test_flash_attn.py timeout $((LIMIT - 60)) bash scripts/corpus/gpu.sh "$d/g" flash_attn >"$OUT/gpu-ours.txt" 2>&1
  echo "gpu ours rc $? at $((SECONDS - T0)) s" >>"$OUT/gpu-ours.txt"
fi

if [ -n "${bp:-}" ]; then
  while kill -0 $bp 2>/dev/null && [ $((SECONDS - T0)) -lt $LIMIT ]; do sleep 5; done
  if kill -0 $bp 2>/dev/null; then
    kill -TERM -- -$bp 2>/dev/null
    sleep 5
    kill -KILL -- -$bp 2>/dev/null
    echo "build stopped at $((SECONDS - T0)) s (the call's limit)" >>"$log"
  else
    wait $bp
    echo "build exited $? at $((SECONDS - T0)) s" >>"$log"
  fi
fi
tail -n 40 /tmp/fa/build.log >>"$log"
nl=$(ls /tmp/fa/src/build/temp.*/.ninja_log 2>/dev/null | head -n 1)
[ -n "$nl" ] && cp "$nl" "$OUT/ninja_log.txt"
objs=$(find /tmp/fa/src/build -name '*.o' -path '*flash_*' 2>/dev/null | wc -l)
echo "objects finished: $objs" | tee -a "$log"
up=$(ls /tmp/fa/wheel/flash_attn-*.whl 2>/dev/null | head -n 1)

if [ -z "$up" ] && [ "$objs" -gt 0 ] && [ "${PARTIAL:-0}" = 1 ]; then
  # The kernels of the objects finished so far, against ours (compare.py's own normalization).
  python3 - "$ours" /tmp/fa/src/build >"$OUT/partial.txt" 2>&1 <<'EOF'
import glob, os, sys, tempfile, zipfile
sys.path.insert(0, "scripts/differential")
import compare
ours, build = sys.argv[1:3]
with tempfile.TemporaryDirectory() as t:
    so = [n for n in zipfile.ZipFile(ours).namelist() if n.endswith(".so")][0]
    zipfile.ZipFile(ours).extract(so, t)
    ka = compare.sass(os.path.join(t, so))
kb = {}
objs = sorted(glob.glob(build + "/**/flash_*.o", recursive=True))
for o in objs:
    kb.update(compare.sass(o))
both = sorted(set(ka) & set(kb))
same = [k for k in both if sorted(map(compare.h, ka[k])) == sorted(map(compare.h, kb[k]))]
print(f"{len(objs)} upstream objects, {len(kb)} kernels; {len(both)} also in our wheel "
      f"({len(ka)} kernels): {len(same)} identical SASS, {len(both) - len(same)} differ")
for k in sorted(set(both) - set(same))[:20]:
    print("  differs:", k)
for k in sorted(set(kb) - set(ka))[:20]:
    print("  only upstream:", k)
EOF
  cat "$OUT/partial.txt"
fi

if [ -n "$up" ]; then
  echo "upstream wheel: $(basename "$up") $(stat -c %s "$up") bytes" | tee -a "$log"
  left=$((LIMIT - (SECONDS - T0)))
  (timeout $((left > 60 ? left : 60)) python3 scripts/differential/compare.py "$ours" "$up" /tmp/fa/cmp >/dev/null 2>&1
    echo "compare rc $?" >>"$log"; cp /tmp/fa/cmp/summary.txt "$OUT/compare-summary.txt"; cp /tmp/fa/cmp/details.txt "$OUT/compare-details.txt") &
  cpid=$!
  (python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); sys.stdout.buffer.write(z.read([n for n in z.namelist() if n.endswith(".so")][0]))' "$up" |
    xz -T16 -6 >"$OUT/upstream-so.xz") &
  mkdir -p /tmp/fa/gu/wheels && cp "$up" /tmp/fa/gu/wheels/ && ln -sfn "$d/g/deps" /tmp/fa/gu/deps
  FLASH_ATTN_TESTS=$d/test_flash_attn.py timeout $((left > 30 ? left : 30)) bash scripts/corpus/gpu.sh /tmp/fa/gu flash_attn >"$OUT/gpu-upstream.txt" 2>&1
  echo "gpu upstream rc $? at $((SECONDS - T0)) s" >>"$OUT/gpu-upstream.txt"
  wait
fi
grep -hE 'checks passed|FAIL|rc |objects|build ' "$OUT"/*.txt | tail -n 40
cat "$OUT/compare-summary.txt" 2>/dev/null
