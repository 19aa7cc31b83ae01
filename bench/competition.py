#!/usr/bin/env python3
"""A project's wheel matrix built five ways on this machine, in one run, timed: cuwheel with
`--max-jobs` = cores and with 1; torch.utils.cpp_extension per cell from scratch; the same with one
ccache shared by the cells (cold for the first, warm from the earlier ones); and gsplat-style object
reuse (the kernels compiled once per toolkit with cpp_extension, then per cell the bindings compiled
and everything linked). Also cuwheel's no-op rebuild, its rebuild after one kernel is edited, and
Nix's cost per derivation. Prints a Markdown table, the ratios and the issue's goals, met or missed.

In:  a project directory (default examples/demo-ext; its pyproject.toml, sources and a fetched
     cuwheel.lock), Nix, the venvs of bench/matrix.py, ccache (installed with apt-get if missing,
     untimed). Out: the report on stdout (`--markdown FILE` writes it too).

Not a test: it runs for tens of minutes and its figures are timings. See bench/README.md.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import matrix  # noqa: E402  (the shared helpers: flake copy, venvs, Nix calls, overhead)
from matrix import (  # noqa: E402
    NIX_OPTIONS, REPO, SYSTEM, WORK, BenchError, append_comment, built_kinds, check, git_add,
    kind_of, load, nix, store_path,
)

DEMO = REPO / "examples" / "demo-ext"
# Where the flake copy's project lives: the repository's flake builds this directory.
FLAKE_PROJECT = Path("examples/demo-ext")
CORES = os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------
# The project's config, normalised (config v2: the one-module shorthand or [[modules]]).

@dataclass
class Module:
    name: str
    cuda: bool
    kernels: list[str]
    bindings: dict[str, list[str]]
    flavour_kernels: dict[str, list[str]]
    include_dirs: list[str]
    defines: list[str]
    undefines: list[str]
    nvcc_flags: list[str]
    cxx_flags: list[str]
    link_flags: list[str]
    libraries: list[str]
    strip: bool


@dataclass
class Project:
    root: Path
    name: str
    version: str
    packages: list[str]
    archs: str
    modules: list[Module]
    cells: dict[str, dict]

    def sources(self) -> list[str]:
        """Every kernel and binding, project-relative, sorted, once."""
        files = {f for m in self.modules for f in m.kernels}
        files |= {f for m in self.modules for fl in m.bindings.values() for f in fl}
        return sorted(files)

    def cuda_kernels(self) -> list[str]:
        return sorted({f for m in self.modules if m.cuda for f in m.kernels if f.endswith(".cu")})


def read_project(root: Path) -> Project:
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    top = pyproject["tool"]["cuwheel"]

    def expand(patterns: list[str]) -> list[str]:
        out = []
        for pattern in patterns:
            hits = sorted(str(Path(p).relative_to(root)) for p in glob.glob(str(root / pattern)))
            if not hits:
                raise BenchError(f"{root}/pyproject.toml: {pattern!r} matches no file")
            out += hits
        return out

    def bindings(table: dict) -> dict[str, list[str]]:
        b = table.get("bindings", {})
        if isinstance(b, list):
            return {table.get("binding", "pybind11"): expand(b)}
        # A flavour's table ({ sources, kernels }): its kernels replace the module's.
        return {flavour: expand(v["sources"] if isinstance(v, dict) else v)
                for flavour, v in sorted(b.items())}

    def flavour_kernels(table: dict) -> dict[str, list[str]]:
        b = table.get("bindings", {})
        if not isinstance(b, dict):  # a list of sources for one flavour: no kernels of its own
            return {}
        return {f: expand(v["kernels"]) for f, v in sorted(b.items())
                if isinstance(v, dict) and "kernels" in v}

    keys = ["include-dirs", "defines", "undefines", "nvcc-flags", "cxx-flags", "link-flags",
            "libraries"]
    shorthand = "modules" not in top
    tables = [dict(top, name=top.get("module", "_C"))] if shorthand else top["modules"]
    modules = []
    for t in tables:
        # A module's lists come after the top-level ones (docs/reference/config.md).
        merged = {k: list(top.get(k, [])) + ([] if shorthand else list(t.get(k, []))) for k in keys}
        modules.append(Module(
            name=t["name"], cuda=t.get("cuda", True), kernels=expand(t.get("kernels", [])),
            bindings=bindings(t), flavour_kernels=flavour_kernels(t),
            include_dirs=merged["include-dirs"], defines=merged["defines"],
            undefines=merged["undefines"], nvcc_flags=merged["nvcc-flags"],
            cxx_flags=merged["cxx-flags"], link_flags=merged["link-flags"],
            libraries=merged["libraries"], strip=t.get("strip", top.get("strip", False))))
    packages = top.get("packages") or sorted({m.name.split(".")[0] for m in modules})
    lock = json.loads((root / "cuwheel.lock").read_text())
    return Project(root=root, name=pyproject["project"]["name"],
                   version=pyproject["project"]["version"], packages=packages,
                   archs=" ".join(top["cuda-archs"]), modules=modules, cells=lock["cells"])


# ---------------------------------------------------------------------------------------------
# Measuring.

@dataclass
class Run:
    label: str
    wall: float = 0.0
    cpu: float = 0.0
    nvcc: int = 0
    detail: str = ""
    load_before: str = ""
    load_after: str = ""
    extra: dict = field(default_factory=dict)

    def add(self, wall: float, cpu: float) -> None:
        self.wall += wall
        self.cpu += cpu


def progress(run: Run) -> None:
    """Each row's figures on stderr as soon as it ends (a long run's record if a later row fails)."""
    print(f"bench: {run.label}: wall {run.wall:.1f} s, CPU {run.cpu:.1f} s, nvcc {run.nvcc}, "
          f"{run.detail}, load {run.load_before} -> {run.load_after}", file=sys.stderr, flush=True)


@dataclass
class NixBuild:
    wall: float
    cpu: float
    built: dict[str, int]
    # drv name -> (start, stop) seconds after the command started
    spans: dict[str, tuple[float, float]]
    drvs: list[str]


def nix_build(args: list[str], max_jobs: int, what: str) -> NixBuild:
    """`nix build` with Nix's JSON log, each line stamped as it arrives: which derivations were
    built, and when each started and stopped."""
    cmd = ["nix", *NIX_OPTIONS, "--option", "max-jobs", str(max_jobs), "build", "--no-link",
           "--log-format", "internal-json", "-v", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ids: dict[int, str] = {}
    spans: dict[str, list[float]] = {}
    plain: list[str] = []
    for line in proc.stderr:
        now = time.monotonic() - start
        if not line.startswith("@nix "):
            plain.append(line)
            continue
        ev = json.loads(line[5:])
        if ev.get("action") == "start" and ev.get("type") == 105:
            drv = ev["fields"][0]
            ids[ev["id"]] = drv
            spans[drv] = [now, now]
        elif ev.get("action") == "stop" and ev.get("id") in ids:
            spans[ids[ev["id"]]][1] = now
        elif ev.get("action") == "msg" and ev.get("level", 9) <= 1:
            plain.append(ev.get("msg", "") + "\n")
    rc = proc.wait()
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if rc != 0:
        tail = "".join(plain[-40:])
        raise BenchError(f"{what} failed (exit {rc}):\n{tail}")
    text = "".join(f"building '{d}'\n" for d in spans)
    return NixBuild(wall, cpu, built_kinds(text),
                    {Path(d).name[33:-4]: (a, b) for d, (a, b) in spans.items()}, sorted(spans))


def nvcc_calls(drvs: list[str]) -> int:
    """The `nvcc_compile` calls in the build scripts of these derivations (each line of a kernel
    or binding script runs once; the compile itself runs under busybox's `time`, so the function
    is named after the `sh -euc` script that calls it)."""
    if not drvs:
        return 0
    shown = json.loads(nix(["show-derivation", *drvs], "reading the built derivations").stdout)
    compiles = 0
    for d in shown.values():
        for script in re.findall(r"/nix/store/[0-9a-z]{32}-[^ ;']+\.sh", " ".join(d["args"])):
            for line in Path(script).read_text().splitlines():
                if re.search(r"(^\s*|' )nvcc_compile ", line):
                    compiles += 1
    return compiles


# ---------------------------------------------------------------------------------------------
# cuwheel.

def flake_with(project: Project, dest: Path, cuwheel: Path) -> None:
    """The tracked files of a cuwheel checkout in a fresh git repository, with the project in the
    place of the demo, so that checkout's flake builds it."""
    matrix.flake_copy(dest, cuwheel)
    if project.root.resolve() != DEMO.resolve():
        shutil.rmtree(dest / FLAKE_PROJECT)
        shutil.copytree(project.root, dest / FLAKE_PROJECT, symlinks=True,
                        ignore=shutil.ignore_patterns(".git", "result*", "__pycache__", "build"))
        git_add(dest)


