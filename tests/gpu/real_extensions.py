#!/usr/bin/env python3
"""The wheels cuwheel built for torch-cluster and grouped-gemm, on a real GPU.

In: a torch-cluster wheel and/or a grouped-gemm wheel (files, or directories
holding them; each package whose wheel is given is checked; scripts/real-extensions.sh builds them, docs/reports/real-extensions.md
says how), on a machine with a CUDA GPU and torch installed, offline. Out: a
table (package, check, max error or mismatches, result) on stdout, appended
as Markdown to --markdown FILE; exit 0 when every check passes, 1 when one
fails, 2 without CUDA.

The wheels go into a fresh venv that sees the machine's own torch (never
reinstalled: `pip install --no-deps --no-index`, and torch's version and
location are compared before and after); other wheels given (scipy, which
torch_cluster imports, where the machine lacks it) are installed the same
way. The checks then run inside that venv:

- torch-cluster: fps, knn, radius, grid, nearest on CUDA against the CPU
  kernels of the same wheel (and knn, radius and grid against plain torch
  too); graclus and random_walk, which are randomised, by the properties
  their result must have (a matching of the graph; walks along its edges).
- grouped-gemm: grouped_gemm.ops.gmm forward and backward (both gradients),
  with and without trans_b, in bfloat16 (the only dtype its cuBLAS path
  takes) against torch.matmul per group in float64 on the CPU, from the same
  (bfloat16-rounded) inputs. Error: max|got - ref| / max|ref|.

Usage: python3 tests/gpu/real_extensions.py WHEEL_OR_DIR... [--markdown FILE] [--seed N]
       (PYTHON-free: run it with the interpreter that has torch)
"""

import argparse
import os
import pathlib
import shutil
import site
import subprocess
import sys
import tempfile

# bfloat16 keeps 8 bits of mantissa: inputs are rounded to it, the products
# are summed in float32 by cuBLAS and the result rounded once more, so a
# result is within a few 2^-8 of the float64 reference, relative to the
# largest value.
BF16_TOLERANCE = 2e-2

# The packages checked, by their wheels' distribution names; each one whose
# wheel is given is checked.
PACKAGES = ("torch_cluster", "grouped_gemm")


def wheels_of(args):
    wheels = []
    for arg in args:
        path = pathlib.Path(arg)
        if path.is_dir():
            found = sorted(path.glob("*.whl"))
            if not found:
                sys.exit(f"real_extensions: no *.whl in the directory {path}")
            wheels += found
        elif path.is_file() and path.suffix == ".whl":
            wheels.append(path)
        else:
            sys.exit(f"real_extensions: {arg} is neither a .whl file nor a directory of them")
    names = [w.name.split("-")[0] for w in wheels]
    for package in PACKAGES:
        if names.count(package) > 1:
            sys.exit(f"real_extensions: give one {package} wheel, not {names.count(package)}")
    if not any(package in names for package in PACKAGES):
        sys.exit(f"real_extensions: no torch_cluster or grouped_gemm wheel among {names}")
    return wheels


def torch_identity(python):
    return subprocess.run(
        [python, "-c", "import torch; print(torch.__version__, torch.__file__)"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def install(wheels, venv):
    """A venv over this interpreter's site-packages, with the wheels in it."""
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    python = str(venv / "bin" / "python")
    # --system-site-packages reaches the base interpreter's site-packages
    # only; where this interpreter is itself a venv, add its site directories.
    if sys.prefix != sys.base_prefix:
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        with open(os.path.join(purelib, "outer_env.pth"), "w", encoding="utf-8") as pth:
            for directory in site.getsitepackages():
                pth.write(f"import site; site.addsitedir({directory!r})\n")
    before = torch_identity(sys.executable)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check",
         "install", "--no-deps", "--no-index", "--no-cache-dir", "--no-compile",
         *map(str, wheels)],
        check=True,
    )
    after = torch_identity(python)
    if after != before:
        sys.exit(f"real_extensions: torch changed: before '{before}', after '{after}'")
    print(f"torch (untouched by the install): {after}")
    return python


# ---------------------------------------------------------------- the checks

