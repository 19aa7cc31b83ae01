#!/usr/bin/env python3
"""Runs a GitHub Actions workflow's own steps on this machine, so that the commands in the
workflow `cuwheel init --ci github` writes are tested, not only its syntax.

    python3 scripts/ci-local.py WORKFLOW PROJECT WORK [--event push|pull_request|release]
        [--cells CELL,...] [--caches DIR]

PROJECT is a git repository (the project: pyproject.toml, flake.nix, flake.lock, cuwheel.lock at
its root); WORK a new directory for the jobs' checkouts, artifacts and caches. Jobs run in the
order of `needs`, each in a fresh clone of PROJECT (actions/checkout), every `run:` step with
`bash --noprofile --norc -eo pipefail` as GitHub runs it, with GITHUB_OUTPUT, GITHUB_PATH and
RUNNER_TEMP. A matrix job runs once per entry (`--cells` keeps only those cells of each entry,
to test on a subset). Expressions `${{ }}` are evaluated for the contexts the workflow uses:
github (event_name, run_id), matrix, needs, steps, env, runner, secrets (from the environment
variables CI_LOCAL_SECRET_<NAME>), hashFiles and fromJSON. The actions are stood in for:
checkout (the clone), install-nix-action (the machine's Nix, with the action's extra_nix_config
as NIX_CONFIG), upload/download-artifact and cache restore/save (directories under WORK),
upload-pages-artifact (copied to WORK/pages), deploy-pages (not run), and
gh-action-pypi-publish (`twine check` of the packages, as its verify-metadata does, then `twine upload` to
$CI_LOCAL_PYPI_URL if set). Anything else fails the run. Prints each step and exits non-zero at
the first step that fails.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

TWINE = os.environ.get("CI_LOCAL_TWINE", "twine")


class Ctx(dict):
    """A context object: attribute access, and '' for what is not set (GitHub's null)."""

    def __getattr__(self, name):
        value = self.get(name, "")
        return Ctx(value) if isinstance(value, dict) and not isinstance(value, Ctx) else value


def to_ctx(value):
    if isinstance(value, dict):
        return Ctx({k: to_ctx(v) for k, v in value.items()})
    return value


EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def evaluate(expr, ctx):
    # Operators and literals become Python's outside the '…' strings only.
    parts = re.split(r"('[^']*')", expr.strip())
    for i in range(0, len(parts), 2):
        part = parts[i].replace("&&", " and ").replace("||", " or ").replace("!", " not ")
        part = part.replace(" not =", "!=")
        parts[i] = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", part))
    return eval("".join(parts), {"__builtins__": {}}, ctx)  # noqa: S307 - the workflow is ours


def render(value, ctx):
    """A string with `${{ }}` parts: the one value, or the text with each part put in."""
    if not isinstance(value, str):
        return value
    whole = EXPR.fullmatch(value.strip())
    if whole:
        return evaluate(whole.group(1), ctx)

    def put(m):
        v = evaluate(m.group(1), ctx)
        return json.dumps(v) if isinstance(v, (dict, list)) else str(v)

    return EXPR.sub(put, value)


def condition(value, ctx):
    if value is None:
        return True
    text = value if isinstance(value, str) else str(value)
    m = EXPR.fullmatch(text.strip())
    return bool(evaluate(m.group(1) if m else text, ctx))


def copy_into(src, dst):
    src, dst = Path(src), Path(dst)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=False)
    else:
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst / src.name)


