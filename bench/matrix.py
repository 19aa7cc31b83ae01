#!/usr/bin/env python3
"""The demo's whole wheel matrix built two ways on this machine, timed: cuwheel (the flake's
`wheels.all`) and the usual way (torch.utils.cpp_extension, one full build per cell), plus Nix's own
cost per derivation. Prints one table; `--markdown FILE` writes it as Markdown too.

In:  the repository this file lives in (its flake and examples/demo-ext), Nix, the pinned artifacts
     in the store (`cuwheel fetch`), and pip's configured index for what `import torch` needs
     (downloaded once into target/bench/, untimed). Out: the table on stdout.

Not a test: it takes tens of minutes and its figures are timings. See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT = Path("examples/demo-ext")
WORK = REPO / "target" / "bench"
NIX_OPTIONS = [
    "--extra-experimental-features", "nix-command flakes",
    "--option", "sandbox", "true",
    "--option", "sandbox-fallback", "false",
    "--option", "substituters", "",
    # Nix 2.8's evaluation cache can answer "attribute ... is unexpectedly missing" for a
    # `legacyPackages.<system>.…` path that a fresh evaluation finds; every copy is new anyway.
    "--option", "eval-cache", "false",
]
SYSTEM = "x86_64-linux"
# Derivation kinds, by the start of the derivation's name.
KINDS = [
    ("kernel", "kernel-"), ("binding", "binding-"), ("link", "link-"), ("wheel", "wheel-"),
    ("audit", "audit-"), ("plan", "cuwheel-plan.json"), ("wheels.all", "cuwheel-wheels"),
]
# The usual way's venv per torch toolchain: the host's Python (3.11) and that torch's cp311 wheel.
TORCH_VENVS = {"torch211": "requirements-torch211.txt", "torch29": "requirements-torch29.txt"}


class BenchError(Exception):
    """A step failed; the message says which and what to do."""


@dataclass
class Measure:
    wall: float
    cpu: float
    nvcc: int | None = None
    built: dict[str, int] = field(default_factory=dict)


def run_timed(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, float, float]:
    """Runs cmd; returns it with its wall time and the CPU time (user + system) of it and all its
    descendants (as root, `nix build` builds in-process, so its builders count here too)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, wall, cpu


def check(proc: subprocess.CompletedProcess, what: str, hint: str) -> subprocess.CompletedProcess:
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise BenchError(f"{what} failed (exit {proc.returncode}):\n{tail}\n{hint}")
    return proc