class Table:
    def __init__(self):
        self.rows = []

    def add(self, package, check, measure, ok):
        self.rows.append((package, check, measure, "pass" if ok else "FAIL"))
        print(f"  {package:14} {check:52} {measure:34} {'pass' if ok else 'FAIL'}", flush=True)

    def failed(self):
        return [r for r in self.rows if r[3] != "pass"]

    def markdown(self):
        lines = ["| package | check | measure | result |", "|---|---|---|---|"]
        lines += [f"| {p} | {c} | {m} | {r} |" for p, c, m, r in self.rows]
        return "\n".join(lines) + "\n"


def run_check(table, package, check, function):
    try:
        measure, ok = function()
    except Exception as error:  # a crash is a failed check, reported as such
        measure, ok = f"error: {type(error).__name__}: {error}"[:200], False
    table.add(package, check, measure, ok)


def edges(row, col):
    return sorted(zip(row.tolist(), col.tolist()))


def same(cuda_value, cpu_value):
    """Exact equality of two integer results; the measure says how many differ."""
    a, b = cuda_value.cpu(), cpu_value.cpu()
    if a.shape != b.shape:
        return f"shapes {tuple(a.shape)} vs {tuple(b.shape)}", False
    differ = int((a != b).sum())
    return f"{differ} of {a.numel()} differ", differ == 0


def same_edges(cuda_edges, cpu_edges):
    a, b = edges(*cuda_edges), edges(*cpu_edges)
    extra, missing = len(set(a) - set(b)), len(set(b) - set(a))
    return f"{len(a)} vs {len(b)} edges, {extra} extra, {missing} missing", a == b


