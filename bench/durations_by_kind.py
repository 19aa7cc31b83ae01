#!/usr/bin/env python3
"""The measured durations of a `cuwheel plan --estimate` table, grouped: count, median, range, sum.

In:  the text `cuwheel plan --estimate` printed (a file, or - for stdin); --group REGEX, whose first
     capture group names a row's group (default: the derivation's kind, its name up to the first
     `-`); --exclude NAME (repeatable), rows left out, such as a build that was stopped for hours.
Out: one line per group and one for all, in seconds, of the rows without `~` (guessed rows are
     skipped, as are rows the regex does not match).

docs/reports/corpus.md's flash-attn figures: --group 'flash_(bwd|fwd_split|fwd)_'. Not a test;
see bench/README.md.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys

ROW = re.compile(r"^\s+(~?)\s+(\d+)\s+(\S+)$")


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("estimate", help="cuwheel plan --estimate output (- for stdin)")
    args.add_argument("--group", default=r"^([^-]+)-", help="regex; its first group names the group")
    args.add_argument("--exclude", action="append", default=[], metavar="NAME")
    opts = args.parse_args()
    group = re.compile(opts.group)
    text = sys.stdin if opts.estimate == "-" else open(opts.estimate, encoding="utf-8")
    groups: dict[str, list[int]] = {}
    for line in text:
        m = ROW.match(line)
        if not m or m.group(1) == "~" or m.group(3) in opts.exclude:
            continue
        g = group.search(m.group(3))
        if g:
            groups.setdefault(g.group(1), []).append(int(m.group(2)))
    every = [s for seconds in groups.values() for s in seconds]
    for name, seconds in sorted(groups.items()) + [("all", every)]:
        if seconds:
            print(f"{name}: {len(seconds)} measured, median {statistics.median(seconds):g} s, "
                  f"{min(seconds)}–{max(seconds)} s, sum {sum(seconds)} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
