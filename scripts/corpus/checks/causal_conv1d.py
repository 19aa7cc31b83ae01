#!/usr/bin/env python3
"""GPU correctness checks for the causal-conv1d wheel (module causal_conv1d_cuda).

Compares causal_conv1d_fn (forward + backward) and causal_conv1d_update on CUDA
against the package's own pure-PyTorch references (causal_conv1d_ref,
causal_conv1d_update_ref), evaluated on CPU (float64 weights) so that no
cuDNN/TF32 path is involved on the reference side.
Tolerances follow the package's tests/test_causal_conv1d.py.
"""
import sys
import traceback

import torch

PKG = "causal_conv1d"
DEV = "cuda"
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
    assert actual.is_cuda, f"{what}: result is not on cuda ({actual.device})"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    a = actual.detach().cpu().double()
    e = expected.detach().cpu().double()
    _ERRS.append((a - e).abs().max().item() if a.numel() else 0.0)
    torch.testing.assert_close(a, e, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def tols(itype):
    if itype == torch.float32:
        return 3e-4, 1e-3
    if itype == torch.float16:
        return 3e-3, 5e-3
    return 1e-2, 5e-2


def fwd_bwd(itype, width, seqlen, dim, has_bias, activation, channel_last=False,
            has_initial_states=False, return_final_states=False, batch=2):
    from causal_conv1d import causal_conv1d_fn
    from causal_conv1d.causal_conv1d_interface import causal_conv1d_ref
    rtol, atol = tols(itype)
    rtolw, atolw = 1e-3, 1e-3
    torch.manual_seed(0)
    if not channel_last:
        # strided (non-contiguous along channels) input, as in the upstream test
        x = torch.randn(batch, dim + 96, seqlen, device=DEV, dtype=itype)[:, 32:32 + dim, :]
    else:
        x = torch.randn(batch, seqlen, dim + 96, device=DEV, dtype=itype)[:, :, 32:32 + dim].transpose(1, 2)
    x.requires_grad_()
    weight = torch.randn(dim, width, device=DEV, dtype=torch.float32, requires_grad=True)
    bias = torch.randn(dim, device=DEV, dtype=torch.float32, requires_grad=True) if has_bias else None
    init = None
    if has_initial_states:
        init = torch.randn(batch, width - 1, dim, device=DEV, dtype=itype).transpose(1, 2).requires_grad_()
    # reference leaves on CPU; weights/bias/initial states in float64
    x_ref = x.detach().cpu().requires_grad_()
    w_ref = weight.detach().cpu().double().requires_grad_()
    b_ref = bias.detach().cpu().double().requires_grad_() if has_bias else None
    init_ref = init.detach().cpu().double().requires_grad_() if has_initial_states else None

    out = causal_conv1d_fn(x, weight, bias, initial_states=init,
                           return_final_states=return_final_states, activation=activation)
    out_ref = causal_conv1d_ref(x_ref, w_ref, b_ref, initial_states=init_ref,
                                return_final_states=return_final_states, activation=activation)
    if return_final_states:
        out, fin = out
        out_ref, fin_ref = out_ref
        close(fin, fin_ref, rtol, atol, "final_states")
        out = out + torch.sigmoid(fin).sum(dim=-1, keepdim=True)
        out_ref = out_ref + torch.sigmoid(fin_ref).sum(dim=-1, keepdim=True).to(out_ref.dtype)
    close(out, out_ref, rtol, atol, "out")
    assert out.dtype == itype, f"out dtype {out.dtype} != {itype}"

    g = torch.randn_like(out)
    out.backward(g)
    out_ref.backward(g.cpu())
    close(x.grad, x_ref.grad.to(itype), rtol, atol, "dx")
    close(weight.grad, w_ref.grad, rtolw, atolw, "dweight")
    if has_bias:
        close(bias.grad, b_ref.grad, rtolw, atolw, "dbias")
    if has_initial_states:
        close(init.grad, init_ref.grad.to(itype), rtol, atol, "dinitial_states")


def update(itype, width, seqlen, dim, has_bias, activation, use_cache_seqlens,
           use_indices=False, batch=8):
    from causal_conv1d import causal_conv1d_update
    from causal_conv1d.causal_conv1d_interface import causal_conv1d_update_ref
    rtol, atol = tols(itype)
    torch.manual_seed(1)
    if seqlen is None:  # 2-D x: (batch, dim)
        x = torch.randn(batch, dim, device=DEV, dtype=itype)
    else:
        x = torch.randn(batch, seqlen, dim, device=DEV, dtype=itype).transpose(-1, -2)
    state_len = width - 1 + 3
    total = 4 * batch if use_indices else batch
    conv_state = torch.randn(total, state_len, dim, device=DEV, dtype=itype).transpose(-1, -2)
    weight = torch.randn(dim, width, device=DEV, dtype=torch.float32)
    bias = torch.randn(dim, device=DEV, dtype=torch.float32) if has_bias else None
    cache_seqlens = (torch.randint(0, 1024, (batch,), dtype=torch.int32, device=DEV)
                     if use_cache_seqlens else None)
    indices = (torch.randperm(total)[:batch].to(dtype=torch.int32, device=DEV)
               if use_indices else None)
    sel = indices.long().cpu() if use_indices else slice(None)
    state_ref = conv_state.detach().cpu()[sel].clone()
    untouched_before = conv_state.detach().cpu().clone()
    out = causal_conv1d_update(x, conv_state, weight, bias, activation=activation,
                               cache_seqlens=cache_seqlens, conv_state_indices=indices)
    out_ref = causal_conv1d_update_ref(
        x.cpu(), state_ref, weight.cpu(), bias.cpu() if has_bias else None,
        activation=activation,
        cache_seqlens=cache_seqlens.cpu() if use_cache_seqlens else None)
    close(out, out_ref, rtol, atol, "out")
    state_now = conv_state[indices.long()] if use_indices else conv_state
    close(state_now, state_ref, 0.0, 0.0, "conv_state")
    if use_indices:
        mask = torch.ones(total, dtype=torch.bool)
        mask[indices.long().cpu()] = False
        assert torch.equal(conv_state.cpu()[mask], untouched_before[mask]), \
            "conv_state rows not selected by conv_state_indices were modified"


def main():
    try:
        import causal_conv1d  # noqa: F401
        import causal_conv1d_cuda  # noqa: F401
        from causal_conv1d import causal_conv1d_fn, causal_conv1d_update  # noqa: F401
        assert torch.cuda.is_available(), "CUDA not available"
        print(f"import: PASS max_abs_err=0.000e+00 (causal_conv1d {causal_conv1d.__version__}, "
              f"{torch.cuda.get_device_name()})")
        RESULTS.append(True)
    except Exception:
        traceback.print_exc()
        print("import: FAIL max_abs_err=nan")
        print(f"{PKG}: 0/1 checks passed")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    dtypes = [("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)]
    variants = [(False, None), (True, "silu"), (True, None), (False, "silu")]
    seqlens = [1, 8, 127, 512, 2049, 4096]
    i = 0
    for dname, itype in dtypes:
        for width in (2, 3, 4):
            for has_bias, act in variants:
                seqlen = seqlens[i % len(seqlens)]
                dim = (64, 136)[i % 2]
                i += 1
                name = (f"fn_fwd_bwd[{dname},w={width},L={seqlen},D={dim},"
                        f"bias={int(has_bias)},act={act}]")
                check(name, lambda a=(itype, width, seqlen, dim, has_bias, act): fwd_bwd(*a))

    # channel-last layout, with initial states and returned final states
    for dname, itype in dtypes:
        for width, seqlen in ((2, 64), (4, 257)):
            name = f"fn_channel_last_states[{dname},w={width},L={seqlen}]"
            check(name, lambda a=(itype, width, seqlen): fwd_bwd(
                a[0], a[1], a[2], 64, True, "silu", channel_last=True,
                has_initial_states=True, return_final_states=True))
    check("fn_channel_last[fp32,w=3,L=300,no states]",
          lambda: fwd_bwd(torch.float32, 3, 300, 128, False, None, channel_last=True))

    j = 0
    for dname, itype in dtypes:
        for width in (2, 3, 4):
            for seqlen, use_cs in ((None, False), (1, True), (4, False), (5, True)):
                has_bias, act = variants[j % len(variants)]
                j += 1
                name = (f"update[{dname},w={width},L={seqlen},bias={int(has_bias)},act={act},"
                        f"cache_seqlens={int(use_cs)}]")
                check(name, lambda a=(itype, width, seqlen, 256, has_bias, act, use_cs):
                      update(*a))
    for dname, itype in dtypes:
        check(f"update_state_indices[{dname},w=4,L=2]",
              lambda t=itype: update(t, 4, 2, 256, True, "silu", False, use_indices=True))

    n_ok = sum(RESULTS)
    print(f"{PKG}: {n_ok}/{len(RESULTS)} checks passed")
    return 0 if n_ok == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