def torch_cluster_checks(table, torch, seed):
    import torch_cluster

    name = "torch-cluster"
    gen = torch.Generator().manual_seed(seed)
    dev = torch.device("cuda")

    def points(n, d=3):
        return torch.rand(n, d, generator=gen, dtype=torch.float64)

    # Two batches of different sizes: 3000 and 1999 points.
    x = points(4999)
    batch = torch.cat([torch.zeros(3000, dtype=torch.long), torch.ones(1999, dtype=torch.long)])
    y = points(1501)
    batch_y = torch.cat([torch.zeros(700, dtype=torch.long), torch.ones(801, dtype=torch.long)])

    for dtype in (torch.float64, torch.float32):
        xd, yd = x.to(dtype), y.to(dtype)

        def fps():
            cpu = torch_cluster.fps(xd, batch, ratio=0.1, random_start=False)
            gpu = torch_cluster.fps(xd.to(dev), batch.to(dev), ratio=0.1, random_start=False)
            return same(gpu, cpu)

        run_check(table, name, f"fps {str(dtype)[6:]} (CUDA = CPU)", fps)

        def knn():
            cpu = torch_cluster.knn(xd, yd, 6, batch, batch_y)
            gpu = torch_cluster.knn(xd.to(dev), yd.to(dev), 6, batch.to(dev), batch_y.to(dev))
            return same_edges(gpu, cpu)

        run_check(table, name, f"knn k=6 {str(dtype)[6:]} (CUDA = CPU)", knn)

        def radius():
            cpu = torch_cluster.radius(xd, yd, 0.12, batch, batch_y, max_num_neighbors=4999)
            gpu = torch_cluster.radius(xd.to(dev), yd.to(dev), 0.12, batch.to(dev),
                                       batch_y.to(dev), max_num_neighbors=4999)
            return same_edges(gpu, cpu)

        run_check(table, name, f"radius r=0.12 {str(dtype)[6:]} (CUDA = CPU)", radius)

        def grid():
            size = torch.tensor([0.1, 0.2, 0.15], dtype=dtype)
            cpu = torch_cluster.grid_cluster(xd, size)
            gpu = torch_cluster.grid_cluster(xd.to(dev), size.to(dev))
            return same(gpu, cpu)

        run_check(table, name, f"grid {str(dtype)[6:]} (CUDA = CPU)", grid)

        def nearest():
            cpu = torch_cluster.nearest(xd, yd, batch, batch_y)
            gpu = torch_cluster.nearest(xd.to(dev), yd.to(dev), batch.to(dev), batch_y.to(dev))
            return same(gpu, cpu)

        run_check(table, name, f"nearest {str(dtype)[6:]} (CUDA = CPU)", nearest)

    # Plain-torch references (float64, CPU).
    def knn_reference():
        gpu = torch_cluster.knn(x.to(dev), y.to(dev), 6, batch.to(dev), batch_y.to(dev))
        row, col = [], []
        for b in (0, 1):
            xi = torch.nonzero(batch == b).flatten()
            yi = torch.nonzero(batch_y == b).flatten()
            dist = torch.cdist(y[yi], x[xi])
            nearest6 = dist.topk(6, largest=False).indices
            row += yi.repeat_interleave(6).tolist()
            col += xi[nearest6.flatten()].tolist()
        return same_edges(gpu, (torch.tensor(row), torch.tensor(col)))

    run_check(table, name, "knn k=6 float64 (CUDA = torch.cdist top-k)", knn_reference)

    def radius_reference():
        gpu = torch_cluster.radius(x.to(dev), y.to(dev), 0.12, batch.to(dev), batch_y.to(dev),
                                   max_num_neighbors=4999)
        same_batch = batch_y[:, None] == batch[None, :]
        row, col = torch.nonzero((torch.cdist(y, x) <= 0.12) & same_batch, as_tuple=True)
        return same_edges(gpu, (row, col))

    run_check(table, name, "radius r=0.12 float64 (CUDA = torch.cdist)", radius_reference)

    def grid_reference():
        size = torch.tensor([0.1, 0.2, 0.15], dtype=torch.float64)
        gpu = torch_cluster.grid_cluster(x.to(dev), size.to(dev)).cpu()
        # Same cell <=> same cluster id: compare the partitions.
        cell = ((x - x.min(0).values) / size).floor().long()
        key = [tuple(c) for c in cell.tolist()]
        ids = gpu.tolist()
        by_key, by_id = {}, {}
        for k, i in zip(key, ids):
            by_key.setdefault(k, set()).add(i)
            by_id.setdefault(i, set()).add(k)
        bad = sum(len(v) != 1 for v in by_key.values()) + sum(len(v) != 1 for v in by_id.values())
        return f"{len(by_key)} cells, {bad} split or merged", bad == 0

    run_check(table, name, "grid float64 (CUDA = floor((x - min) / size))", grid_reference)

    def graclus():
        n = 2000
        row = torch.randint(0, n, (8000,), generator=gen)
        col = torch.randint(0, n, (8000,), generator=gen)
        keep = row != col
        row, col = torch.cat([row[keep], col[keep]]), torch.cat([col[keep], row[keep]])
        cluster = torch_cluster.graclus_cluster(row.to(dev), col.to(dev), num_nodes=n).cpu()
        neighbours = set(zip(row.tolist(), col.tolist()))
        members = {}
        for node, c in enumerate(cluster.tolist()):
            members.setdefault(c, []).append(node)
        bad = sum(
            len(m) > 2 or (len(m) == 2 and (m[0], m[1]) not in neighbours)
            for m in members.values()
        )
        pairs = sum(len(m) == 2 for m in members.values())
        return f"{pairs} pairs, {bad} not a matched edge", bad == 0 and pairs > 0

    run_check(table, name, "graclus (CUDA: a matching of the graph)", graclus)

    def random_walk():
        n = 500
        row = torch.randint(0, n, (3000,), generator=gen)
        col = torch.randint(0, n, (3000,), generator=gen)
        row, col = torch.cat([row, torch.arange(n)]), torch.cat([col, (torch.arange(n) + 1) % n])
        order = torch.argsort(row * n + col)
        row, col = row[order], col[order]
        start = torch.arange(n)
        walks = torch_cluster.random_walk(row.to(dev), col.to(dev), start.to(dev), 8).cpu()
        allowed = set(zip(row.tolist(), col.tolist()))
        steps = [(w[i], w[i + 1]) for w in walks.tolist() for i in range(len(w) - 1)]
        bad = sum(step not in allowed for step in steps) + int((walks[:, 0] != start).sum())
        return f"{len(steps)} steps, {bad} off the graph", bad == 0

    run_check(table, name, "random_walk (CUDA: steps along edges)", random_walk)