def nix(args: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    return check(subprocess.run(["nix", *NIX_OPTIONS, *args], capture_output=True, text=True, **kw),
                 what, "If a pinned artifact is missing, run `cuwheel fetch --project "
                 "examples/demo-ext` (`bash tests/prepare.sh` does).")


def built_kinds(stderr: str) -> dict[str, int]:
    """Derivations Nix built, by kind, from its "building '/nix/store/<hash>-<name>.drv'" lines."""
    counts: dict[str, int] = {}
    for m in re.finditer(r"^building '/nix/store/[0-9a-z]{32}-([^']+)\.drv'", stderr, re.M):
        kind = kind_of(m.group(1))
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def kind_of(name: str) -> str:
    """A derivation's kind (KINDS), by the start of its name."""
    return next((k for k, prefix in KINDS if name.startswith(prefix)), "other")


def project_sources() -> tuple[list[str], dict[str, list[str]], list[str]]:
    """The demo's kernels, bindings by kind and include dirs, project-relative, sorted."""
    config = tomllib.loads((REPO / PROJECT / "pyproject.toml").read_text())["tool"]["cuwheel"]
    root = REPO / PROJECT
    kernels = sorted(str(Path(p).relative_to(root))
                     for g in config["kernels"] for p in glob.glob(str(root / g)))
    bindings = {k: sorted(v) for k, v in config["bindings"].items()}
    return kernels, bindings, sorted(config.get("include-dirs", []))


def flake_copy(dest: Path, repo: Path = REPO) -> None:
    """The repository's tracked files as they are now, in a fresh git repository (as the tests'
    flake_copy does): a flake whose edits make fresh derivations. `repo`: another checkout."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True,
                            check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = repo / rel
        if src.exists():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git_add(dest, init=True)


def git_add(repo: Path, init: bool = False) -> None:
    if init:
        subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)


def append_comment(path: Path) -> None:
    """A unique comment: the source's store path, hence every node built from it, is new."""
    with path.open("a") as f:
        f.write(f"\n// bench {uuid.uuid4().hex}\n")


def bench_cuwheel(copy: Path, kernels: list[str], bindings: dict[str, list[str]]) -> dict:
    flake = f"{copy}#legacyPackages.{SYSTEM}"
    for rel in kernels + [b for files in bindings.values() for b in files]:
        append_comment(copy / PROJECT / rel)
    git_add(copy)
    # Untimed: every toolchain and the driver, shared by every project and already built once.
    names = nix(["eval", "--json", f"{flake}.toolchains", "--apply", "builtins.attrNames"],
                "listing the flake's toolchains").stdout
    toolchains = [f"{flake}.toolchains.{n}" for n in sorted(json.loads(names))]
    nix(["build", "--no-link", *toolchains, f"{copy}#packages.{SYSTEM}.cuwheel"],
        "building the toolchains and the driver")

    def build(what: str) -> Measure:
        proc, wall, cpu = run_timed(["nix", *NIX_OPTIONS, "build", "--no-link",
                                     f"{flake}.wheels.all"])
        check(proc, what, "See Nix's message above.")
        built = built_kinds(proc.stderr)
        return Measure(wall, cpu, nvcc=built.get("kernel", 0), built=built)

    results = {"all": build("building wheels.all (fresh objects)")}
    results["noop"] = build("rebuilding wheels.all (nothing changed)")
    append_comment(copy / PROJECT / kernels[0])
    git_add(copy)
    results["edit"] = build(f"rebuilding wheels.all after editing {kernels[0]}")
    results["edited"] = kernels[0]
    return results


def store_path(flake: str, attr: str) -> Path:
    return Path(nix(["eval", "--raw", f"{flake}.{attr}"], f"evaluating {attr}").stdout.strip())


def host_torch_wheel(pinned: Path, pip: list[str], cache: Path, hint: str) -> Path:
    """The pinned torch wheel if it is for the host's Python, else the same release's wheel for
    the host's Python from pip's index (a lock whose cells are all abi3 pins one for another
    Python), used only if its C++ headers (`torch/include/`, by name and CRC-32) are the pinned
    wheel's: what a build compiles against is the same."""
    host = f"cp{sys.version_info.major}{sys.version_info.minor}"
    _, version, python, *_ = pinned.name.split("-")
    if python == host:
        return pinned
    check(subprocess.run([*pip, "download", "--no-deps", "--only-binary=:all:", "-d", str(cache),
                          f"torch=={version}"], capture_output=True, text=True),
          f"downloading torch {version} for {host}", hint)
    found = sorted(cache.glob(f"torch-{version}-{host}-{host}-*.whl"))
    if not found:
        raise BenchError(f"pip downloaded no torch {version} wheel for {host} into {cache}")
    wheel = found[-1]

    def headers(path: Path) -> dict[str, int]:
        with zipfile.ZipFile(path) as z:
            return {i.filename: i.CRC for i in z.infolist()
                    if i.filename.startswith("torch/include/")}

    ours, theirs = headers(wheel), headers(pinned)
    if ours != theirs:
        differ = sorted(set(ours.items()) ^ set(theirs.items()))[:3]
        raise BenchError(f"{wheel.name}'s C++ headers differ from the pinned {pinned.name}'s "
                         f"(first: {differ}); the usual build would not compile against the same "
                         "torch")
    print(f"bench: the host is {host}, the lock pins {pinned.name}: the venv gets "
          f"{wheel.name}, whose {len(ours)} C++ headers are the pinned wheel's",
          file=sys.stderr)
    return wheel


def ensure_venv(torch: str, wheel: Path) -> Path:
    """target/bench/venv-<torch>: the host's Python with the pinned torch wheel and what
    `import torch` needs (bench/requirements-<torch>.txt, downloaded once with `pip download`
    into target/bench/pip-cache). Untimed."""
    venv = WORK / f"venv-{torch}"
    requirements = REPO / "bench" / TORCH_VENVS[torch]
    stamp = venv / "bench-ready"
    wanted = f"{wheel.name}\n{requirements.read_text()}"
    if stamp.exists() and stamp.read_text() == wanted:
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    cache = WORK / "pip-cache"
    links = WORK / "torch-wheels"
    links.mkdir(parents=True, exist_ok=True)
    # pip wants the wheel's own file name, without the store hash.
    named = links / wheel.name.split("-", 1)[1]
    named.unlink(missing_ok=True)
    named.symlink_to(wheel)
    hint = "pip needs its configured index for the nvidia-* wheels `import torch` loads."
    check(subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True,
                         text=True), f"creating {venv}", "Is Python's venv module installed?")
    pip = [str(venv / "bin" / "pip"), "--disable-pip-version-check"]
    named = host_torch_wheel(named, pip, cache, hint)
    check(subprocess.run([*pip, "download", "--no-deps", "-d", str(cache), "-r",
                          str(requirements)], capture_output=True, text=True),
          f"downloading {requirements.name}", hint)
    check(subprocess.run([*pip, "install", "--no-deps", "--no-index", "--find-links", str(cache),
                          str(named), "-r", str(requirements)], capture_output=True, text=True),
          f"installing torch into {venv}", hint)
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"],
                           capture_output=True, text=True)
    check(probe, f"`import torch` in {venv}", f"Add what it misses to {requirements}.")
    stamp.write_text(wanted)
    return venv