def fresh_sources(copy: Path, project: Project) -> None:
    for rel in project.sources():
        append_comment(copy / FLAKE_PROJECT / rel)
    git_add(copy)


def bench_cuwheel(copy: Path, project: Project, cells: list[str] | None) -> dict:
    flake = f"{copy}#legacyPackages.{SYSTEM}"
    names = json.loads(nix(["eval", "--json", f"{flake}.toolchains", "--apply",
                            "builtins.attrNames"], "listing the toolchains").stdout)
    nix(["build", "--max-jobs", str(CORES), "--no-link",
         *[f"{flake}.toolchains.{n}" for n in sorted(names)], f"{copy}#packages.{SYSTEM}.cuwheel"],
        "building the toolchains and the driver (untimed)")
    if cells:
        targets = [f"{flake}.wheels.{c}" for c in cells]
    else:
        targets = [f"{flake}.wheels.all"]
    out = {}
    for jobs in (CORES, 1):
        fresh_sources(copy, project)
        run = Run(f"cuwheel, max-jobs {jobs}" + (" (= cores)" if jobs == CORES else ""))
        run.load_before = load().split()[0]
        b = nix_build(targets, jobs, f"building the matrix with max-jobs {jobs}")
        run.load_after = load().split()[0]
        run.add(b.wall, b.cpu)
        run.nvcc = nvcc_calls([d for d in b.drvs if kind_of(Path(d).name[33:-4])
                               in ("kernel", "binding")])
        run.detail = matrix.fmt_built(b.built)
        run.extra = {"build": b}
        out[jobs] = run
        progress(run)
    # Rebuilds, as a developer sees them: max-jobs = cores.
    noop = nix_build(targets, CORES, "the no-op rebuild")
    edited = project.cuda_kernels()[0] if project.cuda_kernels() else project.sources()[0]
    append_comment(copy / FLAKE_PROJECT / edited)
    git_add(copy)
    edit = nix_build(targets, CORES, f"the rebuild after editing {edited}")
    per_toolkit: dict[str, int] = {}
    for name in edit.spans:
        if kind_of(name) == "kernel":
            toolkit = name.split("-")[1]
            per_toolkit[toolkit] = per_toolkit.get(toolkit, 0) + 1
    edit_nvcc, _ = nvcc_calls([d for d in edit.drvs if kind_of(Path(d).name[33:-4]) == "kernel"])
    print(f"bench: no-op {noop.wall:.2f} s; edit {edited}: {edit.wall:.1f} s wall, "
          f"{edit.cpu:.1f} s CPU, kernels per toolkit {per_toolkit}", file=sys.stderr, flush=True)
    out["noop"] = noop
    out["edit"] = (edited, edit, per_toolkit, edit_nvcc)
    return out


