"""Downloads one sdist with pip's own index client and checks its sha256.

    python3 sdist.py NAME VERSION SHA256 DIR

pip itself cannot download these sdists: `pip download` prepares metadata,
which runs setup.py, which imports torch. This asks pip's package finder
(the index pip is configured with) for the NAME==VERSION sdist, downloads it
through pip's session (its proxies, certificates and retries), and writes
it to DIR only when its sha256 is SHA256. Prints the file's path.
"""

import hashlib
import os
import sys

from pip._internal.commands import create_command
from pip._vendor.packaging.specifiers import SpecifierSet


def main() -> int:
    name, version, sha256, dest = sys.argv[1:5]
    command = create_command("download")
    options, _ = command.parse_args(
        ["--no-binary", ":all:", "--no-deps", "--disable-pip-version-check", f"{name}=={version}"]
    )
    with command.main_context():
        session = command.get_default_session(options)
        finder = command._build_package_finder(options=options, session=session)
        best = finder.find_best_candidate(name, SpecifierSet(f"=={version}")).best_candidate
        if best is None or best.link.is_wheel:
            print(f"sdist.py: the package index has no sdist of {name}=={version}", file=sys.stderr)
            return 1
        response = session.get(best.link.url)
        response.raise_for_status()
    got = hashlib.sha256(response.content).hexdigest()
    if got != sha256:
        print(
            f"sdist.py: {best.link.filename} has sha256 {got}, not the pinned {sha256}: "
            "the index serves other bytes than were reviewed; nothing written",
            file=sys.stderr,
        )
        return 1
    path = os.path.join(dest, best.link.filename)
    with open(path + ".part", "wb") as out:
        out.write(response.content)
    os.replace(path + ".part", path)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
