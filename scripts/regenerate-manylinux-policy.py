#!/usr/bin/env python3
"""Regenerates crates/cuwheel-wheel/src/data/manylinux-policy.json from an
auditwheel wheel: `pip download --no-deps auditwheel==X`, then
`python3 scripts/regenerate-manylinux-policy.py auditwheel-X-py3-none-any.whl`.

Keeps each policy's name, aliases, priority, library whitelist and
blacklist, and its symbol versions for the architectures cuwheel builds
(x86_64, aarch64); a policy with no entry for an architecture (manylinux_2_5
and _2_12 have none for aarch64) does not exist for it.
"""
import json
import re
import sys
import zipfile
from pathlib import Path

ARCHS = ["x86_64", "aarch64"]
MEMBER = "auditwheel/policy/manylinux-policy.json"


def main(wheel: str) -> None:
    version = re.match(r"auditwheel-([^-]+)-", Path(wheel).name)
    if not version:
        sys.exit(f"{wheel}: not an auditwheel wheel (auditwheel-X-py3-none-any.whl)")
    with zipfile.ZipFile(wheel) as archive:
        policies = json.loads(archive.read(MEMBER))
    out = []
    for policy in policies:
        out.append(
            {
                "name": policy["name"],
                "aliases": policy["aliases"],
                "priority": policy["priority"],
                "symbol_versions": {
                    arch: policy["symbol_versions"][arch]
                    for arch in ARCHS
                    if arch in policy["symbol_versions"]
                },
                "lib_whitelist": policy["lib_whitelist"],
                "blacklist": policy["blacklist"],
            }
        )
    data = {
        "source": f"auditwheel {version[1]} (the pip package auditwheel=={version[1]}), file "
        f"{MEMBER}: every policy with its {' and '.join(ARCHS)} symbol versions",
        "policies": out,
    }
    target = Path(__file__).resolve().parent.parent / "crates/cuwheel-wheel/src/data/manylinux-policy.json"
    target.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {target.relative_to(Path.cwd()) if target.is_relative_to(Path.cwd()) else target}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