class Runner:
    def __init__(self, workflow, project, work, event, cells, caches=None):
        self.workflow = workflow
        self.project = Path(project).resolve()
        self.work = Path(work).resolve()
        self.event = event
        self.cells = cells
        # The Actions cache outlives a run: --caches shares it between runs.
        self.caches = Path(caches).resolve() if caches else self.work / "caches"
        self.outputs = {}
        self.results = {}
        self.run_id = "1"

    def secrets(self):
        prefix = "CI_LOCAL_SECRET_"
        return Ctx({k[len(prefix):]: v for k, v in os.environ.items() if k.startswith(prefix)})

    def run(self):
        jobs = self.workflow["jobs"]
        done = set()
        while len(done) < len(jobs):
            ready = [j for j in jobs if j not in done and set(self.needs(jobs[j])) <= done]
            if not ready:
                raise SystemExit("ci-local: the jobs' needs form a cycle")
            for name in ready:
                self.job(name, jobs[name])
                done.add(name)

    @staticmethod
    def needs(job):
        needs = job.get("needs", [])
        return [needs] if isinstance(needs, str) else needs

    def job(self, name, job):
        needs = Ctx({n: Ctx(outputs=Ctx(self.outputs.get(n, {})), result=self.results.get(n, ""))
                     for n in self.needs(job)})
        if any(self.results.get(n) != "success" for n in self.needs(job)):
            print(f"ci-local: job {name}: skipped (a job it needs did not succeed)")
            self.results[name] = "skipped"
            return
        base = Ctx(github=Ctx(event_name=self.event, run_id=self.run_id), needs=needs,
                   secrets=self.secrets(), vars=Ctx(), hashFiles=None, fromJSON=json.loads)
        if not condition(job.get("if"), base):
            print(f"ci-local: job {name}: skipped (if: {job['if']})")
            self.results[name] = "skipped"
            return
        entries = [Ctx()]
        matrix = job.get("strategy", {}).get("matrix")
        if matrix is not None:
            matrix = render(matrix, base)
            entries = [to_ctx(e) for e in matrix.get("include", [])]
            entries = [e for e in (self.narrow(e) for e in entries) if e is not None]
        for i, entry in enumerate(entries):
            self.instance(f"{name}-{i}" if matrix is not None else name, name, job, base, entry)
        self.results[name] = "success"

    def narrow(self, entry):
        if not self.cells:
            return entry
        keep = lambda text: " ".join(c for c in text.split() if c in self.cells)  # noqa: E731
        entry = Ctx(entry, cells=keep(entry.get("cells", "")), pypi=keep(entry.get("pypi", "")))
        return entry if entry["cells"] else None

    def instance(self, label, name, job, base, matrix):
        workspace = self.work / "jobs" / label
        temp = self.work / "tmp" / label
        temp.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(self.project), str(workspace)], check=True)
        ctx = Ctx(base, matrix=matrix, runner=Ctx(temp=str(temp)), steps=Ctx(), env=Ctx())
        ctx["hashFiles"] = lambda *globs: hashlib.sha256(
            b"".join((workspace / g).read_bytes() for g in globs if (workspace / g).is_file())
        ).hexdigest()
        env = dict(os.environ, RUNNER_TEMP=str(temp), GITHUB_WORKSPACE=str(workspace), CI="true")
        job_env = {k: str(render(v, ctx)) for k, v in job.get("env", {}).items()}
        ctx["env"] = Ctx(job_env)
        env.update(job_env)
        paths = []
        title = render(job.get("name", name), ctx)
        print(f"ci-local: job {title} in {workspace}")
        for index, step in enumerate(job["steps"]):
            step_ctx = Ctx(ctx)
            if not condition(step.get("if"), step_ctx):
                print(f"ci-local:   step {index}: skipped (if: {step['if']})")
                continue
            step_env = dict(env, **{k: str(render(v, step_ctx)) for k, v in step.get("env", {}).items()})
            step_env["PATH"] = ":".join(paths[::-1] + [env["PATH"]])
            outputs = {}
            if "run" in step:
                print(f"ci-local:   step {index}: {step.get('name', step['run'].splitlines()[0])}")
                out_file, path_file = temp / f"output-{index}", temp / f"path-{index}"
                out_file.write_text("")
                path_file.write_text("")
                step_env.update(GITHUB_OUTPUT=str(out_file), GITHUB_PATH=str(path_file))
                script = temp / f"step-{index}.sh"
                script.write_text(step["run"])
                status = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                                        cwd=workspace, env=step_env).returncode
                if status != 0:
                    raise SystemExit(f"ci-local: job {title}, step {index} failed with status {status}")
                for line in out_file.read_text().splitlines():
                    key, _, value = line.partition("=")
                    outputs[key] = value
                paths += [line for line in path_file.read_text().splitlines() if line]
            else:
                with_ = {k: render(v, step_ctx) for k, v in step.get("with", {}).items()}
                print(f"ci-local:   step {index}: uses {step['uses']}")
                outputs = self.action(step["uses"], with_, workspace, step_env) or {}
                # install-nix-action's settings reach the later steps.
                if "NIX_CONFIG" in os.environ:
                    env["NIX_CONFIG"] = os.environ["NIX_CONFIG"]
            if "id" in step:
                ctx["steps"][step["id"]] = Ctx(outputs=Ctx(outputs))
        self.outputs[name] = {k: str(render(v, ctx)) for k, v in job.get("outputs", {}).items()}

    def action(self, uses, with_, workspace, env):
        action = uses.split("@")[0]
        artifacts = self.work / "artifacts"
        if action == "actions/checkout":
            return None
        if action == "cachix/install-nix-action":
            subprocess.run(["nix", "--version"], check=True)
            os.environ["NIX_CONFIG"] = with_.get("extra_nix_config", "")
            return None
        if action == "actions/upload-artifact":
            copy_into(workspace / with_["path"], artifacts / with_["name"])
            return None
        if action == "actions/download-artifact":
            names = [with_["name"]] if "name" in with_ else sorted(
                p.name for p in artifacts.iterdir() if re.fullmatch(with_["pattern"].replace("*", ".*"), p.name))
            for name in names:
                target = workspace / with_["path"]
                if "name" not in with_ and not with_.get("merge-multiple"):
                    target = target / name
                copy_into(artifacts / name, target)
            return None
        if action == "actions/cache/restore":
            caches = self.caches
            for key in [with_["key"]] + str(with_.get("restore-keys", "")).split():
                found = sorted(p for p in caches.glob(f"{key}*")) if caches.is_dir() else []
                if found:
                    print(f"ci-local:     restored {found[-1].name}")
                    copy_into(found[-1], workspace / with_["path"])
                    return {"cache-hit": str(found[-1].name == with_["key"]).lower()}
            return {"cache-hit": "false"}
        if action == "actions/cache/save":
            copy_into(workspace / with_["path"], self.caches / with_["key"])
            return None
        if action == "actions/upload-pages-artifact":
            site = workspace / with_["path"]
            if not (site / "index.html").is_file():
                raise SystemExit(f"ci-local: the pages artifact {site} has no index.html")
            copy_into(site, self.work / "pages")
            return None
        if action == "actions/deploy-pages":
            print("ci-local:     (not deployed: the site is in WORK/pages)")
            return {"page_url": "file://" + str(self.work / "pages")}
        if action == "pypa/gh-action-pypi-publish":
            dist = sorted((workspace / with_.get("packages-dir", "dist")).glob("*.whl"))
            if not dist:
                raise SystemExit("ci-local: nothing to publish to PyPI")
            # The action checks with `twine check` (verify-metadata), then uploads.
            subprocess.run([TWINE, "check", *map(str, dist)], check=True)
            url = os.environ.get("CI_LOCAL_PYPI_URL")
            if url:
                subprocess.run([TWINE, "upload", "--non-interactive", "--repository-url", url,
                                *map(str, dist)], check=True, env=env)
            return None
        raise SystemExit(f"ci-local: no stand-in for the action {uses}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workflow")
    parser.add_argument("project")
    parser.add_argument("work")
    parser.add_argument("--event", default="push")
    parser.add_argument("--cells", default="")
    parser.add_argument("--caches", help="the Actions cache's directory, kept between runs")
    args = parser.parse_args()
    work = Path(args.work)
    if work.exists() and any(work.iterdir()):
        raise SystemExit(f"ci-local: {work} is not empty; give a new directory")
    workflow = yaml.safe_load(Path(args.workflow).read_text())
    cells = set(filter(None, args.cells.split(",")))
    Runner(workflow, args.project, work, args.event, cells, args.caches).run()
    print("ci-local: every job succeeded")


if __name__ == "__main__":
    main()