def timeline(b: NixBuild) -> tuple[float, float]:
    """(head, tail): seconds before the first compile started (evaluation, the plan) and after
    the last compile ended (links, wheels, audits of the last cells)."""
    compiles = [s for n, s in b.spans.items() if kind_of(n) in ("kernel", "binding")]
    if not compiles:
        return b.wall, 0.0
    return min(a for a, _ in compiles), b.wall - max(e for _, e in compiles)


# ---------------------------------------------------------------------------------------------
# torch.utils.cpp_extension.

SETUP_PY = """\
import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension


class Build(BuildExtension):
    # Each extension in its own temporary directory: modules that compile one source with other
    # defines (torch-cluster's _cpu/_cuda pairs) keep their own objects.
    def build_extension(self, ext):
        base = self.build_temp
        self.build_temp = os.path.join(base, ext.name)
        try:
            super().build_extension(ext)
        finally:
            self.build_temp = base


EXTENSIONS = {extensions!r}
setup(
    name={name!r},
    version={version!r},
    packages={packages!r},
    ext_modules=[(CUDAExtension if cuda else CppExtension)(**args) for cuda, args in EXTENSIONS],
    cmdclass={{"build_ext": Build}},
    options={options!r},
)
"""

# The nvcc torch runs (PYTORCH_NVCC): logs each call, then runs ccache or the next wrapper.
OUTER_NVCC = """\
#!/bin/sh
echo "$*" >> "$CUWHEEL_BENCH_NVCC_CALLS"
exec {next} "$@"
"""
# The nvcc that really compiles: logs each run (ccache's misses and preprocessor passes included).
INNER_NVCC = """\
#!/bin/sh
echo "$*" >> "$CUWHEEL_BENCH_NVCC_RUNS"
exec "{nvcc}" "$@"
"""
CCACHE_CXX = """\
#!/bin/sh
exec ccache "{gxx}" "$@"
"""
# Python.h seen first by `#include <Python.h>`: one more declaration, so a binding's preprocessed
# text differs per Python as it does with that Python's own headers, while kernels (which never
# include Python.h) are unchanged. The host has Python 3.11 only.
PYTHON_SHIM = """\
typedef int cuwheel_bench_{python};
#include_next <Python.h>
"""


