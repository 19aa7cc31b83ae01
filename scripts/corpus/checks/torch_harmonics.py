#!/usr/bin/env python3
# needs: numpy
"""GPU correctness checks for the torch-harmonics 0.8.1 wheel's compiled modules
(disco_helpers, attention_helpers, torch_harmonics.disco._C, torch_harmonics.attention._C).

DISCO (transpose) convolutions through the CUDA kernels (optimized_kernel=True) are compared with
torch-harmonics' own pure-torch contraction (optimized_kernel=False: sparse bmm + roll) run in
float64, and with the wheel's C++ CPU kernels; float32 and float64, forward and backward (input and
weight gradients). Neighborhood attention (float32-only kernels) is compared with the package's
pure-torch reference op and with the C++ CPU kernels: output, q/k/v and parameter gradients.
Fails if the package fell back to its torch paths (no optimized / CUDA kernels).
Exit 1 if any check fails.
"""
import importlib
import os
import sys
import traceback

import torch

DEV = "cuda"
CHECKS = []
_ERR = [0.0]


def check(name):
    def deco(fn):
        CHECKS.append((name, fn))
        return fn
    return deco


def close(actual, expected, atol, rtol, what=""):
    a, e = actual.detach().cpu().double(), expected.detach().cpu().double()
    if a.shape == e.shape and a.numel():
        _ERR[0] = max(_ERR[0], float((a - e).abs().max()))
    torch.testing.assert_close(a, e, atol=atol, rtol=rtol, msg=lambda m: f"{what}: {m}")


def disable_tf32():  # F.conv2d (attention projections) would use TF32 by default
    try:
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    except (AttributeError, RuntimeError):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


@check("backend (compiled helpers/_C loaded, CUDA kernels registered)")
def _backend():
    import torch_harmonics  # noqa: F401  (registers the custom ops)
    for helper in ("disco_helpers", "attention_helpers"):
        mod = importlib.import_module(helper)
        f = getattr(mod, "__file__", "") or ""
        assert f.endswith(".so"), f"{helper} is not a compiled module: {f!r}"
        assert mod.optimized_kernels_is_available(), f"{helper}: optimized kernels unavailable"
        assert mod.cuda_kernels_is_available(), f"{helper}: built without CUDA kernels"
    for sub, ns in (("disco", "disco_kernels"), ("attention", "attention_kernels")):
        mod = importlib.import_module(f"torch_harmonics.{sub}._C")
        f = getattr(mod, "__file__", "") or ""
        pkg_dir = os.path.dirname(importlib.import_module(f"torch_harmonics.{sub}").__file__)
        assert f.endswith(".so") and os.path.dirname(f) == pkg_dir, f"{sub}._C: unexpected file {f!r}"
        assert getattr(importlib.import_module(f"torch_harmonics.{sub}"), ns) is not None, f"{ns} missing"
        for op in ("forward", "backward"):
            for key in ("CUDA", "CPU"):
                assert torch._C._dispatch_has_kernel_for_dispatch_key(f"{ns}::{op}", key), f"{ns}::{op} has no {key} kernel"


def _disco_pair(transpose, in_shape, out_shape, kshape, basis, dtype, b=4, cin=4, cout=2):
    from torch_harmonics import DiscreteContinuousConvS2, DiscreteContinuousConvTransposeS2
    Conv = DiscreteContinuousConvTransposeS2 if transpose else DiscreteContinuousConvS2
    k0 = kshape if isinstance(kshape, int) else kshape[0]
    cutoff = (k0 + 1) * torch.pi / float(in_shape[0] - 1)
    kw = dict(basis_type=basis, basis_norm_mode="mean", groups=1, grid_in="equiangular",
              grid_out="equiangular", bias=False, theta_cutoff=cutoff)
    opt = Conv(cin, cout, in_shape, out_shape, kshape, optimized_kernel=True, **kw)
    ref = Conv(cin, cout, in_shape, out_shape, kshape, optimized_kernel=False, **kw)
    assert opt.optimized_kernel and not ref.optimized_kernel, "optimized kernel not in use"
    with torch.no_grad():
        ref.weight.copy_(opt.weight)
    x = torch.randn(b, cin, *in_shape, dtype=torch.float64)
    return opt, ref, x


def _run(model, x, gout):
    x = x.detach().clone().requires_grad_()
    model.weight.grad = None
    out = model(x)
    out.backward(gout.to(out.device, out.dtype))
    return out.detach(), x.grad, model.weight.grad.detach().clone()


def _disco_check(transpose, in_shape, out_shape, kshape, basis, dtype):
    torch.manual_seed(333)
    opt, ref, x = _disco_pair(transpose, in_shape, out_shape, kshape, basis, dtype)
    gout = torch.randn(x.shape[0], opt.weight.shape[0], *out_shape, dtype=torch.float64)
    r_out, r_gx, r_gw = _run(ref.to(device=DEV, dtype=torch.float64), x.to(DEV), gout)  # torch path, f64
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-9, rtol=1e-9)
    results = {}
    for dev in (DEV, "cpu"):  # CUDA kernels, then the wheel's C++ CPU kernels
        results[dev] = _run(opt.to(device=dev, dtype=dtype), x.to(dev, dtype), gout)
        for name, got, want in zip(("output", "input grad", "weight grad"), results[dev], (r_out, r_gx, r_gw)):
            close(got, want, what=f"{dev} {name} vs torch reference", **tol)
    for name, got, want in zip(("output", "input grad", "weight grad"), results[DEV], results["cpu"]):
        close(got, want, what=f"{name} CUDA vs CPU kernel", **tol)


