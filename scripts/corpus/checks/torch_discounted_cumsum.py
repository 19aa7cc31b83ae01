#!/usr/bin/env python3
"""GPU correctness checks for the torch-discounted-cumsum 1.1.0 wheel (top-level modules
torch_discounted_cumsum_cpu and torch_discounted_cumsum_cuda).

discounted_cumsum_left/right on CUDA (the package's tree-shaped scan kernel) against a
pure-torch definition, y[i] = x[i] + g * y[i-1] (and the mirror image), evaluated in float64
and differentiated by autograd: forward, d input and d gamma, for a scalar gamma and one gamma
per row, float64 and float32, rows from 1 to past one block (1025, 4097). The package's CPU
module is checked against the same definition on its own: it reads a one-element gamma as if it
held one per row (discounted_cumsum_cpu.cpp sets gamma_scalar from `gamma.dim() == 0` after
requiring `dim() == 1`), so its scalar-gamma cases with more than one row read past the tensor,
in any build. Both compiled modules are imported first: the package JIT-compiles its sources
when they are missing, which must not happen here. Exit 1 if any check fails.
"""
import sys
import traceback

import torch

PKG = "torch_discounted_cumsum"
RESULTS = []
_ERRS = []


def check(name, fn):
    _ERRS.clear()
    ok = True
    try:
        fn()
        torch.cuda.synchronize()
    except Exception:
        ok = False
        traceback.print_exc()
    err = max(_ERRS) if _ERRS else float("nan")
    print(f"{name}: {'PASS' if ok else 'FAIL'} max_abs_err={err:.3e}", flush=True)
    RESULTS.append(ok)


def close(actual, expected, rtol, atol, what=""):
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    a = actual.detach().cpu().double()
    e = expected.detach().cpu().double()
    _ERRS.append((a - e).abs().max().item() if a.numel() else 0.0)
    torch.testing.assert_close(a, e, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def definition(x, gamma, left):
    """Sequential, in float64, from the definition; gamma is [1] or [B]; differentiable."""
    x = x.double()
    g = gamma.double().reshape(-1).expand(x.shape[0])
    cols = range(x.shape[1]) if left else range(x.shape[1] - 1, -1, -1)
    out, prev = {}, None
    for i in cols:
        prev = x[:, i] if prev is None else x[:, i] + g * prev
        out[i] = prev
    return torch.stack([out[i] for i in range(x.shape[1])], 1)


def inputs(B, N, per_row, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, N, generator=gen, dtype=dtype)
    gamma = torch.rand(B if per_row else 1, generator=gen, dtype=dtype) * 0.99
    grad = torch.randn(B, N, generator=gen, dtype=dtype)
    return x, gamma, grad


def against_definition(fn, left, B, N, per_row, dtype, seed, device):
    x, gamma, grad = inputs(B, N, per_row, dtype, seed)
    tol = 1e-7 if dtype == torch.float64 else 1e-3
    xr, gr = x.clone().requires_grad_(), gamma.clone().requires_grad_()
    want = definition(xr, gr, left)
    (want * grad.double()).sum().backward()
    xd, gd = x.to(device).requires_grad_(), gamma.to(device).requires_grad_()
    got = fn(xd, gd)
    assert got.device.type == device, f"result is on {got.device}"
    close(got, want, tol, tol, "forward")
    (got * grad.to(device)).sum().backward()
    close(xd.grad, xr.grad, tol, tol, "d input")
    # With one column gamma takes no part in the definition, so autograd leaves
    # its gradient unset: zero is what it means.
    close(zero_if_none(gd.grad, gd), zero_if_none(gr.grad, gr), tol * 10, tol * 10, "d gamma")


def zero_if_none(grad, like):
    return torch.zeros_like(like) if grad is None else grad


def main():
    import torch_discounted_cumsum_cpu  # noqa: F401  prebuilt, not JIT-compiled
    import torch_discounted_cumsum_cuda  # noqa: F401
    from torch_discounted_cumsum import discounted_cumsum_left, discounted_cumsum_right

    print("modules", torch_discounted_cumsum_cpu.__file__, torch_discounted_cumsum_cuda.__file__)
    seed = 0
    for device in ("cuda", "cpu"):
        for fn, left in ((discounted_cumsum_left, True), (discounted_cumsum_right, False)):
            for dtype in (torch.float64, torch.float32):
                for B, N in ((1, 1), (3, 100), (4, 1025), (2, 4097)):
                    for per_row in (False, True):
                        seed += 1
                        check(f"{fn.__name__}[{device},{str(dtype)[6:]},B={B},N={N},"
                              f"gamma={'per_row' if per_row else 'scalar'}]",
                              lambda a=(fn, left, B, N, per_row, dtype, seed, device): against_definition(*a))

    n_ok = sum(RESULTS)
    print(f"{PKG}: {n_ok}/{len(RESULTS)} checks passed")
    return 0 if n_ok == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
