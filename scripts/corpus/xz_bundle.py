#!/usr/bin/env python3
"""Fits a GPU bundle into one device call: its large wheels travel as xz-compressed files.

    python3 scripts/corpus/xz_bundle.py pack DIR [--over MB]   (on the build machine)
    python3 scripts/corpus/xz_bundle.py unpack DIR             (on the device; gpu.sh runs it)

A wheel is a zip of deflated files; xz does far better on device code (flash-attn's sm_90 wheel:
59.9 MB as a wheel, 204 MB of files, 13.2 MB as xz). `pack` replaces each wheel of DIR/wheels and
DIR/deps larger than --over MB (default 8) by DIR/xz/<dir>/<wheel>.tar.xz of its files. `unpack`
rebuilds each as DIR/<dir>/<wheel>, after checking every file against the wheel's own RECORD
(sha256): the installed files are the built ones, byte for byte, though the zip around them is
new. Leaves nothing half-written: a wheel is written to a temporary name, then renamed.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import lzma
import os
import sys
import tarfile
import zipfile

KINDS = ("wheels", "deps")


def pack(d: str, over_mb: float) -> None:
    for kind in KINDS:
        for name in sorted(os.listdir(os.path.join(d, kind))) if os.path.isdir(os.path.join(d, kind)) else []:
            wheel = os.path.join(d, kind, name)
            if not name.endswith(".whl") or os.path.getsize(wheel) <= over_mb * 1e6:
                continue
            out_dir = os.path.join(d, "xz", kind)
            os.makedirs(out_dir, exist_ok=True)
            out = os.path.join(out_dir, name + ".tar.xz")
            with zipfile.ZipFile(wheel) as z, lzma.open(out + ".part", "wb", preset=9) as x, \
                    tarfile.open(fileobj=x, mode="w") as t:
                for info in z.infolist():
                    if info.is_dir():
                        continue
                    data = z.read(info)
                    member = tarfile.TarInfo(info.filename)
                    member.size = len(data)
                    member.mode = 0o644
                    t.addfile(member, io.BytesIO(data))
            os.replace(out + ".part", out)
            os.remove(wheel)
            print(f"packed {kind}/{name}: {os.path.getsize(out) / 1e6:.1f} MB")


def unpack(d: str) -> None:
    for kind in KINDS:
        src = os.path.join(d, "xz", kind)
        for name in sorted(os.listdir(src)) if os.path.isdir(src) else []:
            wheel = name[: -len(".tar.xz")]
            files: dict[str, bytes] = {}
            with tarfile.open(os.path.join(src, name)) as t:
                for m in t.getmembers():
                    if m.isfile():
                        files[m.name] = t.extractfile(m).read()
            record = next((k for k in files if k.endswith(".dist-info/RECORD")), None)
            if record is None:
                sys.exit(f"xz_bundle: {name} holds no .dist-info/RECORD; pack it again")
            for path, digest, _ in csv.reader(io.StringIO(files[record].decode())):
                if not digest:
                    continue
                want = digest.split("=", 1)[1]
                got = base64.urlsafe_b64encode(hashlib.sha256(files.get(path, b"")).digest())
                if got.rstrip(b"=").decode() != want:
                    sys.exit(f"xz_bundle: {name}: `{path}` is not what its RECORD says; pack it again")
            os.makedirs(os.path.join(d, kind), exist_ok=True)
            out = os.path.join(d, kind, wheel)
            with zipfile.ZipFile(out + ".part", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
                for path in sorted(files, key=lambda p: (p == record, p)):
                    z.writestr(path, files[path])
            os.replace(out + ".part", out)
            print(f"unpacked {kind}/{wheel}: every file as its RECORD says")


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("action", choices=["pack", "unpack"])
    args.add_argument("dir")
    args.add_argument("--over", type=float, default=8.0, metavar="MB")
    opts = args.parse_args()
    if opts.action == "pack":
        pack(opts.dir, opts.over)
    else:
        unpack(opts.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