DISCO_CASES = [
    (False, (41, 80), (41, 80), 3, "piecewise linear", torch.float32),
    (False, (41, 80), (21, 40), (2, 2), "morlet", torch.float32),
    (False, (41, 80), (21, 40), 3, "zernike", torch.float32),
    (False, (41, 80), (41, 80), 3, "piecewise linear", torch.float64),
    (False, (41, 80), (21, 40), (2, 2), "morlet", torch.float64),
    (True, (41, 80), (41, 80), 3, "piecewise linear", torch.float32),
    (True, (21, 40), (41, 80), (2, 2), "morlet", torch.float32),
    (True, (41, 80), (41, 80), 3, "piecewise linear", torch.float64),
    (True, (21, 40), (41, 80), (2, 1), "morlet", torch.float64),
]
for _c in DISCO_CASES:
    _name = (f"DISCO {'transpose ' if _c[0] else ''}conv fwd+bwd {str(_c[5])[6:]} "
             f"{_c[1]}->{_c[2]} {_c[4]} {_c[3]}")
    check(_name)(lambda c=_c: _disco_check(*c))


def _attention_models(channels, channels_out, heads, in_shape, out_shape, grid, **kw):
    from torch_harmonics import NeighborhoodAttentionS2
    from torch_harmonics.attention._attention_utils import _neighborhood_s2_attention_optimized
    args = dict(in_channels=channels, out_channels=channels_out, num_heads=heads, in_shape=in_shape,
                out_shape=out_shape, grid_in=grid, grid_out=grid, bias=True, **kw)
    opt = NeighborhoodAttentionS2(optimized_kernel=True, **args)
    ref = NeighborhoodAttentionS2(optimized_kernel=False, **args)
    assert opt.optimized_kernel and opt.attention_handle is _neighborhood_s2_attention_optimized
    with torch.no_grad():
        for p in opt.parameters():  # non-zero biases so that their gradients are exercised too
            p.add_(0.1 * torch.randn_like(p))
    ref.load_state_dict(opt.state_dict())
    return opt, ref


def _att_run(model, inputs, gout, dev):
    # A fresh leaf per run: the CPU run must not make the inputs require grad.
    xs = {k: v.detach().clone().to(dev).requires_grad_() for k, v in inputs.items()}
    model.zero_grad()
    out = model(xs["q"], xs["k"], xs["v"])
    out.backward(gout.to(dev))
    grads = {f"input grad {k}": x.grad for k, x in xs.items()}
    grads.update({f"param grad {n}": p.grad.detach().clone() for n, p in model.named_parameters()})
    return out.detach(), grads


def _attention_check(b, channels, channels_out, heads, in_shape, out_shape, grid, vs_cpu_kernel):
    torch.manual_seed(333)
    opt, ref = _attention_models(channels, channels_out, heads, in_shape, out_shape, grid)
    inputs = {"k": torch.randn(b, channels, *in_shape), "v": torch.randn(b, channels, *in_shape),
              "q": torch.randn(b, channels, *out_shape)}
    gout = torch.randn(b, channels_out, *out_shape)
    # reference: the wheel's C++ CPU kernels, or the package's pure-torch op (slow: small shapes only)
    r_out, r_grads = _att_run(opt if vs_cpu_kernel else ref, inputs, gout, "cpu")
    out, grads = _att_run(opt.to(DEV), inputs, gout, DEV)
    close(out, r_out, 1e-5, 1e-3, "output")
    for name, g in grads.items():
        close(g, r_grads[name], 1e-4, 1e-3, name)


ATT_CASES = [  # b, channels, channels_out, heads, in_shape, out_shape, grid, vs_cpu_kernel
    (4, 4, 4, 1, (6, 12), (6, 12), "equiangular", False),
    (4, 8, 4, 4, (12, 24), (6, 12), "equiangular", False),
    (2, 8, 4, 2, (6, 12), (12, 24), "equiangular", False),
    (2, 4, 4, 2, (6, 12), (6, 12), "legendre-gauss", False),
    (2, 16, 16, 1, (25, 48), (25, 48), "equiangular", True),
    (2, 16, 8, 2, (32, 64), (16, 32), "legendre-gauss", True),
]
for _c in ATT_CASES:
    _name = (f"NeighborhoodAttentionS2 fwd+bwd {_c[4]}->{_c[5]} h={_c[3]} {_c[6]} "
             f"vs {'CPU kernel' if _c[7] else 'torch ref'}")
    check(_name)(lambda c=_c: _attention_check(*c))


def main():
    if not torch.cuda.is_available():
        print("CUDA is not available on this machine")
        print(f"torch_harmonics: 0/{len(CHECKS)} checks passed")
        return 1
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"sm_{''.join(map(str, torch.cuda.get_device_capability()))}")
    disable_tf32()
    passed = 0
    for name, fn in CHECKS:
        _ERR[0] = 0.0
        try:
            fn()
            torch.cuda.synchronize()
            print(f"{name}: PASS max_abs_err={_ERR[0]:.3e}", flush=True)
            passed += 1
        except Exception:
            print(f"{name}: FAIL max_abs_err={_ERR[0]:.3e}", flush=True)
            traceback.print_exc()
            sys.stdout.flush()
    print(f"torch_harmonics: {passed}/{len(CHECKS)} checks passed")
    return 0 if passed == len(CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
