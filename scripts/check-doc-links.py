#!/usr/bin/env python3
"""Check the relative Markdown links of README.md and docs/ (and any file given).

In: Markdown files (default: README.md and every docs/**/*.md of the repository).
Out: one line per broken link, `FILE:LINE: [text](target): why`, and exit 1;
or `links: N checked in M files, all resolve` and exit 0.

A link resolves when its file (relative to the Markdown file) exists and,
for `file.md#anchor` or `#anchor`, the target file has a heading whose
GitHub-style slug is the anchor. Links with a scheme (http:, https:,
mailto:) are not fetched. Code spans and fenced code blocks are skipped.
"""

import os
import re
import sys
from pathlib import Path

LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, links reduced to their
    text, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose(path: Path) -> list:
    """The file's lines, those of fenced code blocks (and the fences) blank."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return lines


def anchors(path: Path) -> set:
    seen, result = {}, set()
    for line in prose(path):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
    return result


def links(path: Path):
    """(line number, text, target) of every inline link outside code; a link
    may wrap onto the next line."""
    text = "\n".join(prose(path))
    text = re.sub(r"`[^`\n]*`", lambda m: "`" * len(m.group(0)), text)
    for match in LINK.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2)


def main(argv):
    root = Path(__file__).resolve().parent.parent
    files = [Path(a).resolve() for a in argv] or [
        root / "README.md",
        *sorted((root / "docs").rglob("*.md")),
    ]
    broken, checked = [], 0
    for path in files:
        for number, text, target in links(path):
            if SCHEME.match(target):
                continue
            checked += 1
            name, _, anchor = target.partition("#")
            dest = (path.parent / name).resolve() if name else path
            where = f"{os.path.relpath(path, root)}:{number}"
            text = " ".join(text.split())
            if not dest.exists():
                broken.append(f"{where}: [{text}]({target}): no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where}: [{text}]({target}): no heading #{anchor} in {dest.name}")
    for line in broken:
        print(line)
    if broken:
        print(f"links: {len(broken)} of {checked} broken", file=sys.stderr)
        return 1
    print(f"links: {checked} checked in {len(files)} files, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
