#!/usr/bin/env python3
"""What `cuwheel plan --estimate` predicts for a cell's full-check `cuwheel reproduce`.

`cuwheel reproduce WHEEL` builds again (`nix-store --realise --check`) every node of the wheel's
cell: its kernels, binding, link, wheel, symbol tables and audit, but not the toolchains or the
driver, which stay as built. `cuwheel plan --estimate --cell CELL` counts those too, so this reads
the durations it printed, drops `toolchain:*` and `driver`, and list-schedules the rest on the
given slots as the estimate does (the longest bottom level first): with the toolchains counted as
built every compile and symbol table is ready at once, so that is longest first, then the link,
the wheel and the audit one after another.

In:  the text `cuwheel plan --estimate --cell CELL` printed (a file, or - for stdin), --slots N,
     and optionally --measured SECONDS (the reproduce's wall time). Out: one line: the work, the
     predicted wall time, how many durations were guessed, and the error against the measured.

Not a test; see bench/README.md.
"""

from __future__ import annotations

import argparse
import heapq
import re
import sys

TAIL = ("link-", "wheel-", "audit-")
DURATION = re.compile(r"^\s+(~?)\s+(\d+)\s+(\S+)$")


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("estimate", help="cuwheel plan --estimate output (- for stdin)")
    args.add_argument("--slots", type=int, default=2)
    args.add_argument("--measured", type=float, help="the reproduce's measured wall time (s)")
    opts = args.parse_args()
    text = sys.stdin if opts.estimate == "-" else open(opts.estimate, encoding="utf-8")
    durations: dict[str, tuple[int, bool]] = {}
    for line in text:
        if m := DURATION.match(line):
            durations[m.group(3)] = (int(m.group(2)), m.group(1) == "~")
    if not durations:
        print(f"no durations in {opts.estimate!r}: pass what `cuwheel plan --estimate` printed",
              file=sys.stderr)
        return 2
    kept = {k: v for k, v in durations.items() if not k.startswith("toolchain:") and k != "driver"}
    tail = [k for k in kept if k.startswith(TAIL)]
    first = sorted((k for k in kept if k not in tail), key=lambda k: (-kept[k][0], k))
    slots = [0.0] * max(opts.slots, 1)
    for name in first:
        heapq.heappush(slots, heapq.heappop(slots) + kept[name][0])
    wall = max(slots) + sum(kept[k][0] for k in tail)
    work = sum(v[0] for v in kept.values())
    guessed = sum(1 for v in kept.values() if v[1])
    line = (f"{len(kept)} derivations ({guessed} guessed), work {work} s; "
            f"predicted at {opts.slots} slots: {wall:.0f} s")
    if opts.measured:
        line += f"; measured {opts.measured:.0f} s; error {(wall - opts.measured) / opts.measured:+.0%}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
