#!/usr/bin/env python3
"""Compares two wheels of one CUDA extension, for scripts/differential.sh.

    python3 compare.py OURS.whl UPSTREAM.whl OUTDIR

Per shared object (matched by its path in the wheel), with cuobjdump
(CUOBJDUMP, default `cuobjdump` on PATH), readelf and nm:
  - the embedded ELF and PTX images per arch (cuobjdump -lelf / -lptx);
  - every kernel's SASS (cuobjdump -sass on each ELF image apart, COMPARE_JOBS
    at a time, default every core), normalized: the /*addr*/ column
    and the /* 0x... */ encoding comments removed, blanks collapsed, and
    the per-translation-unit hash nvcc puts in the names of internal
    symbols (`_GLOBAL__N__2bcb3ac2_6_pdf_cu_…` for an anonymous namespace,
    `_INTERNAL_…` for static ones; it follows the build's file paths)
    masked, in kernel names and in the code that refers to them; a
    kernel that differs is tried again with every hex literal masked, which
    separates code that differs only in offsets or constants;
  - registers, stack, shared, local and constant memory per kernel
    (cuobjdump -res-usage), and local loads/stores (LDL/STL) counted in the
    SASS, what spills become;
  - exported and undefined dynamic symbols (nm -D) and DT_NEEDED/RUNPATH
    (readelf -d);
and of the wheels: their file lists, the METADATA's Requires-Dist and
Requires-Python, and WHEEL's tags.

Writes OUTDIR/summary.txt (also printed) and, for what differs,
OUTDIR/details.txt. Exit 0 whatever differs: the summary says what.
"""

import collections
import difflib
import hashlib
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import zipfile

CUOBJDUMP = os.environ.get("CUOBJDUMP", "cuobjdump")
CAP = 40  # names listed per difference in details.txt
JOBS = int(os.environ.get("COMPARE_JOBS") or os.cpu_count() or 1)  # cuobjdump processes at a time


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.stdout + ("" if p.returncode == 0 else "")


def unpack(wheel, dest):
    with zipfile.ZipFile(wheel) as z:
        z.extractall(dest)
        return sorted(z.namelist())


def dist_info(names, root, leaf):
    for n in names:
        if n.endswith(".dist-info/" + leaf):
            with open(os.path.join(root, n), encoding="utf-8") as f:
                return f.read()
    return ""


def headers(text, key):
    out = []
    for line in text.split("\n\n", 1)[0].splitlines():
        if line.startswith(key + ":"):
            out.append(line.split(":", 1)[1].strip())
    return out


ADDR = re.compile(r"/\*[0-9a-f]{4,}\*/")
ENC = re.compile(r"/\*\s*0x[0-9a-f]+\s*\*/")
HEX = re.compile(r"0x[0-9a-fA-F]+")


# nvcc's per-TU hash in internal symbols' names: _GLOBAL__N__<8 hex>_ and
# _INTERNAL_<8 hex>_ (then the source file's name and its own hash).
TU_HASH = re.compile(r"(_GLOBAL__N__|_INTERNAL_)[0-9a-f]{8}_")


def unhash(name):
    return TU_HASH.sub(r"\1H_", name)


def sass_image(path):
    """sass() of one file: a cubin cuobjdump -xelf wrote (NAME.N.sm_90.cubin), or a whole module."""
    text = run([CUOBJDUMP, "-sass", path])
    kernels = collections.defaultdict(list)
    m = re.search(r"\.(sm_\w+)\.cubin$", path)
    arch, name, body = (m.group(1) if m else None), None, []

    def flush():
        if name is not None:
            kernels[(arch, name)].append("\n".join(body))

    for raw in text.splitlines():
        m = re.match(r"\s*arch = (\S+)", raw)
        if m:
            flush()
            arch, name, body = m.group(1), None, []
            continue
        m = re.match(r"\s*Function : (\S+)", raw)
        if m:
            flush()
            name, body = unhash(m.group(1)), []
            continue
        if name is None:
            continue
        line = unhash(ENC.sub("", ADDR.sub("", raw)))
        line = " ".join(line.split())
        if line and not line.startswith(".") and not line.startswith("----"):
            body.append(line)
    flush()
    return dict(kernels)