class CppBench:
    """The cpp_extension rows: every cell in the same fixed directory (as a CI checkout is),
    the same Nix-built nvcc, gcc and torch as cuwheel's cell, TORCH_CUDA_ARCH_LIST as the
    project's cuda-archs, ninja, MAX_JOBS = cores."""

    def __init__(self, copy: Path, project: Project, full_api: bool = False):
        self.project = project
        self.full_api = full_api  # --cpp-full-api (bench/README.md says why)
        self.flake = f"{copy}#legacyPackages.{SYSTEM}"
        self.base = WORK / "competition" / re.sub(r"[^A-Za-z0-9_.-]", "_", project.name)
        self._paths: dict[str, Path] = {}

    def path(self, attr: str) -> Path:
        if attr not in self._paths:
            self._paths[attr] = store_path(self.flake, f"toolchains.{attr}")
        return self._paths[attr]

    def wrappers(self, cell: dict, ccache: bool) -> Path:
        """Per toolkit and mode, written once: ccache's compiler check hashes their content."""
        d = self.base / "wrappers" / f"{cell['cuda']}-{cell['gcc']}-{'ccache' if ccache else 'plain'}"
        if not d.exists():
            (d / "inner").mkdir(parents=True)
            (d / "inner" / "nvcc").write_text(INNER_NVCC.format(nvcc=self.path(cell["cuda"]) / "bin" / "nvcc"))
            nxt = f'ccache "{d / "inner" / "nvcc"}"' if ccache else f'"{d / "inner" / "nvcc"}"'
            (d / "nvcc").write_text(OUTER_NVCC.format(next=nxt))
            (d / "g++").write_text(CCACHE_CXX.format(gxx=self.path(cell["gcc"]) / "bin" / "g++"))
            for f in (d / "nvcc", d / "inner" / "nvcc", d / "g++"):
                f.chmod(0o755)
        return d

    def shim(self, python: str) -> Path:
        d = self.base / "python-shims" / python
        d.mkdir(parents=True, exist_ok=True)
        (d / "Python.h").write_text(PYTHON_SHIM.format(python=python))
        return d

    def env(self, cell: dict, ccache: bool, logs: Path) -> dict:
        w = self.wrappers(cell, ccache)
        gcc = self.path(cell["gcc"])
        venv = self.venv(cell)
        env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ['PATH']}",
                   CUDA_HOME=str(self.path(cell["cuda"])), PYTORCH_NVCC=str(w / "nvcc"),
                   CC=str(gcc / "bin" / "gcc"),
                   CXX=str(w / "g++") if ccache else str(gcc / "bin" / "g++"),
                   TORCH_CUDA_ARCH_LIST=self.project.archs, MAX_JOBS=str(CORES),
                   CUWHEEL_NVCC_DIRECT="1",
                   CUWHEEL_BENCH_NVCC_CALLS=str(logs / "nvcc-calls"),
                   CUWHEEL_BENCH_NVCC_RUNS=str(logs / "nvcc-runs"))
        if ccache:
            env.update(CCACHE_DIR=str(self.base / "ccache"), CCACHE_MAXSIZE="20G",
                       CCACHE_COMPILERCHECK="content", CCACHE_NOHASHDIR="1",
                       CCACHE_BASEDIR=str(self.base))
        return env

    def venv(self, cell: dict) -> Path:
        return matrix.ensure_venv(cell["torch"], self.path(f"{cell['torch']}.libs.wheel"))

    def checkout(self, name: str) -> Path:
        """A fresh copy of the project at a fixed path (build products of the last cell gone)."""
        src = self.base / name
        if src.exists():
            shutil.rmtree(src)
        shutil.copytree(self.project.root, src, symlinks=True, ignore=shutil.ignore_patterns(
            "cuwheel.lock", "pyproject.toml", "setup.py", "setup.cfg", "__pycache__", "result*",
            "build", ".git"))
        return src

    def extension(self, m: Module, src: Path, sources: list[str], python: str, abi3: bool,
                  objects: list[str]) -> tuple[bool, dict]:
        args = {
            "name": m.name,
            "sources": sources,
            "include_dirs": [str(self.shim(python))] + [str(src / d) for d in m.include_dirs],
            "define_macros": [tuple((d.split("=", 1) + [None])[:2]) for d in m.defines],
            "undef_macros": m.undefines,
            "extra_compile_args": {"cxx": m.cxx_flags, "nvcc": m.nvcc_flags} if m.cuda
            else {"cxx": m.cxx_flags},
            "extra_link_args": m.link_flags + (["-s"] if m.strip else []),
            "libraries": m.libraries,
            "extra_objects": objects,
            "py_limited_api": abi3,
        }
        return m.cuda, args

    def flavour(self, m: Module, cell: dict) -> str:
        if cell.get("flavour") in m.bindings:
            return cell["flavour"]
        if cell["python"] is None:
            return "torch-library"
        return "pybind11" if "pybind11" in m.bindings else "torch-library"

    def limited(self, flavour: str) -> bool:
        """Whether an extension of this binding flavour compiles under Py_LIMITED_API."""
        return flavour == "torch-library" and not self.full_api

    def abi3_wheel(self, cell: dict) -> bool:
        return cell["python"] is None and not self.full_api

    def setup_py(self, src: Path, extensions: list, abi3_wheel: bool) -> None:
        (src / "setup.py").write_text(SETUP_PY.format(
            extensions=extensions, name=self.project.name, version=self.project.version,
            packages=self.project.packages,
            options={"bdist_wheel": {"py_limited_api": "cp39"}} if abi3_wheel else {}))

    def wheel(self, src: Path, env: dict, name: str, run: Run, logs: Path) -> None:
        dist = logs / "dist"
        venv_pip = Path(env["PATH"].split(":")[0]) / "pip"
        proc, wall, cpu = matrix.run_timed([str(venv_pip), "--disable-pip-version-check", "wheel",
                                            "--no-build-isolation", "--no-deps", "--no-index",
                                            "--no-cache-dir", "-w", str(dist), str(src)],
                                           env=env, cwd=logs)
        check(proc, f"the cpp_extension build of {name}", "See pip's output above.")
        if len(list(dist.glob("*.whl"))) != 1:
            raise BenchError(f"the cpp_extension build of {name} made {list(dist.iterdir())}")
        if not list(src.glob("build/**/build.ninja")):
            raise BenchError(f"{name}: cpp_extension did not use ninja: is ninja in the venv?")
        run.add(wall, cpu)

    def cell_build(self, name: str, cell: dict, run: Run, ccache: bool) -> None:
        """One cell the usual way: every kernel and binding of every module, then the wheel."""
        src = self.checkout("src")
        python = cell["python"] or "python311"
        exts = []
        for m in self.project.modules:
            flavour = self.flavour(m, cell)
            kernels = m.flavour_kernels.get(flavour, m.kernels)
            exts.append(self.extension(m, src, kernels + m.bindings.get(flavour, []), python,
                                       self.limited(flavour), []))
        self.setup_py(src, exts, self.abi3_wheel(cell))
        self.built(name, cell, run, ccache, lambda logs, env: self.wheel(src, env, name, run, logs))

    def built(self, name: str, cell: dict, run: Run, ccache: bool, body) -> None:
        with tempfile.TemporaryDirectory(prefix="cuwheel-bench-cpp-") as tmp:
            logs = Path(tmp)
            for f in ("nvcc-calls", "nvcc-runs"):
                (logs / f).touch()
            env = self.env(cell, ccache, logs)
            if ccache:
                subprocess.run(["ccache", "-z"], env=env, capture_output=True, check=True)
            body(logs, env)
            runs = (logs / "nvcc-runs").read_text().splitlines()
            run.nvcc += sum(1 for r in runs if " -c " in f" {r} " and " -E " not in f" {r} ")
            calls = len((logs / "nvcc-calls").read_text().splitlines())
            run.extra.setdefault("calls", 0)
            run.extra["calls"] += calls
            if ccache:
                stats = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True,
                                       text=True, check=True).stdout
                s = dict(line.split("\t", 1) for line in stats.splitlines() if "\t" in line)
                for k in ("direct_cache_hit", "preprocessed_cache_hit", "cache_miss",
                          "uncacheable_call" if "uncacheable_call" in s else "unsupported_compiler_option"):
                    run.extra[k] = run.extra.get(k, 0) + int(s.get(k, 0))

    def kernels_once(self, key: str, cell: dict, run: Run) -> dict[str, list[str]]:
        """gsplat-style, once per toolkit: every module's kernels compiled by cpp_extension
        (`setup.py build_ext`; it also links a kernels-only module, unused); their objects."""
        src = self.checkout(f"kernels-{key}")
        exts = [self.extension(m, src, m.kernels, cell["python"] or "python311", False, [])
                for m in self.project.modules if m.kernels]
        self.setup_py(src, exts, False)
        temp = src / "build" / "objects"

        def body(logs: Path, env: dict) -> None:
            python = Path(env["PATH"].split(":")[0]) / "python"
            proc, wall, cpu = matrix.run_timed([str(python), "setup.py", "build_ext",
                                                "--build-temp", str(temp),
                                                "--build-lib", str(src / "build" / "lib")],
                                               env=env, cwd=src)
            check(proc, f"compiling the kernels for {key}", "See the output above.")
            run.add(wall, cpu)
        self.built(f"kernels {key}", cell, run, False, body)
        return {m.name: sorted(str(p) for p in (temp / m.name).rglob("*.o"))
                for m in self.project.modules if m.kernels}

    def binding_build(self, name: str, cell: dict, objects: dict[str, list[str]], run: Run) -> None:
        src = self.checkout("src")
        python = cell["python"] or "python311"
        exts = []
        for m in self.project.modules:
            flavour = self.flavour(m, cell)
            exts.append(self.extension(m, src, m.bindings.get(flavour, []), python,
                                       self.limited(flavour), objects.get(m.name, [])))
        self.setup_py(src, exts, self.abi3_wheel(cell))
        self.built(name, cell, run, False, lambda logs, env: self.wheel(src, env, name, run, logs))