SETUP_PY = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="demo-ext",
    version="0.1.0",
    packages=["demo_ext"],
    ext_modules=[CUDAExtension(
        name="demo_ext._C",
        sources={sources!r},
        include_dirs={include_dirs!r},
        extra_compile_args={{"cxx": {cxx!r}, "nvcc": {nvcc!r}}},
        py_limited_api={abi3!r},
    )],
    cmdclass={{"build_ext": BuildExtension}},
    options={options!r},
)
"""

COUNTING_NVCC = """\
#!/bin/sh
echo "$*" >> "{log}"
exec "{nvcc}" "$@"
"""


def usual_build(cell: dict, venv: Path, cuda: Path, gcc: Path, archs: str, jobs: int,
                kernels: list[str], binding: list[str], includes: list[str],
                config: dict) -> Measure:
    """One cell built as torch.utils.cpp_extension builds it: a setup.py in a fresh directory,
    `pip wheel --no-build-isolation`, the same nvcc, gcc, torch and archs."""
    with tempfile.TemporaryDirectory(prefix="cuwheel-bench-usual-") as tmp:
        tmp = Path(tmp)
        proj = tmp / "demo-ext"
        shutil.copytree(REPO / PROJECT, proj, ignore=shutil.ignore_patterns(
            "cuwheel.lock", "pyproject.toml", "__pycache__", "result*"))
        (proj / "setup.py").write_text(SETUP_PY.format(
            sources=kernels + binding,
            include_dirs=[str(proj / d) for d in includes],
            cxx=config["cxx-flags"], nvcc=config["nvcc-flags"], abi3=cell["abi3"],
            options={"bdist_wheel": {"py_limited_api": "cp39"}} if cell["abi3"] else {}))
        log = tmp / "nvcc-calls"
        log.touch()
        wrapper = tmp / "nvcc"
        wrapper.write_text(COUNTING_NVCC.format(log=log, nvcc=cuda / "bin" / "nvcc"))
        wrapper.chmod(0o755)
        env = dict(os.environ,
                   PATH=f"{venv / 'bin'}:{os.environ['PATH']}",
                   CUDA_HOME=str(cuda), PYTORCH_NVCC=str(wrapper),
                   CC=str(gcc / "bin" / "gcc"), CXX=str(gcc / "bin" / "g++"),
                   TORCH_CUDA_ARCH_LIST=archs, MAX_JOBS=str(jobs),
                   # On the host nvcc has a /bin/sh: no namespace wrapper needed.
                   CUWHEEL_NVCC_DIRECT="1")
        proc, wall, cpu = run_timed([str(venv / "bin" / "pip"), "--disable-pip-version-check",
                                     "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                                     "--no-cache-dir", "-w", str(tmp / "dist"), str(proj)],
                                    env=env, cwd=tmp)
        check(proc, f"the usual build of {cell['name']}", "See pip's output above.")
        wheels = [w.name for w in (tmp / "dist").glob("demo_ext-*.whl")]
        tag = "-cp39-abi3-" if cell["abi3"] else "-cp311-cp311-"
        if len(wheels) != 1 or tag not in wheels[0]:
            raise BenchError(f"the usual build of {cell['name']} made {wheels}, not one *{tag}* wheel")
        if not list(proj.glob("build/**/build.ninja")):
            raise BenchError(f"the usual build of {cell['name']} did not use ninja (MAX_JOBS has "
                             "no effect without it): is ninja in the venv?")
        calls = log.read_text().splitlines()
        return Measure(wall, cpu, nvcc=sum(1 for c in calls if " -c " in f" {c} "))


def bench_usual(copy: Path, kernels, bindings, includes, jobs: int, only: list[str] | None):
    """Every cell of the lock, each built the usual way from scratch."""
    flake = f"{copy}#legacyPackages.{SYSTEM}"
    config = tomllib.loads((REPO / PROJECT / "pyproject.toml").read_text())["tool"]["cuwheel"]
    archs = " ".join(config["cuda-archs"])
    cells = json.loads((REPO / PROJECT / "cuwheel.lock").read_text())["cells"]
    results = {}
    for name in sorted(cells):
        if only and name not in only:
            continue
        cell = cells[name]
        # A cell without a Python is the abi3 one: the torch-library binding.
        abi3 = cell["python"] is None
        binding = bindings["torch-library" if abi3 else "pybind11"]
        venv = ensure_venv(cell["torch"], store_path(flake, f"toolchains.{cell['torch']}.libs.wheel"))
        results[name] = usual_build({"name": name, "abi3": abi3}, venv,
                                    store_path(flake, f"toolchains.{cell['cuda']}"),
                                    store_path(flake, f"toolchains.{cell['gcc']}"), archs, jobs,
                                    kernels, binding, includes, config)
    return results


def bench_overhead(count: int) -> tuple[Measure, Measure]:
    """`count` trivial busybox derivations (`touch $out`) in one `nix build`, and one alone."""
    def build(n: int) -> Measure:
        proc, wall, cpu = run_timed(["nix", *NIX_OPTIONS, "build", "--no-link", "-f",
                                     str(REPO / "bench" / "trivial.nix"), "--arg", "count",
                                     str(n), "--argstr", "nonce", uuid.uuid4().hex])
        check(proc, "building the trivial derivations", "See Nix's message above.")
        built = sum(built_kinds(proc.stderr).values())
        if built != n:
            raise BenchError(f"expected {n} trivial derivations built, Nix built {built}")
        return Measure(wall, cpu, built={"trivial": n})
    return build(1), build(count)


def machine() -> dict[str, str]:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
    nix_version = subprocess.run(["nix", "--version"], capture_output=True, text=True).stdout
    return {
        "cores": str(os.cpu_count()),
        "model": model.group(1).strip() if model else platform.processor(),
        "RAM": f"{int(mem.group(1)) / 2**20:.1f} GiB" if mem else "?",
        "nix": nix_version.strip(),
        "python (usual way)": platform.python_version(),
        "date": datetime.date.today().isoformat(),
    }


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def fmt_built(built: dict[str, int]) -> str:
    if not built:
        return "0"
    order = [k for k, _ in KINDS] + ["other", "trivial"]
    parts = ", ".join(f"{built[k]} {k}" for k in order if k in built)
    return f"{sum(built.values())} ({parts})"


def table(info, cw, usual, overhead, loads, jobs) -> tuple[list[str], list[list[str]], list[str]]:
    """The header, the rows and the notes: the same content for text and Markdown."""
    header = ["run", "wall s", "CPU s", "nvcc compiles", "derivations built"]
    rows = []
    if cw:
        rows += [
            ["cuwheel: all cells, fresh objects", *nums(cw["all"]), fmt_built(cw["all"].built)],
            ["cuwheel: no-op rebuild", *nums(cw["noop"]), fmt_built(cw["noop"].built)],
            [f"cuwheel: edit {cw['edited']}, rebuild all", *nums(cw["edit"]),
             fmt_built(cw["edit"].built)],
        ]
    for name, m in usual.items():
        rows.append([f"usual way: {name}", *nums(m), "-"])
    if usual:
        total = Measure(sum(m.wall for m in usual.values()), sum(m.cpu for m in usual.values()),
                        sum(m.nvcc for m in usual.values()))
        rows.append([f"usual way: total ({len(usual)} cells)", *nums(total), "-"])
    notes = []
    if cw and usual:
        a = cw["all"]
        notes.append(f"usual / cuwheel: CPU {total.cpu / a.cpu:.2f}x, wall {total.wall / a.wall:.2f}x, "
                     f"nvcc compiles {total.nvcc}/{a.nvcc} = {total.nvcc / a.nvcc:.2f}x")
    if overhead:
        one, many = overhead
        n = many.built["trivial"]
        notes.append(f"Nix overhead: {n} trivial derivations in one build {many.wall:.2f} s wall = "
                     f"{many.wall / n:.3f} s per derivation ({many.cpu / n:.3f} s CPU); one alone "
                     f"{one.wall:.2f} s wall (evaluation included)")
    notes += [
        "cuwheel: `nix build <flake copy>#wheels.all` (evaluation and the plan included), "
        "toolchains and driver built beforehand; default --max-jobs/--cores. nvcc compiles = "
        "kernel derivations built.",
        "usual way: per cell a fresh setup.py (CUDAExtension: kernels + that cell's binding), "
        f"`pip wheel --no-build-isolation`, ninja, MAX_JOBS={jobs}, the same Nix-built nvcc "
        "(CUDA_HOME) and gcc (CC/CXX), TORCH_CUDA_ARCH_LIST as the project's cuda-archs; "
        "nvcc compiles counted by a PYTORCH_NVCC wrapper.",
        "usual way, py313/py314 cells: built with the host's Python 3.11 (the only one here): the "
        "compile work is the same but for the binding's Python headers; the wheels are cp311.",
        "load average (1/5/15 min): " + "; ".join(f"{k} {v}" for k, v in loads),
    ]
    notes += [f"{k}: {v}" for k, v in info.items()]
    return header, rows, notes


def nums(m: Measure) -> list[str]:
    return [f"{m.wall:.1f}", f"{m.cpu:.1f}", "-" if m.nvcc is None else str(m.nvcc)]


def render_text(header, rows, notes) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 or i == 4 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    out = [line(header), "  ".join("-" * w for w in widths), *map(line, rows), ""]
    return "\n".join(out + [f"- {n}" for n in notes]) + "\n"


def render_markdown(header, rows, notes) -> str:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join(["---"] + ["---:"] * 3 + ["---"]) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out + [""] + [f"- {n}" for n in notes]) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", type=Path, help="also write the table as Markdown to this file")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(),
                    help="MAX_JOBS of the usual way (default: the core count)")
    ap.add_argument("--overhead-count", type=int, default=20,
                    help="trivial derivations for Nix's overhead (default 20)")
    ap.add_argument("--only", choices=["cuwheel", "usual", "overhead"], action="append",
                    help="run only this part (repeatable; for trying the script out)")
    ap.add_argument("--cells", help="usual way: only these cells, comma-separated (trying out)")
    args = ap.parse_args()
    parts = set(args.only or ["cuwheel", "usual", "overhead"])
    try:
        info = machine()
        kernels, bindings, includes = project_sources()
        loads = [("start", load())]
        cw, usual, overhead = None, {}, None
        with tempfile.TemporaryDirectory(prefix="cuwheel-bench-flake-") as tmp:
            copy = Path(tmp)
            flake_copy(copy)
            if "cuwheel" in parts:
                cw = bench_cuwheel(copy, kernels, bindings)
                loads.append(("after cuwheel", load()))
            if "usual" in parts:
                only = args.cells.split(",") if args.cells else None
                usual = bench_usual(copy, kernels, bindings, includes, args.jobs, only)
                loads.append(("after usual way", load()))
        if "overhead" in parts:
            overhead = bench_overhead(args.overhead_count)
            loads.append(("end", load()))
        header, rows, notes = table(info, cw, usual, overhead, loads, args.jobs)
        sys.stdout.write(render_text(header, rows, notes))
        if args.markdown:
            args.markdown.write_text(render_markdown(header, rows, notes))
    except (BenchError, subprocess.CalledProcessError, OSError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