def sass(so):
    """{(arch, kernel): [normalized text, ...]} (a kernel may be in several cubins).

    Each embedded ELF image is extracted (cuobjdump -xelf all) and disassembled
    apart, JOBS at a time: one cuobjdump -sass over a 200 MB module (flash-attn)
    runs for many minutes on one core. A module cuobjdump extracts no image
    from is disassembled whole."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([CUOBJDUMP, "-xelf", "all", os.path.abspath(so)], cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        images = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".cubin")) or [so]
        with multiprocessing.Pool(min(JOBS, len(images))) as pool:
            parts = pool.map(sass_image, images, chunksize=1)
    kernels = collections.defaultdict(list)
    for part in parts:
        for k, texts in part.items():
            kernels[k].extend(texts)
    return kernels


def first_difference(a, b, before=5, after=40):
    """A unified diff of the lines around where two SASS texts first diverge (difflib
    over two whole kernels of 100,000 lines each can run for minutes)."""
    la, lb = a.splitlines(), b.splitlines()
    i = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
    lo = max(0, i - before)
    return difflib.unified_diff(la[lo : i + after], lb[lo : i + after], f"ours (from line {lo + 1})", f"upstream (from line {lo + 1})", n=1, lineterm="")


def res_usage(so):
    text = run([CUOBJDUMP, "-res-usage", so])
    out = {}
    arch, name = None, None
    for raw in text.splitlines():
        m = re.match(r"\s*arch = (\S+)", raw)
        if m:
            arch = m.group(1)
            continue
        m = re.match(r"\s*Function (\S+):\s*$", raw)
        if m:
            name = unhash(m.group(1))
            continue
        if name and "REG:" in raw:
            fields = dict(re.findall(r"(\w+(?:\[\d+\])?):(\d+)", raw))
            keep = {k: int(v) for k, v in fields.items() if k in ("REG", "STACK", "SHARED", "LOCAL")}
            out.setdefault((arch, name), []).append(tuple(sorted(keep.items())))
            name = None
    return out


def listing(so, flag):
    names = re.findall(r"(?:ELF|PTX) file\s+\d+: (\S+)", run([CUOBJDUMP, flag, so]))
    return sorted(names)


def dyn(so):
    defined = set(run(["nm", "-D", "--defined-only", so]).split("\n"))
    defined = {" ".join(line.split()[1:]) for line in defined if line.strip()}
    undefined = {line.split()[-1] for line in run(["nm", "-D", "--undefined-only", so]).splitlines() if line.strip()}
    d = run(["readelf", "-d", "-W", so])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", d)
    rpath = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[(.*?)\]", d)
    return defined, undefined, needed, rpath


def h(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def compare_so(rel, ours, theirs, summary, details):
    summary.append(f"== {rel}")
    for flag, what in (("-lelf", "ELF images"), ("-lptx", "PTX images")):
        a, b = listing(ours, flag), listing(theirs, flag)
        arch = lambda names: sorted(collections.Counter(re.sub(r"^.*\.(sm_\d+a?|compute_\d+a?)\..*$", r"\1", n) for n in names).items())  # noqa: E731
        same = "same" if a == b else ("same archs and count, names differ" if arch(a) == arch(b) else "DIFFER")
        summary.append(f"  {what}: ours {len(a)} {arch(a)}, upstream {len(b)} {arch(b)}: {same}")
        if a != b:
            details.append(f"{rel} {what}\n  ours: {a}\n  upstream: {b}")
    ka, kb = sass(ours), sass(theirs)
    only_a = sorted(set(ka) - set(kb))
    only_b = sorted(set(kb) - set(ka))
    both = sorted(set(ka) & set(kb))
    diff_text, diff_masked = [], []
    for k in both:
        if sorted(map(h, ka[k])) != sorted(map(h, kb[k])):
            masked = lambda texts: sorted(h(HEX.sub("0x?", t)) for t in texts)  # noqa: E731
            (diff_masked if masked(ka[k]) != masked(kb[k]) else diff_text).append(k)
    archs = sorted({a for a, _ in ka} | {a for a, _ in kb})
    summary.append(
        f"  kernels (SASS functions) per arch: ours {dict(collections.Counter(a for a, _ in ka))}, "
        f"upstream {dict(collections.Counter(a for a, _ in kb))}; only ours {len(only_a)}, only upstream {len(only_b)}, "
        f"in both {len(both)}: {len(both) - len(diff_text) - len(diff_masked)} identical SASS, "
        f"{len(diff_text)} differ only in hex literals (offsets, constants), {len(diff_masked)} differ in code"
    )
    instr_a = sum(len(t.splitlines()) for v in ka.values() for t in v)
    instr_b = sum(len(t.splitlines()) for v in kb.values() for t in v)
    summary.append(f"  SASS lines: ours {instr_a}, upstream {instr_b}; archs {archs}")
    for title, keys in (("only ours", only_a), ("only upstream", only_b), ("SASS differs only in hex literals", diff_text), ("SASS differs in code", diff_masked)):
        if keys:
            details.append(f"{rel}: {title} ({len(keys)}):\n" + "\n".join(f"  {a} {n}" for a, n in keys[:CAP]))
    for k in (diff_masked + diff_text)[:3]:
        d = first_difference(ka[k][0], kb[k][0])
        details.append(f"{rel}: SASS of {k[0]} {k[1]} where it first differs:\n" + "\n".join(list(d)[:60]))
    ra, rb = res_usage(ours), res_usage(theirs)
    spill = lambda texts: [sum(1 for line in t.splitlines() if re.search(r"\b(LDL|STL)\b", line)) for t in texts]  # noqa: E731
    res_diff = [k for k in sorted(set(ra) & set(rb)) if sorted(ra[k]) != sorted(rb[k])]
    spill_diff = [k for k in both if sorted(spill(ka[k])) != sorted(spill(kb[k]))]
    with_local = sum(1 for k in ka if any(spill(ka[k])))
    summary.append(
        f"  resources (REG/STACK/SHARED/LOCAL): {len(ra)} ours, {len(rb)} upstream, {len(res_diff)} differ; "
        f"LDL/STL counts differ in {len(spill_diff)} kernels; kernels with any LDL/STL: ours {with_local}, "
        f"upstream {sum(1 for k in kb if any(spill(kb[k])))}"
    )
    if res_diff:
        details.append(f"{rel}: resources differ ({len(res_diff)}):\n" + "\n".join(f"  {k[1]}: ours {ra[k]} upstream {rb[k]}" for k in res_diff[:CAP]))
    da, ua, na, pa = dyn(ours)
    db, ub, nb, pb = dyn(theirs)
    summary.append(
        f"  dynamic symbols: exported ours {len(da)}, upstream {len(db)} (only ours {len(da - db)}, only upstream {len(db - da)}); "
        f"undefined ours {len(ua)}, upstream {len(ub)} (only ours {len(ua - ub)}, only upstream {len(ub - ua)})"
    )
    summary.append(f"  DT_NEEDED: ours {na}, upstream {nb}: {'same' if sorted(na) == sorted(nb) else 'DIFFER'}")
    summary.append(f"  RUNPATH: ours {pa}, upstream {pb}")
    for title, s in (("exported only ours", da - db), ("exported only upstream", db - da), ("undefined only ours", ua - ub), ("undefined only upstream", ub - ua)):
        if s:
            details.append(f"{rel}: {title} ({len(s)}):\n" + "\n".join("  " + x for x in sorted(s)[:CAP]))


def module_name(rel):
    """pkg/_C.abi3.so, pkg/_C.cpython-312-x86_64-linux-gnu.so and pkg/_C.so: pkg/_C."""
    return re.sub(r"(\.abi3|\.cpython-[^./]+)?\.so$", "", rel)


def main():
    ours_whl, theirs_whl, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    summary, details = [], []
    with tempfile.TemporaryDirectory() as tmp:
        ra, rb = os.path.join(tmp, "ours"), os.path.join(tmp, "upstream")
        na, nb = unpack(ours_whl, ra), unpack(theirs_whl, rb)
        summary.append(f"ours:     {os.path.basename(ours_whl)} ({os.path.getsize(ours_whl)} bytes, {len(na)} files)")
        summary.append(f"upstream: {os.path.basename(theirs_whl)} ({os.path.getsize(theirs_whl)} bytes, {len(nb)} files)")
        strip = lambda names: {n for n in names if ".dist-info/" not in n}  # noqa: E731
        fa, fb = strip(na), strip(nb)
        summary.append(f"package files (outside .dist-info): ours {len(fa)}, upstream {len(fb)}, only ours {len(fa - fb)}, only upstream {len(fb - fa)}")
        if fa != fb:
            details.append("files only ours:\n" + "\n".join("  " + x for x in sorted(fa - fb)) + "\nfiles only upstream:\n" + "\n".join("  " + x for x in sorted(fb - fa)))
        ma, mb = dist_info(na, ra, "METADATA"), dist_info(nb, rb, "METADATA")
        for key in ("Requires-Dist", "Requires-Python", "Provides-Extra"):
            a, b = sorted(headers(ma, key)), sorted(headers(mb, key))
            summary.append(f"METADATA {key}: {'same' if a == b else 'DIFFER'}: ours {a}; upstream {b}")
        wa, wb = headers(dist_info(na, ra, "WHEEL"), "Tag"), headers(dist_info(nb, rb, "WHEEL"), "Tag")
        summary.append(f"WHEEL Tag: ours {wa}, upstream {wb}")
        # Extension modules pair by their module name: an abi3 wheel's
        # `_C.abi3.so` is a cp312 build's `_C.cpython-312-x86_64-linux-gnu.so`.
        sa, sb = ({module_name(n): n for n in f if n.endswith(".so")} for f in (fa, fb))
        for name in sorted(sa.keys() & sb.keys()):
            rel = sa[name] if sa[name] == sb[name] else f"{sa[name]} | {sb[name]}"
            compare_so(rel, os.path.join(ra, sa[name]), os.path.join(rb, sb[name]), summary, details)
        for name in sorted(sa.keys() ^ sb.keys()):
            summary.append(f"== {sa.get(name) or sb.get(name)}: in one wheel only")
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    with open(os.path.join(out, "details.txt"), "w") as f:
        f.write("\n\n".join(details) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