def bench_cpp(copy: Path, project: Project, cells: list[str], full_api: bool) -> list[Run]:
    bench = CppBench(copy, project, full_api)
    rows = []
    per_cell = Run("cpp_extension per cell")
    per_cell.load_before = load().split()[0]
    for name in cells:
        bench.cell_build(name, project.cells[name], per_cell, ccache=False)
    per_cell.load_after = load().split()[0]
    per_cell.detail = f"{len(cells)} full builds, {per_cell.extra['calls']} nvcc calls"
    rows.append(per_cell)
    progress(per_cell)

    if shutil.which("ccache") is None:
        check(subprocess.run(["apt-get", "install", "-y", "ccache"], capture_output=True,
                             text=True), "installing ccache", "Install ccache.")
    shutil.rmtree(bench.base / "ccache", ignore_errors=True)
    cached = Run("cpp_extension per cell + shared ccache")
    cached.load_before = load().split()[0]
    for name in cells:
        bench.cell_build(name, project.cells[name], cached, ccache=True)
    cached.load_after = load().split()[0]
    e = cached.extra
    cached.detail = (f"{e['calls']} nvcc calls; ccache: {e.get('direct_cache_hit', 0)} direct + "
                     f"{e.get('preprocessed_cache_hit', 0)} preprocessed hits, "
                     f"{e.get('cache_miss', 0)} misses (nvcc and g++; first cell cold)")
    rows.append(cached)
    progress(cached)

    reuse = Run("gsplat-style object reuse")
    reuse.load_before = load().split()[0]
    objects: dict[str, dict] = {}
    kernel_phase = 0.0
    for name in cells:
        cell = project.cells[name]
        key = f"{cell['cuda']}-{cell['gcc']}-{cell['torch']}"
        if key not in objects:
            w0 = reuse.wall
            objects[key] = bench.kernels_once(key, cell, reuse)
            kernel_phase += reuse.wall - w0
        bench.binding_build(name, cell, objects[key], reuse)
    reuse.load_after = load().split()[0]
    reuse.detail = (f"kernels once for each of {len(objects)} toolkits ({kernel_phase:.1f} s), "
                    f"then {len(cells)} binding builds + links")
    rows.append(reuse)
    progress(reuse)
    return rows


