#!/usr/bin/env python3
"""Checks the installed demo_ext's CUDA operations against float64 references.

In: demo_ext installed from a wheel, a CUDA GPU, torch. Out: an environment
header and a table (op, direction, dtype, shape, max error, tolerance,
result) on stdout, optionally appended as Markdown to a file; exit status 0
when every check passes, 1 when one fails, 2 when CUDA is unavailable.

Each op (bias_gelu, row_norm, axpby) runs through demo_ext.ops' autograd
functions on the GPU, forward and backward (a gradient for every
differentiable input), for every dtype its kernels dispatch on
(AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16): float64, float32,
float16, bfloat16) and for shapes chosen to reach the kernels' edges. The
references below are written out in plain torch ops and evaluated on the CPU
in float64, from the same inputs the GPU got (rounded to the dtype first).
Before any of that, the references themselves are checked against torch's
own GELU, vector norm and autograd.

tile_matmul (float16 [m, 16] @ [16, 8] into float32; forward only) is checked
the same way where the wheel has it (not the torch-stable wheel), and so is
which code ran (tile_matmul_path): on a compute capability 9.0 GPU the
wheel's sm_90a image, whose warpgroup MMA (wgmma) computes it, unless
CUDA_FORCE_PTX_JIT=1 makes the driver compile the wheel's compute_90 PTX,
which holds the portable loop; on any other GPU the portable loop.

The error of a result is max|got - ref| / max|ref|: relative to the largest
reference value, so elements near zero do not blow it up.

Usage: python3 tests/gpu/check_ops.py [--seed N] [--markdown FILE]
       python3 tests/gpu/check_ops.py --references-only   (no GPU needed)
"""

import argparse
import importlib.metadata
import math
import os
import platform
import shutil
import subprocess
import sys

import torch

DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)

# Bounds on max|got - ref| / max|ref|. float16 and bfloat16 results are
# rounded once (2^-11 and 2^-9 relative) from float32 arithmetic; float32
# results carry a few ulps of float32 arithmetic and summation.
TOLERANCE = {
    torch.float64: 1e-12,
    torch.float32: 1e-5,
    torch.float16: 1e-2,
    torch.bfloat16: 1e-2,
}

# The references' own check: float64 against torch's implementations.
REFERENCE_TOLERANCE = 1e-12

# The launch constants of csrc/include/demo_ext/launch.cuh: 256 threads a
# block, at most 65535 blocks, so an elementwise kernel covers 16,776,960
# elements in one grid pass and loops (grid stride) beyond that.
THREADS_PER_BLOCK = 256
MAX_ELEMENTWISE_ELEMENTS_PER_PASS = 65535 * THREADS_PER_BLOCK

ALPHA, BETA = 0.3, -1.7


# --- References: float64, CPU, plain torch ops -----------------------------

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715


def ref_gelu_tanh(v):
    """0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))."""
    return 0.5 * v * (1.0 + torch.tanh(SQRT_2_OVER_PI * (v + GELU_CUBIC * v**3)))


def ref_gelu_tanh_derivative(v):
    """d/dv of ref_gelu_tanh: 0.5 (1 + t) + 0.5 v (1 - t^2) u'(v)."""
    t = torch.tanh(SQRT_2_OVER_PI * (v + GELU_CUBIC * v**3))
    du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_CUBIC * v**2)
    return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du


def ref_bias_gelu(x, bias):
    return ref_gelu_tanh(x + bias)


def ref_bias_gelu_backward(grad_y, x, bias):
    grad_x = grad_y * ref_gelu_tanh_derivative(x + bias)
    # bias spans the last dimension: its gradient sums over every other one.
    # Rows spelled out: reshape cannot infer -1 when a row is empty.
    rows = grad_x.numel() // bias.numel() if bias.numel() else 0
    grad_bias = grad_x.reshape(rows, bias.numel()).sum(dim=0)
    return grad_x, grad_bias


def ref_row_norm(x):
    return torch.sqrt((x * x).sum(dim=1))


def ref_row_norm_backward(grad_y, x):
    # d|x_i|/dx_ij = x_ij / |x_i|; at |x_i| = 0 the subgradient 0.
    norm = ref_row_norm(x)[:, None]
    zero = norm == 0
    safe_norm = torch.where(zero, torch.ones_like(norm), norm)
    return torch.where(zero, torch.zeros_like(x), grad_y[:, None] * x / safe_norm)


def ref_axpby(x, y, alpha, beta):
    return alpha * x + beta * y


