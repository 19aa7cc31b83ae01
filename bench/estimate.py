#!/usr/bin/env python3
"""`cuwheel plan --estimate` against the wall time it predicts: cells of the demo built at one and
at two job slots, each prediction made before its build from the builds before it.

Every round works on its own flake copy of this checkout whose project sources each carry a fresh
comment, so every kernel, binding, link, wheel and audit of the chosen cells is new to the store;
the toolchains and the driver are built first, untimed, and the predictions count them as built
(`--remaining`). Round A builds at 1 slot (its prediction has only cuwheel's guesses to go by);
round B is predicted from A's builds (`--durations-from`) and built at 2 slots; round C is
predicted from B's and built at 1 slot. Prints, per round, the predicted and the measured wall
time of `nix build` and the error.

In:  this checkout (its flake and examples/demo-ext, fetched), Nix, the cuwheel CLI
     (target/debug/cuwheel, built with cargo if missing). Out: the table on stdout.

Not a test: it builds for minutes and its figures are timings; run it on an otherwise idle
machine. See bench/README.md.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matrix import (  # noqa: E402  (the shared helpers)
    NIX_OPTIONS, PROJECT, REPO, SYSTEM, BenchError, append_comment, flake_copy, git_add, load,
    nix, project_sources,
)

CELLS = ["cu130-py311-torch211", "cu130-py312-torch211", "cu130-py313-torch211",
         "cu130-abi3-torch211"]


def cuwheel() -> Path:
    binary = REPO / "target" / "debug" / "cuwheel"
    if not binary.exists():
        subprocess.run(["cargo", "build", "--quiet", "-p", "cuwheel", "--bin", "cuwheel"],
                       cwd=REPO, check=True)
    return binary


def fresh_copy(work: Path, name: str, fresh: bool = True) -> Path:
    copy = work / name
    copy.mkdir()
    flake_copy(copy)
    if fresh:
        kernels, bindings, _ = project_sources()
        for rel in kernels + sorted({s for group in bindings.values() for s in group}):
            append_comment(copy / PROJECT / rel)
        git_add(copy)
    return copy


def predict(copy: Path, cells: list[str], lender: Path | None) -> tuple[float, float, str]:
    """The 1- and 2-slot wall times `plan --estimate --remaining` predicts for `cells`."""
    cmd = [str(cuwheel()), "plan", "--estimate", "--remaining", "--project", str(copy / PROJECT),
           "--flake", str(copy)]
    for cell in cells:
        cmd += ["--cell", cell]
    if lender:
        cmd += ["--durations-from", str(lender / PROJECT)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"plan --estimate failed:\n{out.stderr}")

    def slots(label: str) -> float:
        line = next(ln for ln in out.stdout.splitlines() if ln.strip().startswith(label))
        m = re.search(r"\((\d+) s\)", line) or re.search(r"(\d+) s$", line)
        return float(m.group(1))

    return slots("1 slot:"), slots("2 slots:"), out.stdout


def build(copy: Path, cells: list[str], slots: int) -> float:
    flake = f"{copy}#legacyPackages.{SYSTEM}"
    cmd = ["nix", *NIX_OPTIONS, "--option", "max-jobs", str(slots), "build", "--no-link",
           *[f"{flake}.wheels.{c}" for c in cells]]
    start = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    if out.returncode != 0:
        raise BenchError(f"nix build at {slots} slot(s) failed:\n{out.stderr[-3000:]}")
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", action="append", help=f"a cell to build (default: {CELLS})")
    parser.add_argument("--keep", action="store_true", help="keep the flake copies")
    args = parser.parse_args()
    cells = args.cell or CELLS
    work = Path(tempfile.mkdtemp(prefix="cuwheel-estimate-", dir=REPO / "target"))
    # The toolchains and the driver these cells need, untimed: the cells of the checkout as it
    # is (often in the store already).
    warm = fresh_copy(work, "warm", fresh=False)
    flake = f"{warm}#legacyPackages.{SYSTEM}"
    nix(["build", "--no-link", "--max-jobs", "auto", f"{warm}#packages.{SYSTEM}.driver",
         *[f"{flake}.wheels.{c}" for c in cells]],
        "building the toolchains, the driver and the cells once (untimed)")
    rows = []
    lender: Path | None = None
    for name, slots in (("A", 1), ("B", 2), ("C", 1)):
        copy = fresh_copy(work, name)
        one, two, report = predict(copy, cells, lender)
        predicted = one if slots == 1 else two
        before = load()
        wall = build(copy, cells, slots)
        rows.append((name, slots, lender.name if lender else "none (guesses)", predicted, wall,
                     before, load()))
        print(f"estimate: round {name}, {slots} slot(s): predicted {predicted:.0f} s, measured "
              f"{wall:.0f} s", file=sys.stderr, flush=True)
        print(report, file=sys.stderr, flush=True)
        lender = copy
    print(f"cells: {', '.join(cells)} (every kernel, binding, link, wheel and audit new)")
    print("| round | slots | durations from round | predicted | measured | error | load before/after |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name, slots, source, predicted, wall, before, after in rows:
        error = (predicted - wall) / wall * 100
        print(f"| {name} | {slots} | {source} | {predicted:.0f} s | {wall:.0f} s | "
              f"{error:+.0f} % | {before.split()[0]} / {after.split()[0]} |")
    if not args.keep:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"estimate: {e}", file=sys.stderr)
        sys.exit(1)
