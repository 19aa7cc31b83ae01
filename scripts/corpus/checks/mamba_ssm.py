#!/usr/bin/env python3
# needs: einops
"""GPU correctness checks for the mamba-ssm wheel (module selective_scan_cuda).

Compares selective_scan_fn (the CUDA kernel, forward and backward through
autograd) with the package's own pure-PyTorch reference, selective_scan_ref,
run on the CPU from the same input values (it computes in float32). Cases cover what the kernel
is instantiated for: float32, float16 and bfloat16 inputs; real and complex
A; constant, variable and grouped B/C; D, z, delta_bias, softplus and the
returned last state. Tolerances are of the order the package's own test
uses (its tests are not in the sdist).

Only mamba_ssm.ops.selective_scan_interface is imported: the package's
__init__ imports its models, which need transformers. Exit 1 if any fails.
"""
import importlib.util
import sys
import traceback
import types

import torch

PKG = "mamba_ssm"
DEV = "cuda"
RESULTS = []
_ERRS = []


def load_interface():
    """mamba_ssm.ops.selective_scan_interface without mamba_ssm/__init__.py."""
    spec = importlib.util.find_spec(PKG)
    assert spec is not None, "mamba_ssm is not installed"
    package = types.ModuleType(PKG)
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules[PKG] = package
    try:
        import triton  # noqa: F401  (the interface imports a Triton layer norm)
    except ImportError:
        # Only mamba_inner_fn uses it; selective_scan_fn does not.
        stub = types.ModuleType("mamba_ssm.ops.triton.layer_norm")
        stub._layer_norm_fwd = None
        sys.modules["mamba_ssm.ops.triton.layer_norm"] = stub
        print("(triton is not installed: its layer norm, unused here, is stubbed)")
    from mamba_ssm.ops import selective_scan_interface as interface
    import selective_scan_cuda
    print("selective_scan_cuda:", selective_scan_cuda.__file__)
    return interface


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


def close(actual, expected, rtol, atol, what):
    assert actual.is_cuda, f"{what}: result is not on cuda ({actual.device})"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    a = actual.detach().cpu().to(torch.complex128 if actual.is_complex() else torch.float64)
    e = expected.detach().cpu().to(a.dtype)
    _ERRS.append((a - e).abs().max().item() if a.numel() else 0.0)
    torch.testing.assert_close(a, e, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def tolerances(itype):
    if itype == torch.float32:
        return 6e-4, 2e-3
    # float16/bfloat16 inputs: the kernel accumulates in float32, the
    # reference in float32 from the same rounded inputs.
    return 3e-2, 5e-2


def scan(interface, itype, wtype, varB, varC, groups, has_D, has_z, has_delta_bias,
         softplus, last_state, seqlen=128, batch=2, dim=16, dstate=8):
    torch.manual_seed(0)
    rtol, atol = tolerances(itype)

    def leaf(t):
        return t.detach().requires_grad_()

    A = leaf(-0.5 * torch.rand(dim, dstate, dtype=wtype))
    if varB:
        shape = (batch, dstate, seqlen) if groups == 1 else (batch, groups, dstate, seqlen)
        B = leaf(torch.randn(*shape[:-1], seqlen * (2 if wtype.is_complex else 1), dtype=itype))
    else:
        B = leaf(torch.randn(dim, dstate, dtype=wtype))
    if varC:
        shape = (batch, dstate, seqlen) if groups == 1 else (batch, groups, dstate, seqlen)
        C = leaf(torch.randn(*shape[:-1], seqlen * (2 if wtype.is_complex else 1), dtype=itype))
    else:
        C = leaf(torch.randn(dim, dstate, dtype=wtype))
    D = leaf(torch.randn(dim, dtype=torch.float32)) if has_D else None
    z = leaf(torch.randn(batch, dim, seqlen, dtype=itype)) if has_z else None
    delta_bias = leaf(0.5 * torch.rand(dim, dtype=torch.float32)) if has_delta_bias else None
    u = leaf(torch.randn(batch, dim, seqlen, dtype=itype))
    delta = leaf(0.5 * torch.rand(batch, dim, seqlen, dtype=itype))
    inputs = {"u": u, "delta": delta, "A": A, "B": B, "C": C, "D": D, "z": z,
              "delta_bias": delta_bias}

    def on(device, dtype_of):
        return {k: (None if v is None else leaf(v.detach().to(device=device, dtype=dtype_of(v))))
                for k, v in inputs.items()}

    gpu = on(DEV, lambda v: v.dtype)
    # The reference on the CPU from the same values; it computes in float32
    # (complex64) whatever it is given, so half inputs are widened here.
    ref = on("cpu", lambda v: torch.complex64 if v.is_complex() else torch.float32)
    kwargs = {"delta_softplus": softplus, "return_last_state": last_state}
    out = interface.selective_scan_fn(*(gpu[k] for k in inputs), **kwargs)
    expected = interface.selective_scan_ref(*(ref[k] for k in inputs), **kwargs)
    if last_state:
        out, state = out
        expected, expected_state = expected
        close(state, expected_state, rtol, atol, "last_state")
    close(out, expected, rtol, atol, "out")
    g = torch.randn_like(out)
    out.backward(g)
    expected.backward(g.detach().cpu().to(expected.dtype))
    for k in inputs:
        if gpu[k] is None:
            continue
        # Gradients sum over batch and sequence: scale the tolerance as the
        # package's test does for its weight gradients.
        scale = 10 if k in ("A", "B", "C", "D", "delta_bias") else 3
        close(gpu[k].grad, ref[k].grad, rtol * scale, atol * scale, f"d{k}")


def main():
    assert torch.cuda.is_available(), "no CUDA device"
    interface = load_interface()
    dtypes = (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16))
    for dname, itype in dtypes:
        for wname, wtype in (("real", torch.float32), ("complex", torch.complex64)):
            for i, (varB, varC, has_D, has_z, has_bias, softplus, last) in enumerate((
                (True, True, True, True, True, True, False),
                (True, True, False, False, False, False, True),
                (False, True, True, False, True, True, False),
                (True, False, True, True, False, True, True),
            )):
                name = (f"selective_scan[{dname},{wname},varB={int(varB)},varC={int(varC)},"
                        f"D={int(has_D)},z={int(has_z)},bias={int(has_bias)},"
                        f"softplus={int(softplus)},last_state={int(last)}]")
                seqlen = (128, 255, 512, 2048)[i]
                check(name, lambda a=(itype, wtype, varB, varC, 1, has_D, has_z, has_bias,
                                      softplus, last, seqlen):
                      scan(interface, *a[:10], seqlen=a[10]))
    for dname, itype in dtypes:
        check(f"selective_scan_grouped[{dname},real,groups=2]",
              lambda t=itype: scan(interface, t, torch.float32, True, True, 2, True, True,
                                   True, True, False, seqlen=300, dim=16))
    n_ok = sum(RESULTS)
    print(f"{PKG}: {n_ok}/{len(RESULTS)} checks passed")
    return 0 if n_ok == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