def grouped_gemm_checks(table, torch, seed):
    from grouped_gemm import ops

    name = "grouped-gemm"
    gen = torch.Generator().manual_seed(seed)
    dev = torch.device("cuda")

    def error(got, ref):
        got = got.detach().cpu().to(torch.float64)
        scale = ref.abs().max().item() or 1.0
        return (got - ref).abs().max().item() / scale

    problems = [
        # (batch sizes, k, n): uneven groups, an empty one, one of a single row.
        ([128, 128, 128, 128], 128, 128),
        ([37, 0, 200, 1, 90], 96, 160),
        ([513, 255, 64], 256, 512),
    ]
    for sizes, k, n in problems:
        for trans_b in (False, True):
            def gmm_check(sizes=sizes, k=k, n=n, trans_b=trans_b):
                tokens, experts = sum(sizes), len(sizes)
                a = torch.randn(tokens, k, generator=gen).to(torch.bfloat16)
                shape = (experts, n, k) if trans_b else (experts, k, n)
                b = torch.randn(*shape, generator=gen).to(torch.bfloat16)
                grad = torch.randn(tokens, n, generator=gen).to(torch.bfloat16)
                batch_sizes = torch.tensor(sizes, dtype=torch.long)

                a_gpu = a.to(dev).requires_grad_(True)
                b_gpu = b.to(dev).requires_grad_(True)
                out = ops.gmm(a_gpu, b_gpu, batch_sizes, trans_b)
                out.backward(grad.to(dev))
                torch.cuda.synchronize()

                a64 = a.to(torch.float64).requires_grad_(True)
                b64 = b.to(torch.float64).requires_grad_(True)
                parts, start = [], 0
                for i, size in enumerate(sizes):
                    rhs = b64[i].t() if trans_b else b64[i]
                    parts.append(torch.matmul(a64[start:start + size], rhs))
                    start += size
                ref = torch.cat(parts)
                ref.backward(grad.to(torch.float64))
                errors = {
                    "out": error(out, ref.detach()),
                    "da": error(a_gpu.grad, a64.grad),
                    "db": error(b_gpu.grad, b64.grad),
                }
                measure = ", ".join(f"{k} {v:.1e}" for k, v in errors.items())
                return measure, all(v <= BF16_TOLERANCE for v in errors.values())

            run_check(
                table, name,
                f"gmm {sizes} k={k} n={n}{' trans_b' if trans_b else ''} fwd+bwd bf16",
                gmm_check,
            )


def inside(args):
    import torch

    print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda})")
    if not torch.cuda.is_available():
        print("real_extensions: CUDA is not available", file=sys.stderr)
        return 2
    print(f"GPU {torch.cuda.get_device_name()} (compute capability "
          f"{'.'.join(map(str, torch.cuda.get_device_capability()))}), seed {args.seed}")
    import importlib
    import importlib.metadata
    checks = {"torch_cluster": torch_cluster_checks, "grouped_gemm": grouped_gemm_checks}
    table = Table()
    for package in args.packages.split(","):
        module = importlib.import_module(package)
        origin = pathlib.Path(module.__file__)
        print(f"{package} {importlib.metadata.version(package)} from {origin.parent}")
        if not str(origin).startswith(sys.prefix):
            print(f"real_extensions: {package} is not the venv's", file=sys.stderr)
            return 1
        if package == "torch_cluster":
            print(f"torch_cluster.cuda_version() = {torch.ops.torch_cluster.cuda_version()}")
        checks[package](table, torch, args.seed)
    if args.markdown:
        with open(args.markdown, "a", encoding="utf-8") as out:
            out.write(table.markdown())
    failed = table.failed()
    print(f"\n{len(table.rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="*", help="wheels, or directories of them")
    parser.add_argument("--markdown", help="append the table as Markdown to this file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--packages", default="", help=argparse.SUPPRESS)
    parser.add_argument("--venv", default=None, help="where the venv goes (default: a temporary directory)")
    args = parser.parse_args()
    if args.inside:
        return inside(args)
    wheels = wheels_of(args.wheels)
    with tempfile.TemporaryDirectory(prefix="real-extensions-") as scratch:
        venv = pathlib.Path(args.venv) if args.venv else pathlib.Path(scratch) / "venv"
        python = install(wheels, venv)
        given = {w.name.split("-")[0] for w in wheels}
        packages = ",".join(p for p in PACKAGES if p in given)
        command = [python, os.path.abspath(__file__), "--inside", "--seed", str(args.seed),
                   "--packages", packages]
        if args.markdown:
            command += ["--markdown", os.path.abspath(args.markdown)]
        # Run from the venv's directory: no source tree on sys.path.
        return subprocess.run(command, cwd=venv).returncode


if __name__ == "__main__":
    sys.exit(main())
