#!/usr/bin/env python3
"""`cuwheel audit` against `auditwheel show` on big official wheels, in one run on this machine:
wall time, CPU time and peak memory (max RSS) of each, the platform tag each gives, and whether
cuwheel's leak check raises anything. Prints one table, with the goal (at least 5x auditwheel's
speed in at most 256 MB on every torch wheel) met or not; `--markdown FILE` writes it as Markdown
too.

In:  the repository this file lives in (cuwheel is built with `cargo build --release`), pip's
     configured index for the wheels and for auditwheel (downloaded once into target/bench/,
     untimed; a wheel the demo's cuwheel.lock pins is taken from the Nix store instead, the same
     bytes by its sha256). Out: the table on stdout.

Not a test: its figures are timings. See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "target" / "bench"
AUDITWHEEL = "auditwheel==6.8.2"
# What is audited: pip requirement, and the file-name prefix of the wheel it downloads.
WHEELS = [
    ("torch==2.7.1", "torch-2.7.1-"),
    ("torch==2.9.1", "torch-2.9.1-"),
    ("torch==2.11.0", "torch-2.11.0-"),
    ("torch==2.14.1", "torch-2.14.1-"),
    ("torch==2.15.0", "torch-2.15.0-"),
    ("nvidia-cublas==13.1.1.3", "nvidia_cublas-13.1.1.3-"),
]
# The goal on the torch wheels.
GOAL_SPEEDUP = 5.0
GOAL_RSS_MB = 256
PIP_TARGET = ["--only-binary=:all:", "--no-deps", "--implementation", "cp", "--python-version",
              "3.12", "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_27_x86_64",
              "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64"]


class BenchError(Exception):
    """A step failed; the message says which and what to do."""


@dataclass
class Run:
    wall: float
    cpu: float
    max_rss_mb: float
    stdout: str


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise BenchError(f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n{result.stderr}")
    return result


def measured(cmd: list[str], ok_codes: tuple[int, ...], env: dict[str, str]) -> Run:
    """Runs `cmd` alone under /usr/bin/time (a small process, so the max RSS is the
    command's own, not this Python's inherited at fork), timing it with the clock and
    reading its CPU time from the rusage of its process tree (os.wait4)."""
    with tempfile.NamedTemporaryFile("r") as rss:
        start = time.monotonic()
        process = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss.name, *cmd],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        stdout = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - start
        max_rss_kb = int(rss.read().strip().splitlines()[-1])
    code = os.waitstatus_to_exitcode(status)
    if code not in ok_codes:
        raise BenchError(f"{' '.join(map(str, cmd))} exited {code}")
    return Run(wall, usage.ru_utime + usage.ru_stime, max_rss_kb / 1024, stdout.decode())


def store_copy(prefix: str) -> Path | None:
    """The x86_64 wheel the demo's lock pins under `prefix`, if the Nix store holds it (the lock
    pins aarch64 wheels of the same names too: those are not what pip would download here)."""
    lock = json.loads((REPO / "examples/demo-ext/cuwheel.lock").read_text())
    for name, artifact in lock.get("artifacts", {}).items():
        file = artifact["file"]
        if file.startswith(prefix) and file.endswith("_x86_64.whl"):
            for path in Path("/nix/store").glob(f"*-{name}"):
                digest = hashlib.sha256()
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 24), b""):
                        digest.update(chunk)
                if digest.hexdigest() == artifact["sha256"]:
                    return path
    return None


def fetch_wheel(requirement: str, prefix: str, dest: Path, python: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    found = sorted(dest.glob(f"{prefix}*.whl"))
    if found:
        return found[0]
    stored = store_copy(prefix)
    if stored is not None:
        link = dest / stored.name.split("-", 1)[1]
        link.symlink_to(stored)
        return link
    print(f"bench: pip download {requirement}", file=sys.stderr)
    run([str(python), "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", str(dest),
         *PIP_TARGET, requirement])
    found = sorted(dest.glob(f"{prefix}*.whl"))
    if not found:
        raise BenchError(f"pip download {requirement} gave no {prefix}*.whl in {dest}")
    return found[0]


def auditwheel_venv() -> Path:
    venv = WORK / "venv-auditwheel"
    python = venv / "bin" / "python"
    stamp = venv / "requirement"
    if not (stamp.is_file() and stamp.read_text() == AUDITWHEEL):
        print(f"bench: venv with {AUDITWHEEL}", file=sys.stderr)
        run([sys.executable, "-m", "venv", "--clear", str(venv)])
        run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", AUDITWHEEL])
        stamp.write_text(AUDITWHEEL)
    return python


def warm(path: Path) -> None:
    """Reads the file once, so neither tool pays for the first read from disk."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", type=Path, help="also write the table as Markdown here")
    parser.add_argument("--only", action="append", help="a prefix from the wheel list (repeatable)")
    parser.add_argument("--tmpdir", default="/dev/shm",
                        help="TMPDIR of both tools (default /dev/shm, a tmpfs: auditwheel unpacks "
                             "the whole wheel there, cuwheel keeps its ELF files over 32 MiB there; "
                             "on this machine's disk auditwheel took a third longer); '' keeps the "
                             "environment's")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.tmpdir:
        if not os.access(args.tmpdir, os.W_OK):
            raise BenchError(f"--tmpdir {args.tmpdir!r} is not a writable directory; give another, "
                             "or --tmpdir '' for the environment's TMPDIR")
        env["TMPDIR"] = args.tmpdir
    tmpdir = env.get("TMPDIR", tempfile.gettempdir())

    run(["cargo", "build", "--release", "--locked", "--quiet"], cwd=REPO)
    cuwheel = REPO / "target" / "release" / "cuwheel"
    python = auditwheel_venv()
    auditwheel = python.parent / "auditwheel"

    rows = []
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    for requirement, prefix in WHEELS:
        if args.only and not any(prefix.startswith(o) or requirement.startswith(o) for o in args.only):
            continue
        wheel = fetch_wheel(requirement, prefix, WORK / "audit-wheels", python)
        warm(wheel)
        print(f"bench: auditwheel show {wheel.name}", file=sys.stderr)
        theirs = measured([str(auditwheel), "show", "--json", str(wheel)], (0,), env)
        warm(wheel)
        print(f"bench: cuwheel audit {wheel.name}", file=sys.stderr)
        # Judged as auditwheel judges (no libraries assumed provided): the same work, comparable tags.
        ours = measured([str(cuwheel), "audit", "--json", "--no-runtime-provided", str(wheel)], (0, 3), env)
        report = json.loads(ours.stdout)[0]
        their_tag = json.loads(theirs.stdout)["overall_tag"]
        our_tag = (report.get("platform") or {}).get("allowed")
        leaks = sum(1 for f in report["findings"] if f["check"] == "leak")
        rows.append({
            "wheel": wheel.name,
            "size_mb": wheel.stat().st_size / 1e6,
            "ours": ours,
            "theirs": theirs,
            "tags": f"{our_tag} / {their_tag}",
            "agree": our_tag == their_tag,
            "leaks": leaks,
        })
    total = time.monotonic() - started

    header = ["wheel", "MB", "cuwheel wall s", "CPU s", "max RSS MB", "auditwheel wall s", "CPU s",
              "max RSS MB", "wall speedup", "goal", "tag (cuwheel / auditwheel)", "leak findings"]
    lines = []
    missed = []
    for r in rows:
        o, t = r["ours"], r["theirs"]
        speedup = t.wall / o.wall
        goal = "-"
        if r["wheel"].startswith("torch-"):
            met = speedup >= GOAL_SPEEDUP and o.max_rss_mb <= GOAL_RSS_MB
            goal = "met" if met else "MISSED"
            if not met:
                missed.append(r["wheel"])
        lines.append([r["wheel"], f"{r['size_mb']:.0f}", f"{o.wall:.1f}", f"{o.cpu:.1f}",
                      f"{o.max_rss_mb:.0f}", f"{t.wall:.1f}", f"{t.cpu:.1f}", f"{t.max_rss_mb:.0f}",
                      f"{speedup:.1f}x", goal, r["tags"] + ("" if r["agree"] else " DIFFER"),
                      str(r["leaks"])])
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for l in lines:
        print("  ".join(c.ljust(w) for c, w in zip(l, widths)))
    load = os.getloadavg()
    context = (f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, load average "
               f"{load_before:.1f} at the start and {load[0]:.1f} at the end, {total:.0f} s for the "
               f"run, TMPDIR {tmpdir}; goal (torch: >= {GOAL_SPEEDUP:.0f}x auditwheel's wall time, <= {GOAL_RSS_MB} MB): "
               + ("met on every torch wheel" if not missed else f"missed on {', '.join(missed)}"))
    print(context)
    if args.markdown:
        md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        md += ["| " + " | ".join(l) + " |" for l in lines]
        args.markdown.write_text("\n".join(md) + f"\n\n{context}\n")
    bad = [r["wheel"] for r in rows if not r["agree"] or r["leaks"]]
    if bad:
        print(f"bench: tags differ or leaks reported for {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        sys.exit(1)
