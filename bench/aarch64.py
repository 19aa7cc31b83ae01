#!/usr/bin/env python3
"""The demo's aarch64 cells built next to the same x86_64 cells, in one run on this machine, timed
(#25): torch 2.11's cp311, cp313, cp314 and abi3 wheels for each platform. Prints one table;
`--markdown FILE` writes it as Markdown too.

In:  the repository this file lives in (its flake and examples/demo-ext) and the pinned artifacts
     in the store (`cuwheel fetch`). Out: the table on stdout, and the wheels' store paths.

What one run does: a flake copy of the repository (bench/matrix.py's) whose every kernel and
binding source gets a unique comment, so every kernel, binding, link, wheel and audit is a new
derivation. Untimed: the toolchains, the driver and the plan (shared). Timed, one after the
other: `nix build` of the x86_64 cells' `wheels.<cell>`, then of the aarch64 cells'. The x86_64
cells go first, so neither build finds the other's objects: they share none (each platform has its
own compiler set). Derivations built are counted by kind from Nix's `building '…drv'` lines.

Not a test: its figures are timings. Run it on an otherwise idle machine. See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matrix import (  # noqa: E402  (bench/ is not a package)
    NIX_OPTIONS, PROJECT, SYSTEM, BenchError, Measure, append_comment, built_kinds, check,
    flake_copy, git_add, machine, nix, project_sources, run_timed,
)

PYTHONS = ["py311", "py313", "py314", "abi3"]
PLATFORMS = {
    "x86_64": [f"cu130-{p}-torch211" for p in PYTHONS],
    "aarch64": [f"cu130-{p}-torch211-aarch64" for p in PYTHONS],
}


def build(flake: str, cells: list[str], what: str) -> tuple[Measure, list[str]]:
    attrs = [f"{flake}.wheels.{cell}" for cell in cells]
    proc, wall, cpu = run_timed(["nix", *NIX_OPTIONS, "build", "--no-link", "--json", *attrs])
    check(proc, what, "See Nix's message above.")
    built = built_kinds(proc.stderr)
    outs = [b["outputs"]["out"] for b in json.loads(proc.stdout)]
    return Measure(wall, cpu, nvcc=built.get("kernel", 0), built=built), outs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", type=Path, help="also write the table as Markdown to this file")
    args = ap.parse_args()
    kernels, bindings, _ = project_sources()
    info = machine()
    with tempfile.TemporaryDirectory(prefix="cuwheel-bench-aarch64-") as tmp:
        copy = Path(tmp)
        flake_copy(copy)
        for rel in kernels + [b for files in bindings.values() for b in files]:
            append_comment(copy / PROJECT / rel)
        git_add(copy)
        flake = f"{copy}#legacyPackages.{SYSTEM}"
        names = nix(["eval", "--json", f"{flake}.toolchains", "--apply", "builtins.attrNames"],
                    "listing the flake's toolchains").stdout
        toolchains = [f"{flake}.toolchains.{n}" for n in sorted(json.loads(names))]
        # The plan too: its derivation reads the edited sources, and both
        # platforms' builds need it (import from derivation).
        nix(["build", "--no-link", *toolchains, f"{copy}#packages.{SYSTEM}.cuwheel",
             f"{flake}.plan"], "building the toolchains, the driver and the plan")
        rows, wheels = [], []
        for platform, cells in PLATFORMS.items():
            measure, outs = build(flake, cells, f"building the {platform} cells")
            rows.append((platform, cells, measure))
            wheels.extend(outs)
    header = ["platform", "cells", "wall", "CPU", "kernels", "bindings", "links", "wheels",
              "audits", "other"]
    kinds = ["kernel", "binding", "link", "wheel", "audit"]
    table = [[p, str(len(c)), f"{m.wall:.0f} s", f"{m.cpu:.0f} s",
              *[str(m.built.get(k, 0)) for k in kinds],
              str(sum(n for k, n in m.built.items() if k not in kinds))] for p, c, m in rows]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    notes = [f"{when}; {info['model']}, {info['cores']} cores, {info['RAM']}, {info['nix']}",
             "cells: " + "; ".join(f"{p}: {', '.join(c)}" for p, c, _ in rows)]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    for r in [header, *table]:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    for note in notes:
        print(note)
    for out in wheels:
        print(f"result: {out}")
    if args.markdown:
        md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        md += ["| " + " | ".join(r) + " |" for r in table]
        args.markdown.write_text("\n".join(md + [""] + notes) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        sys.exit(1)