# ---------------------------------------------------------------------------------------------
# The report.

def report(project: Project, cells: list[str], cw: dict, cpp: list[Run], overhead, loads) -> str:
    fast, slow = cw[CORES], cw[1]
    rows = [fast, slow, *cpp]
    out = [f"### {project.name} {project.version}: {len(cells)} cells ({', '.join(cells)})", "",
           "| row | wall s | CPU s | CPU use | nvcc compiles | wall / cuwheel | what ran | "
           "load before → after |",
           "|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        out.append(f"| {r.label} | {r.wall:.1f} | {r.cpu:.1f} | {r.cpu / (r.wall * CORES):.0%} | "
                   f"{r.nvcc} | {r.wall / fast.wall:.2f}× | {r.detail} | "
                   f"{r.load_before} → {r.load_after} |")
    noop: NixBuild = cw["noop"]
    edited, edit, per_toolkit, edit_nvcc = cw["edit"]
    one, many = overhead
    n = many.built["trivial"]
    out += ["", "| rebuild (cuwheel, max-jobs = cores) | wall s | CPU s | derivations built |",
            "|---|---:|---:|---|",
            f"| no-op | {noop.wall:.2f} | {noop.cpu:.2f} | {matrix.fmt_built(noop.built)} |",
            f"| `{edited}` edited | {edit.wall:.1f} | {edit.cpu:.1f} | "
            f"{matrix.fmt_built(edit.built)}; kernels per toolkit: "
            f"{', '.join(f'{k} {v}' for k, v in sorted(per_toolkit.items()))}; {edit_nvcc} nvcc compiles |",
            "",
            f"Nix's overhead: {n} trivial derivations in one build {many.wall:.2f} s wall = "
            f"{many.wall / n:.3f} s per derivation ({many.cpu / n:.3f} s CPU); one alone "
            f"{one.wall:.2f} s (evaluation included)."]
    b: NixBuild = fast.extra["build"]
    head, tail = timeline(b)
    drvs = sum(b.built.values())
    bound = fast.cpu / CORES + head + tail
    ccache = cpp[1]
    goals = [
        ("full matrix wall ≤ 1.2 × (unique CPU ÷ cores + serial head and tail)",
         fast.wall <= 1.2 * bound,
         f"{fast.wall:.1f} s vs 1.2 × ({fast.cpu:.1f} ÷ {CORES} + {head:.1f} + {tail:.1f}) = "
         f"{1.2 * bound:.1f} s; ratio {fast.wall / bound:.2f}"),
        ("cuwheel ahead of cpp_extension + shared ccache on wall time",
         fast.wall < ccache.wall, f"{fast.wall:.1f} s vs {ccache.wall:.1f} s"),
        ("no-op rebuild under 1 s", noop.wall < 1.0, f"{noop.wall:.2f} s"),
        ("one edited kernel = one compile per toolkit",
         bool(per_toolkit) and all(v == 1 for v in per_toolkit.values()),
         f"{per_toolkit} kernel derivations, {edit_nvcc} nvcc compiles"),
    ]
    out += ["", "Goals:", ""]
    out += [f"- {'met' if ok else 'MISSED'}: {g} — {why}" for g, ok, why in goals]
    out += ["", "Breakdown of the max-jobs = cores build: "
            f"{head:.1f} s before the first compile started (evaluation, the plan), "
            f"{tail:.1f} s after the last compile ended (links, wheels, audits), "
            f"{drvs} derivations × {many.wall / n:.3f} s Nix overhead ≈ {drvs * many.wall / n:.1f} s; "
            f"CPU use {fast.cpu / (fast.wall * CORES):.0%} of {CORES} cores.",
            f"Ratios to cuwheel (max-jobs = cores): " + "; ".join(
                f"{r.label}: wall {r.wall / fast.wall:.2f}×, CPU {r.cpu / fast.cpu:.2f}×, "
                f"nvcc {r.nvcc}/{fast.nvcc}" for r in rows[1:]) + ".",
            "Load average (1 min) along the run: " + "; ".join(f"{k} {v}" for k, v in loads) + "."]
    slowest = sorted(((e - a, n) for n, (a, e) in b.spans.items()), reverse=True)[:5]
    out.append("Longest derivations (max-jobs = cores): "
               + ", ".join(f"{n} {d:.1f} s" for d, n in slowest) + ".")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", type=Path, default=DEMO,
                    help="the project directory (pyproject.toml, sources, fetched cuwheel.lock)")
    ap.add_argument("--cuwheel", type=Path, default=REPO,
                    help="the cuwheel checkout whose flake builds (default: this one)")
    ap.add_argument("--cells", help="only these lock cells, comma-separated (trying out)")
    ap.add_argument("--markdown", type=Path, help="also write the report to this file")
    ap.add_argument("--cpp-full-api", action="store_true",
                    help="cpp_extension rows: build abi3 cells with Python's full API (a wheel "
                         "for the host's Python), for torch-library bindings that cpp_extension "
                         "cannot compile under Py_LIMITED_API (torch-cluster)")
    ap.add_argument("--only", choices=["cuwheel", "cpp"], action="append",
                    help="run only this part (trying out; the report needs both)")
    args = ap.parse_args()
    try:
        project = read_project(args.project.resolve())
        cells = sorted(project.cells)
        if args.cells:
            cells = [c for c in cells if c in args.cells.split(",")]
        loads = [("start", load().split()[0])]
        info = matrix.machine()
        with tempfile.TemporaryDirectory(prefix="cuwheel-bench-flake-") as tmp:
            copy = Path(tmp)
            flake_with(project, copy, args.cuwheel.resolve())
            cw = cpp = None
            if not args.only or "cuwheel" in args.only:
                wheel_attrs = json.loads(nix(["eval", "--json",
                                              f"{copy}#legacyPackages.{SYSTEM}.wheels",
                                              "--apply", "builtins.attrNames"],
                                             "listing the cells").stdout)
                chosen = None
                if args.cells:
                    chosen = [a for a in wheel_attrs if any(a.startswith(c) for c in cells)]
                cw = bench_cuwheel(copy, project, chosen)
                loads.append(("after cuwheel", load().split()[0]))
            if not args.only or "cpp" in args.only:
                cpp = bench_cpp(copy, project, cells, args.cpp_full_api)
                loads.append(("after cpp_extension", load().split()[0]))
        overhead = matrix.bench_overhead(20)
        loads.append(("end", load().split()[0]))
        if cw is None or cpp is None:
            print(json.dumps({"cuwheel": {k: vars(v) if isinstance(v, Run) else str(v)
                                          for k, v in (cw or {}).items()},
                              "cpp": [vars(r) for r in cpp or []]}, default=str, indent=1))
            return 0
        text = report(project, cells, cw, cpp, overhead, loads)
        if args.cpp_full_api:
            text += ("\ncpp_extension rows built with --cpp-full-api: abi3 cells as wheels for the "
                     "host's Python with the full API (cpp_extension cannot compile the "
                     "project's torch-library bindings under Py_LIMITED_API).\n")
        text += "\n" + "; ".join(f"{k}: {v}" for k, v in info.items()) + "\n"
        sys.stdout.write(text)
        if args.markdown:
            args.markdown.write_text(text)
    except (BenchError, subprocess.CalledProcessError, OSError, KeyError) as e:
        print(f"bench: {e!r}" if isinstance(e, KeyError) else f"bench: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
