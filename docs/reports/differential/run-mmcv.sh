# What ran on the device for mmcv's row of differential.md (issue 41), 2026-12-07, as
# `bash .devrun/run.sh` in a checkout carrying .devrun. scripts/differential.sh's own bundle
# does not fit a device call's 64 MiB (opencv-python-headless's wheel alone is 50 MB), so
# .devrun was put together by hand:
#   g/      `bash scripts/corpus.sh bundle` (our wheel in g/wheels, the check's wheels in
#           g/deps), less numpy and pillow (the device has both) and the other checks'
#           wheels, and with opencv's cv2/data/*.xml (Haar cascades, which mmcv.ops never
#           reads) taken out of its wheel and its RECORD: 1.5 MB;
#   sdist/  mmcv-2.2.0.tar.gz, checked against scripts/corpus.sh's sha256;
#   st/     setuptools 80.9.0 (mmcv's setup.py imports pkg_resources; the device's 81.0.0
#           still has it, with a deprecation warning);
# and the checkout's one large tracked file (examples/demo-ext/archives, 1.4 MB) was moved
# aside for the call. The steps are differential.sh's: upstream.sh, compare.py, gpu.sh.
#!/usr/bin/env bash
# Device call 2 for mmcv (#41): the check's fixed upfirdn2d/filtered_lrelu on our wheel; the
# maintainers' build again, its import probed (call 1: exit 139), and the wheels compared.
set -u
d=.devrun
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
T0=$SECONDS
export PYTHONFAULTHANDLER=1
python3 -m venv --system-site-packages /tmp/bv
python3 -c 'import site; print("\n".join(site.getsitepackages()))' > "$(/tmp/bv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/parent-site.pth"
/tmp/bv/bin/python -m pip install -q --no-index --no-deps "$d"/st/*.whl
( t0=$SECONDS; PYTHON=/tmp/bv/bin/python MAX_JOBS=16 timeout 290 bash scripts/differential/upstream.sh mmcv "$d"/sdist/mmcv-2.2.0.tar.gz /tmp/up > "$OUT/upstream.txt" 2>&1; echo "rc $? after $((SECONDS - t0)) s" >> "$OUT/upstream.txt" ) &
bp=$!
timeout 150 bash scripts/corpus/gpu.sh "$d"/g mmcv > "$OUT/gpu-ours.txt" 2>&1; echo "gpu ours rc $? at $((SECONDS - T0)) s" >> "$OUT/gpu-ours.txt"
wait $bp
tail -2 "$OUT/upstream.txt"
up=$(ls /tmp/up/*.whl 2>/dev/null | head -1)
if [ -n "$up" ]; then
  ( timeout 150 python3 scripts/differential/compare.py "$d"/g/wheels/mmcv-*.whl "$up" /tmp/cmp > "$OUT/compare.txt" 2>&1; echo "compare rc $?" >> "$OUT/compare.txt"; cp -r /tmp/cmp "$OUT/compare" ) &
  cp_=$!
  # Where does the maintainers' wheel crash? Its own venv, the module alone, then mmcv's import.
  python3 -m venv --system-site-packages /tmp/pv
  python3 -c 'import site; print("\n".join(site.getsitepackages()))' > "$(/tmp/pv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/parent-site.pth"
  /tmp/pv/bin/python -m pip install -q --no-index --no-deps --find-links "$d"/g/deps "$up" mmengine addict yapf platformdirs termcolor rich markdown-it-py mdurl pygments pyyaml packaging opencv-python-headless==4.11.0.86 > "$OUT/probe.txt" 2>&1
  so=$(/tmp/pv/bin/python -c 'import importlib.util as u; print(u.find_spec("mmcv").submodule_search_locations[0])')/_ext.cpython-312-x86_64-linux-gnu.so
  { /opt/gcc/bin/g++ --version | head -1; ldd "$so"; readelf -d "$so" | grep -E "NEEDED|RUNPATH"; } >> "$OUT/probe.txt" 2>&1
  for step in "import torch; import mmcv._ext" "import torch, cv2" "import mmcv" "import torch, mmcv; from mmcv.utils import ext_loader; ext_loader.load_ext('_ext', ['nms']); print('ok')"; do
    echo "== $step" >> "$OUT/probe.txt"
    (cd / && timeout 60 /tmp/pv/bin/python -X faulthandler -c "$step") >> "$OUT/probe.txt" 2>&1; echo "rc $?" >> "$OUT/probe.txt"
  done
  mkdir -p /tmp/gu/wheels && cp "$up" /tmp/gu/wheels/ && ln -s "$(pwd)/$d/g/deps" /tmp/gu/deps
  left=$((400 - (SECONDS - T0)))
  [ $left -gt 20 ] && { timeout $left bash scripts/corpus/gpu.sh /tmp/gu mmcv > "$OUT/gpu-upstream.txt" 2>&1; echo "gpu upstream rc $? at $((SECONDS - T0)) s" >> "$OUT/gpu-upstream.txt"; }
  wait $cp_
fi
grep -hE 'checks passed|FAIL|rc ' "$OUT"/gpu-*.txt "$OUT"/probe.txt "$OUT"/compare.txt | tail -40
cat "$OUT"/compare/summary.txt 2>/dev/null | head -40