def ref_axpby_backward(grad_out, alpha, beta):
    return alpha * grad_out, beta * grad_out


# --- Comparison ------------------------------------------------------------


def max_relative_error(got, ref):
    """max|got - ref| / max|ref| in float64; NaN or inf in got gives NaN or inf."""
    if got.shape != ref.shape:
        raise ValueError(f"shape {tuple(got.shape)}, expected {tuple(ref.shape)}")
    if ref.numel() == 0:
        return 0.0
    got = got.detach().to("cpu", torch.float64)
    diff = (got - ref).abs().max().item()
    scale = max(ref.abs().max().item(), torch.finfo(torch.float64).tiny)
    return diff / scale


class Table:
    COLUMNS = ("op", "direction", "dtype", "shape", "max error", "tolerance", "result")

    def __init__(self):
        self.rows = []

    def add(self, op, direction, dtype, shape, error, tolerance, note=""):
        # A NaN error compares false, so it fails.
        passed = error is not None and error <= tolerance
        result = "PASS" if passed else "FAIL"
        if note:
            result += f" ({note})"
        error_text = "-" if error is None else f"{error:.2e}"
        self.rows.append(
            (op, direction, dtype_name(dtype), shape, error_text, f"{tolerance:.0e}", result)
        )

    @property
    def failures(self):
        return sum(1 for row in self.rows if not row[-1].startswith("PASS"))

    def text(self):
        widths = [max(len(str(r[i])) for r in (self.COLUMNS, *self.rows)) for i in range(len(self.COLUMNS))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in (self.COLUMNS, *self.rows)]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def markdown(self):
        lines = ["| " + " | ".join(self.COLUMNS) + " |", "|" + "---|" * len(self.COLUMNS)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


# --- The references' own check ---------------------------------------------


def check_references(table):
    """The references against torch.nn.functional.gelu, torch.linalg.vector_norm and autograd."""
    gen = torch.Generator().manual_seed(1)
    f64 = torch.float64
    v = torch.cat([torch.linspace(-10, 10, 4001, dtype=f64), 3 * torch.randn(4000, generator=gen, dtype=f64)])
    leaf = v.clone().requires_grad_()
    gelu = torch.nn.functional.gelu(leaf, approximate="tanh")
    (gelu_grad,) = torch.autograd.grad(gelu, leaf, torch.ones_like(v))

    x = torch.randn(9, 37, generator=gen, dtype=f64)
    x[4] = 0  # the subgradient at a zero row
    grad_y = torch.randn(9, generator=gen, dtype=f64)
    leaf = x.clone().requires_grad_()
    norm = torch.linalg.vector_norm(leaf, dim=1)
    (norm_grad,) = torch.autograd.grad(norm, leaf, grad_y)

    a, b, g = (torch.randn(100, generator=gen, dtype=f64) for _ in range(3))
    leaves = (a.clone().requires_grad_(), b.clone().requires_grad_())
    out = torch.add(leaves[1] * BETA, leaves[0], alpha=ALPHA)
    grad_a, grad_b = torch.autograd.grad(out, leaves, g)
    ref_grad_a, ref_grad_b = ref_axpby_backward(g, ALPHA, BETA)

    for op, direction, shape, got, ref, note in (
        ("ref gelu_tanh", "forward", "8001", gelu, ref_gelu_tanh(v), "vs torch.nn.functional.gelu"),
        ("ref gelu_tanh", "backward (x)", "8001", gelu_grad, ref_gelu_tanh_derivative(v), "vs autograd"),
        ("ref row_norm", "forward", "9x37", norm, ref_row_norm(x), "vs torch.linalg.vector_norm"),
        ("ref row_norm", "backward (x)", "9x37", norm_grad, ref_row_norm_backward(grad_y, x), "vs autograd"),
        ("ref axpby", "forward", "100", out, ref_axpby(a, b, ALPHA, BETA), "vs torch.add"),
        ("ref axpby", "backward (x)", "100", grad_a, ref_grad_a, "vs autograd"),
        ("ref axpby", "backward (y)", "100", grad_b, ref_grad_b, "vs autograd"),
    ):
        table.add(op, direction, f64, shape, max_relative_error(got, ref), REFERENCE_TOLERANCE, note)


# --- The GPU checks --------------------------------------------------------


class Case:
    """A logical shape; `transposed` stores a 2-D input column-major (non-contiguous)."""

    def __init__(self, shape, transposed=False, zero_row=None):
        self.shape = tuple(shape)
        self.transposed = transposed
        self.zero_row = zero_row

    def label(self):
        text = "x".join(map(str, self.shape)) if self.shape else "() scalar"
        if self.transposed:
            text += " transposed"
        if self.zero_row is not None:
            text += f" row {self.zero_row} zero"
        return text


LARGE = (4097, 4099)  # 16,793,603 elements: more than one grid pass
assert LARGE[0] * LARGE[1] > MAX_ELEMENTWISE_ELEMENTS_PER_PASS

BIAS_GELU_CASES = (
    Case((1,)),  # one element, 1-D
    Case((7, 33)),  # odd sizes
    Case((3, 5, 257)),  # 3-D, last dimension not a multiple of the block
    Case((513, 1031)),  # elements not a multiple of the block
    Case((0, 8)),  # no rows: empty output, zero bias gradient
    Case((4, 0)),  # empty rows: empty bias and bias gradient
    Case((65, 33), transposed=True),  # non-contiguous x
    Case(LARGE),  # grid-stride loop
)

ROW_NORM_CASES = (
    Case((1, 1)),  # one element
    Case((7, 33)),  # odd sizes
    Case((300, 257)),  # row not a multiple of the block
    Case((1, 100003)),  # long row: ~391 elements a thread
    Case((17, 33), zero_row=3),  # subgradient 0 at a zero norm
    Case((0, 5)),  # no rows
    Case((4, 0)),  # empty rows: norm 0
    Case((70001, 3)),  # more blocks than 65535
    Case((65, 33), transposed=True),  # non-contiguous x
    Case(LARGE),  # backward's grid-stride loop
)

AXPBY_CASES = (
    Case(()),  # 0-d
    Case((0,)),  # empty
    Case((7, 33)),  # odd sizes
    Case((3, 5, 257)),  # 3-D
    Case((1000003,)),  # elements not a multiple of the block
    Case((65, 33), transposed=True),  # non-contiguous x and y
    Case(LARGE),  # grid-stride loop
)


TILE_MATMUL_CASES = (
    Case((1, 16)),  # one row of a 64-row tile
    Case((64, 16)),  # one full tile
    Case((100, 16)),  # a partial second tile
    Case((4097, 16)),  # 65 tiles, the last with one row
    Case((0, 16)),  # no rows
    Case((70, 16), transposed=True),  # non-contiguous a
)


class Inputs:
    """Random inputs in float64 rounded to `dtype`: the exact values the GPU sees, for the reference."""

    def __init__(self, gen, dtype, device):
        self.gen, self.dtype, self.device = gen, dtype, device

    def make(self, case, scale=1.0):
        """(float64 CPU copy for the reference, leaf CUDA tensor of `dtype` that requires grad)."""
        stored = tuple(reversed(case.shape)) if case.transposed else case.shape
        values = torch.randn(stored, generator=self.gen, dtype=torch.float64) * scale
        if case.zero_row is not None:
            values[case.zero_row] = 0
        rounded = values.to(self.dtype)
        on_device = rounded.to(self.device)
        if case.transposed:
            rounded, on_device = rounded.t(), on_device.t()
        return rounded.to(torch.float64), on_device.detach().requires_grad_()


def check_output(got, ref_shape, dtype):
    """The metadata a kernel must get right before its values are compared."""
    if not got.is_cuda:
        raise ValueError(f"result on {got.device}, expected a CUDA device")
    if got.dtype != dtype:
        raise ValueError(f"result dtype {dtype_name(got.dtype)}, expected {dtype_name(dtype)}")
    if got.shape != ref_shape:
        raise ValueError(f"result shape {tuple(got.shape)}, expected {tuple(ref_shape)}")


def run_case(table, op, dtype, case, body, tolerance=None, checked="forward+backward"):
    """Runs body (which returns [(direction, got, ref)]); any exception is one FAIL row
    for `checked`. The tolerance is the dtype's unless given."""
    tolerance = TOLERANCE[dtype] if tolerance is None else tolerance
    try:
        results = body()
        torch.cuda.synchronize()
        rows = [(direction, max_relative_error(got, ref)) for direction, got, ref in results]
    except Exception as error:  # a kernel error or a wrong result's metadata: a FAIL, not a crash
        message = f"{type(error).__name__}: {error}".splitlines()[0][:160]
        table.add(op, checked, dtype, case.label(), None, tolerance, message)
        return
    for direction, error in rows:
        table.add(op, direction, dtype, case.label(), error, tolerance)


def check_bias_gelu(table, ops, inputs, case):
    def body():
        x_ref, x = inputs.make(case, scale=2.0)
        bias_ref, bias = inputs.make(Case(case.shape[-1:]))
        grad_ref, grad = inputs.make(Case(case.shape))
        y = ops.bias_gelu(x, bias)
        check_output(y, x.shape, inputs.dtype)
        grad_x, grad_bias = torch.autograd.grad(y, (x, bias), grad.detach())
        check_output(grad_x, x.shape, inputs.dtype)
        check_output(grad_bias, bias.shape, inputs.dtype)
        ref_grad_x, ref_grad_bias = ref_bias_gelu_backward(grad_ref, x_ref, bias_ref)
        return [
            ("forward", y, ref_bias_gelu(x_ref, bias_ref)),
            ("backward (x)", grad_x, ref_grad_x),
            ("backward (bias)", grad_bias, ref_grad_bias),
        ]

    run_case(table, "bias_gelu", inputs.dtype, case, body)


def check_row_norm(table, ops, inputs, case):
    def body():
        x_ref, x = inputs.make(case)
        grad_ref, grad = inputs.make(Case(case.shape[:1]))
        y = ops.row_norm(x)
        check_output(y, x.shape[:1], inputs.dtype)
        (grad_x,) = torch.autograd.grad(y, x, grad.detach())
        check_output(grad_x, x.shape, inputs.dtype)
        return [
            ("forward", y, ref_row_norm(x_ref)),
            ("backward (x)", grad_x, ref_row_norm_backward(grad_ref, x_ref)),
        ]

    run_case(table, "row_norm", inputs.dtype, case, body)


def check_axpby(table, ops, inputs, case):
    def body():
        x_ref, x = inputs.make(case)
        y_ref, y = inputs.make(case)
        grad_ref, grad = inputs.make(Case(case.shape))
        out = ops.axpby(x, y, ALPHA, BETA)
        check_output(out, x.shape, inputs.dtype)
        grad_x, grad_y = torch.autograd.grad(out, (x, y), grad.detach())
        check_output(grad_x, x.shape, inputs.dtype)
        check_output(grad_y, y.shape, inputs.dtype)
        ref_grad_x, ref_grad_y = ref_axpby_backward(grad_ref, ALPHA, BETA)
        return [
            ("forward", out, ref_axpby(x_ref, y_ref, ALPHA, BETA)),
            ("backward (x)", grad_x, ref_grad_x),
            ("backward (y)", grad_y, ref_grad_y),
        ]

    run_case(table, "axpby", inputs.dtype, case, body)


def expected_tile_matmul_path():
    """1 (the sm_90a wgmma code) on compute capability 9.0 unless the PTX is forced, else 0."""
    forced = os.environ.get("CUDA_FORCE_PTX_JIT") == "1"
    return 1 if torch.cuda.get_device_capability(0) == (9, 0) and not forced else 0


def check_tile_matmul(table, ops, inputs, case):
    """`inputs` are float16, tile_matmul's only dtype."""

    def body():
        a_ref, a = inputs.make(case)
        b_ref, b = inputs.make(Case((16, 8)))
        d = ops.tile_matmul(a.detach(), b.detach())
        check_output(d, (case.shape[0], 8), torch.float32)
        return [("forward", d, a_ref @ b_ref)]

    # float32 sums of 16 float16 products: the float32 tolerance.
    run_case(table, "tile_matmul", torch.float16, case, body,
             tolerance=TOLERANCE[torch.float32], checked="forward")


def check_tile_matmul_path(table, ops):
    expected = expected_tile_matmul_path()
    got = ops.tile_matmul_path()
    names = {1: "sm_90a wgmma code", 0: "portable code"}
    table.add("tile_matmul", "code that ran", torch.float16, "-", 0.0 if got == expected else None,
              0.0, f"{names.get(got, got)}, expected the {names[expected]}")


# --- Environment -----------------------------------------------------------


def nvidia_smi_driver():
    if shutil.which("nvidia-smi") is None:
        return "unknown (nvidia-smi not found)"
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return f"unknown (nvidia-smi failed: {error})"
    return out.splitlines()[0].strip() if out.strip() else "unknown (nvidia-smi printed nothing)"


def cuda_driver_api_version():
    get = getattr(torch._C, "_cuda_getDriverVersion", None)
    if get is None:
        return "unknown"
    version = get()
    return f"{version // 1000}.{version % 1000 // 10}"


def shown_path(path):
    """`path` relative to the working directory (tests/gpu/run.sh runs in the
    repository's root) when it lies under it, so reports name no machine's
    checkout."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def environment(demo_ext, seed):
    major, minor = torch.cuda.get_device_capability(0)
    if demo_ext.ops._kernels is demo_ext._C:
        kernels = "demo_ext._C functions (pybind11 bindings)"
    else:
        kernels = "torch.ops.demo_ext (torch-library registration)"
    try:
        version = importlib.metadata.version("demo_ext")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown (no installed distribution metadata)"
    return [
        ("GPU", torch.cuda.get_device_name(0)),
        ("compute capability", f"{major}.{minor}"),
        ("driver", f"{nvidia_smi_driver()} (CUDA driver API {cuda_driver_api_version()})"),
        ("torch", f"{torch.__version__} (CUDA {torch.version.cuda})"),
        ("Python", f"{platform.python_version()} ({shown_path(sys.executable)})"),
        ("demo_ext", f"{version} ({shown_path(os.path.dirname(demo_ext.__file__))})"),
        ("demo_ext._C", os.path.basename(demo_ext._C.__file__)),
        ("kernels called through", kernels),
        ("CUDA_DISABLE_PTX_JIT", os.environ.get("CUDA_DISABLE_PTX_JIT", "(unset)")),
        ("CUDA_FORCE_PTX_JIT", os.environ.get("CUDA_FORCE_PTX_JIT", "(unset)")),
        ("seed", str(seed)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the input generator (default 0)")
    parser.add_argument("--markdown", metavar="FILE", help="append the header and table as Markdown to FILE")
    parser.add_argument("--references-only", action="store_true",
                        help="only check the references against torch's own implementations (CPU)")
    args = parser.parse_args()

    references = Table()
    check_references(references)
    print("References against torch's implementations (float64, CPU):")
    print(references.text())
    print()
    if args.references_only:
        return 1 if references.failures else 0

    if not torch.cuda.is_available():
        print(f"check_ops: CUDA is not available to torch {torch.__version__} "
              f"(torch.version.cuda={torch.version.cuda}); run this on a machine with an NVIDIA GPU",
              file=sys.stderr)
        return 2

    import demo_ext
    import demo_ext.ops as ops

    header = environment(demo_ext, args.seed)
    for key, value in header:
        print(f"{key + ':':<24}{value}")
    print()

    table = Table()
    gen = torch.Generator().manual_seed(args.seed)
    # With CUDA_FORCE_PTX_JIT=1 the driver runs only PTX, and torch's own
    # kernels (its wheels carry machine code, and PTX only for their newest
    # arch) then fail with "no kernel image": only the checks that launch no
    # torch kernel run, tile_matmul's on contiguous inputs.
    ptx_only = os.environ.get("CUDA_FORCE_PTX_JIT") == "1"
    if ptx_only:
        print("CUDA_FORCE_PTX_JIT=1: only tile_matmul's checks that launch no torch kernel run "
              "(torch's own kernels have no PTX for this GPU)")
    else:
        for check, cases in (
            (check_bias_gelu, BIAS_GELU_CASES),
            (check_row_norm, ROW_NORM_CASES),
            (check_axpby, AXPBY_CASES),
        ):
            for dtype in DTYPES:
                inputs = Inputs(gen, dtype, "cuda")
                for case in cases:
                    check(table, ops, inputs, case)
    if hasattr(ops._kernels, "tile_matmul"):
        check_tile_matmul_path(table, ops)
        inputs = Inputs(gen, torch.float16, "cuda")
        for case in TILE_MATMUL_CASES:
            if not (ptx_only and case.transposed):  # .contiguous() is a torch kernel
                check_tile_matmul(table, ops, inputs, case)
    else:
        print("tile_matmul: not in this wheel (the torch-stable flavour does not carry it)")

    failures = table.failures + references.failures
    total = len(table.rows) + len(references.rows)
    print(table.text())
    print()
    summary = f"{total - failures}/{total} checks passed" + (f", {failures} FAILED" if failures else "")
    print(summary)

    if args.markdown:
        info = dict(header)
        lines = [f"### demo_ext on {info['GPU']}, CUDA_DISABLE_PTX_JIT={info['CUDA_DISABLE_PTX_JIT']}, "
                 f"CUDA_FORCE_PTX_JIT={info['CUDA_FORCE_PTX_JIT']}", ""]
        lines += [f"- {key}: {value}" for key, value in header]
        lines += [f"- references checked against torch's own: {len(references.rows) - references.failures}"
                  f"/{len(references.rows)} passed", f"- {summary}", "", table.markdown(), ""]
        with open(args.markdown, "a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
