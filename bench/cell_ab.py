#!/usr/bin/env python3
"""One demo cell's build at two or more checkouts, A/B: which builds its nodes faster.

Per checkout (a git revision of this repository): a worktree, and a flake copy of its tracked
files (bench/matrix.py's flake_copy). Each build first gives every kernel and binding source of
examples/demo-ext a fresh comment, so the kernels, bindings, link, wheel and audit are all new;
the toolchains, driver and symbol tables are not. Untimed: one warm-up build per checkout (its
driver and toolchains). Timed: --rounds rounds of `nix build .#wheels.CELL`, the checkouts'
order reversed every other round.

In:  the revisions, --cell (default cu130-py313-torch211), --rounds (default 2), WORK (default
     target/bench/ab). Out: one line per build: the revision, the round, the wall time and the
     kernels built.

Not a test: it builds for minutes; run it on an otherwise idle machine. See bench/README.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matrix import NIX_OPTIONS, PROJECT, REPO, flake_copy, git_add, project_sources  # noqa: E402


def fresh(copy: Path, sources: list[str]) -> None:
    for rel in sources:
        with (copy / PROJECT / rel).open("a") as f:
            f.write(f"\n// ab {uuid.uuid4().hex}\n")
    git_add(copy)


def build(copy: Path, cell: str) -> tuple[float, int]:
    start = time.time()
    proc = subprocess.run(["nix", *NIX_OPTIONS, "build", "--no-link", "--max-jobs", "auto",
                           f"{copy}#wheels.{cell}"], capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"cell_ab: `nix build {copy}#wheels.{cell}` failed:\n{proc.stderr[-3000:]}")
    kernels = sum(1 for line in proc.stderr.splitlines()
                  if line.startswith("building") and "kernel-" in line)
    return time.time() - start, kernels


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("revisions", nargs="+", help="git revisions of this repository")
    args.add_argument("--cell", default="cu130-py313-torch211")
    args.add_argument("--rounds", type=int, default=2)
    args.add_argument("--work", type=Path, default=REPO / "target" / "bench" / "ab")
    opts = args.parse_args()
    kernels, bindings, _ = project_sources()
    sources = kernels + [b for group in bindings.values() for b in group]
    copies = {}
    for rev in opts.revisions:
        worktree, copy = opts.work / f"wt-{rev}", opts.work / f"copy-{rev}"
        if not worktree.exists():
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach",
                            str(worktree), rev], check=True)
        if not copy.exists():
            copy.mkdir(parents=True)
            flake_copy(copy, worktree)
        copies[rev] = copy
    for rev, copy in copies.items():
        fresh(copy, sources)
        wall, built = build(copy, opts.cell)
        print(f"warm-up {rev}: {wall:.0f} s, {built} kernels", flush=True)
    for rnd in range(opts.rounds):
        order = opts.revisions if rnd % 2 == 0 else opts.revisions[::-1]
        for rev in order:
            fresh(copies[rev], sources)
            wall, built = build(copies[rev], opts.cell)
            print(f"round {rnd} {rev}: {wall:.0f} s, {built} kernels", flush=True)
    print(f"(worktrees under {opts.work}: `git worktree remove` them when done)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
