#!/usr/bin/env python3
"""Does pip take a built wheel? For scripts/corpus.sh, per wheel it builds.

    python3 scripts/corpus/pip-check.py WHEEL WORKDIR [PYTHON]

PYTHON (`3.12`) is the cell's Python, which pip is told to install for; by
default the wheel's own Python tag's (an abi3 wheel's is its floor, `cp39`).

1. Install: `pip install --no-deps --no-index --target DIR WHEEL`, with the
   wheel's own Python version, ABI and platform handed to pip's target
   options (the build machine has no interpreter of the cell's Python; the
   device's `scripts/corpus/gpu.sh` installs the same wheel into a venv of
   the real one). pip parses METADATA and checks the tags as it would for
   that interpreter, except `Requires-Python`, which pip checks against the
   interpreter it runs on: that field is checked against the wheel's Python
   version here, by the specifier parser pip itself vendors.
2. Resolve: every name the wheel's `Requires-Dist` lines give (any marker,
   any extra) gets stand-in wheels, code-free `py3-none-any`, one per
   version the real index lists for that name (`pip index versions`), in a
   PEP 503 index served from loopback. Then `pip install --dry-run` of
   `WHEEL[every extra]` against that index alone, with the same target
   options: the dependencies resolve, or the reason pip gives is printed;
   then each extra on its own (`WHEEL[extra]`).
   A direct reference (`name @ URL`) cannot be stood in for; it is named.

Prints one line, `pip-check: install ok; resolve ok (torch 2.11.0, ...)`,
and exits 0 when both passed, 1 otherwise. A script whose result goes into
docs/reports/corpus.md, not a test.
"""

import email.parser
import json
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]


def metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        return email.parser.Parser().parsestr(z.read(name).decode())


def target_options(wheel, python):
    """pip's --python-version/--implementation/--abi/--platform for WHEEL's tags."""
    parts = Path(wheel).name[: -len(".whl")].split("-")
    py, abi, plats = parts[-3], parts[-2], parts[-1]
    opts = ["--only-binary", ":all:", "--implementation", "cp"]
    m = re.fullmatch(r"cp(\d)(\d+)", py.split(".")[0])
    if python:
        opts += ["--python-version", python]
    elif m:
        opts += ["--python-version", f"{m.group(1)}.{m.group(2)}"]
    if abi != "none":
        opts += ["--abi", abi.split(".")[0]]
    for plat in plats.split("."):
        if plat != "any":
            opts += ["--platform", plat]
    return opts


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(meta):
    """The names Requires-Dist gives (normalized), and its direct references,
    read by the parser pip itself vendors."""
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
    names, direct = set(), []
    for line in meta.get_all("Requires-Dist") or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement as e:
            sys.exit(f"pip-check: install FAILED: Requires-Dist {line!r} does not parse: {e}")
        if requirement.url:
            direct.append(f"{requirement.name} @ {requirement.url}")
        else:
            names.add(normalize(requirement.name))
    return sorted(names), direct


def real_versions(name, python_version):
    """The versions the real index lists for name, as pip sees it for that Python."""
    target = ["--python-version", python_version] if python_version else []
    out = subprocess.run(PIP[:-1] + ["index", "versions", name] + target, capture_output=True, text=True)
    m = re.search(r"Available versions: (.*)", out.stdout)
    return [v.strip() for v in m.group(1).split(",")] if m else []


def stand_in(index, name, version):
    dist = re.sub(r"[-.]+", "_", name)
    info = f"{dist}-{version}.dist-info"
    path = index / name / f"{dist}-{version}-py3-none-any.whl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: stand-in\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")


def write_index(index):
    root = ["<html><body>"]
    for project in sorted(p for p in index.iterdir() if p.is_dir()):
        root.append(f'<a href="{project.name}/">{project.name}</a>')
        links = "".join(f'<a href="{f.name}">{f.name}</a>\n' for f in sorted(project.glob("*.whl")))
        (project / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    (index / "index.html").write_text("\n".join(root) + "</body></html>\n")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: pip-check.py WHEEL WORKDIR [PYTHON]")
    wheel = os.path.abspath(sys.argv[1])
    work = Path(tempfile.mkdtemp(dir=sys.argv[2], prefix="pip-check."))
    opts = target_options(wheel, sys.argv[3] if len(sys.argv) == 4 else None) + ["--ignore-requires-python"]
    install = subprocess.run(
        PIP + ["install", "--no-deps", "--no-index", "--target", str(work / "target")] + opts + [wheel],
        capture_output=True, text=True)
    ok = install.returncode == 0
    said = ["install ok" if ok else "install FAILED: " + (install.stderr.strip().splitlines() or ["(no output)"])[-1]]

    meta = metadata(wheel)
    requires_python = meta.get("Requires-Python")
    if requires_python and "--python-version" in opts:
        from pip._vendor.packaging.specifiers import InvalidSpecifier, SpecifierSet
        target = opts[opts.index("--python-version") + 1]
        try:
            if not SpecifierSet(requires_python).contains(target + ".0"):
                ok = False
                said.append(f"Requires-Python {requires_python!r} excludes {target}")
        except InvalidSpecifier:
            ok = False
            said.append(f"Requires-Python {requires_python!r} does not parse")
    names, direct = requirement_names(meta)
    index = work / "index"
    index.mkdir()
    missing = []
    for name in names:
        versions = real_versions(name, opts[opts.index("--python-version") + 1] if "--python-version" in opts else None)
        if not versions:
            missing.append(name)
        for version in versions:
            stand_in(index, name, version)
    write_index(index)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(index)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    extras = meta.get_all("Provides-Extra") or []
    url = f"http://127.0.0.1:{server.server_port}/"

    def dry_run(spec, report):
        """pip's resolution of spec: (chosen 'name version' list, None) or (None, why)."""
        out = subprocess.run(
            PIP + ["install", "--dry-run", "--ignore-installed", "--report", str(report),
                   "--index-url", url, "--target", str(work / "dry")] + opts + [spec],
            capture_output=True, text=True)
        if out.returncode != 0:
            errors = [l for l in out.stderr.strip().splitlines() if l.startswith("ERROR")]
            return None, " ".join(errors or out.stderr.strip().splitlines()[-1:])
        installed = json.loads(report.read_text())["install"]
        return [f"{i['metadata']['name']} {i['metadata']['version']}" for i in installed
                if normalize(i["metadata"]["name"]) in names], None

    # pip would fetch a direct reference (a git URL, say) itself: none is resolved then.
    chosen, why = (None, "not tried: the wheel has direct references") if direct else dry_run(wheel, work / "resolve.json")
    if chosen is None:
        ok = False
        said.append("resolve FAILED: " + why)
    else:
        said.append("resolve ok" + (f" ({', '.join(chosen)})" if chosen else " (no dependencies)"))
    # Each extra on its own, so one extra's broken requirement does not hide the rest.
    failing = []
    for extra in [] if direct else extras:
        chosen, why = dry_run(f"{wheel}[{extra}]", work / f"resolve-{extra}.json")
        if chosen is None:
            failing.append(f"{extra} ({why})")
    if extras and not direct:
        said.append(f"extras {','.join(extras)}: "
                    + ("all resolve" if not failing else "FAILED: " + "; ".join(failing)))
        ok = ok and not failing
    server.shutdown()
    if missing:
        said.append("not on the index: " + ", ".join(missing))
    if direct:
        said.append("direct references, not stood in for: " + "; ".join(direct))
    shutil.rmtree(work)
    print("pip-check: " + "; ".join(said))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
