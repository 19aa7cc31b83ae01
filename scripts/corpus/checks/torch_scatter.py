#!/usr/bin/env python3
"""GPU correctness checks for the torch_scatter 2.1.2 wheel (torch 2.11 / CUDA 13, sm_90).

Every op runs on CUDA and is compared, forward and backward (autograd), against
the same op on CPU tensors (the package's CPU kernels) and against a
pure-PyTorch reference (Tensor.scatter_reduce) computed in float64.
Prints one line per check and exits 1 if any check failed.
"""
import importlib.machinery
import os
import sys
import traceback

# This file is named like the package: keep its folder off sys.path so that
# `import torch_scatter` finds the installed wheel, not this script.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != _HERE]

import torch  # noqa: E402

PKG = 'torch_scatter'
DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4),
       torch.float64: dict(rtol=1e-9, atol=1e-9)}
REF_REDUCE = {'sum': 'sum', 'mean': 'mean', 'mul': 'prod', 'min': 'amin', 'max': 'amax'}
results, _err = [], [0.0]


def close(actual, expected, cuda=True, exact=False):
    if cuda:
        assert actual.is_cuda, f'result is on {actual.device}, expected cuda'
    a, e = actual.detach().cpu(), expected.detach().cpu()
    assert a.shape == e.shape, f'shape {tuple(a.shape)} != {tuple(e.shape)}'
    if a.numel():  # NaN in the same places on both sides counts as equal (equal_nan)
        d = (a.double() - e.double()).abs().nan_to_num(0.0, float('inf'), float('inf'))
        _err[0] = max(_err[0], d.max().item())
    if exact or not a.is_floating_point():
        torch.testing.assert_close(a, e, rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(a, e.to(a.dtype), equal_nan=True, **TOL[a.dtype])


def check(name, fn, *args):
    _err[0] = 0.0
    try:
        fn(*args)
        ok = True
    except Exception:
        traceback.print_exc(file=sys.stdout)
        ok = False
    print(f'{name}: {"PASS" if ok else "FAIL"} max_abs_err={_err[0]:.3e}', flush=True)
    results.append(ok)
    return ok


def fwd_bwd(fn, args, device, dtype, grad=True):
    """Run fn on copies of args on device; returns (out, extra_outputs, grads of float args)."""
    args = [a.detach().to(device).requires_grad_(grad and a.is_floating_point())
            if torch.is_tensor(a) else a for a in args]
    res = fn(*args)
    out, extra = (res[0], list(res[1:])) if isinstance(res, tuple) else (res, [])
    grads = []
    if grad:
        gen = torch.Generator().manual_seed(1234)
        g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dtype)
        leaves = [a for a in args if torch.is_tensor(a) and a.requires_grad]
        grads = torch.autograd.grad((out * g.to(device, out.dtype)).sum(), leaves)
    return out, extra, grads


def compare(fn, ref, args, dtype, grad=True):
    """CUDA vs CPU (same op) and CUDA vs float64 pure-PyTorch reference."""
    oc, xc, gc = fwd_bwd(fn, args, 'cuda', dtype, grad)
    op, xp, gp = fwd_bwd(fn, args, 'cpu', dtype, grad)
    close(oc, op)
    for a, b in zip(xc, xp):
        close(a, b, exact=True)  # arg-min / arg-max indices
    for a, b in zip(gc, gp):
        close(a, b)
    if ref is not None:
        rargs = [a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in args]
        orf, _, gr = fwd_bwd(ref, rargs, 'cpu', dtype, grad)
        close(oc, orf)
        for a, b in zip(gc, gr):
            close(a, b)
    return oc, xc


def bcast(index, shape, dim):  # same rule as torch_scatter.utils.broadcast
    dim = dim % len(shape)
    if index.dim() == 1:
        index = index.view([1] * dim + [-1])
    while index.dim() < len(shape):
        index = index.unsqueeze(-1)
    return index.expand(*shape)


def ref_scatter(src, index, dim, n, reduce):
    idx = bcast(index, src.shape, dim)
    size = list(src.shape)
    size[dim % src.dim()] = n
    base = src.new_ones(size) if reduce == 'mul' else src.new_zeros(size)  # empty slot: 1 / 0
    return base.scatter_reduce(dim, idx, src, REF_REDUCE[reduce], include_self=False)


def distinct(shape, dtype, mul=False):
    n = 1
    for s in shape:
        n *= s
    if mul:  # keep products well-conditioned
        return (torch.rand(shape, dtype=torch.float64) + 0.5).to(dtype)
    v = (torch.randperm(n, dtype=torch.float64) + 1) / n * 2  # distinct and nonzero: a max of
    v[::2] *= -1                                             # exactly 0 would tie with the
    return v.view(shape).to(dtype)                           # reference's zero-filled base


# (src shape, index shape, index range, dim, dim_size) -- unsorted indices for scatter
SCATTER_CFGS = [((100,), (100,), 20, 0, 25), ((60, 16), (60,), 10, 0, 12),
                ((4, 50, 8), (50,), 12, 1, 12), ((3, 40, 6), (3, 40, 6), 7, -2, 9)]
# (src shape, sorted index shape, number of segments): index.dim()-1 is the reduced dim
SEGMENT_CFGS = [((300,), (300,), 5), ((200, 8), (200,), 32),
                ((3, 100, 5), (3, 100), 8), ((2, 64, 40), (2, 64), 3)]


def t_scatter(reduce, dtype):
    import torch_scatter as ts
    ops = {'sum': torch.ops.torch_scatter.scatter_sum,  # the compiled ops directly
           'mean': torch.ops.torch_scatter.scatter_mean}
    for shape, ishape, rng, dim, n in SCATTER_CFGS:
        torch.manual_seed(0)
        src = distinct(shape, dtype, mul=(reduce == 'mul'))
        index = torch.randint(0, rng, ishape)
        compare(lambda s, i: ts.scatter(s, i, dim, None, n, reduce),
                lambda s, i: ref_scatter(s, i, dim, n, reduce), [src, index], dtype)
        if reduce in ops:
            compare(lambda s, i: ops[reduce](s, i, dim, None, n),
                    lambda s, i: ref_scatter(s, i, dim, n, reduce), [src, index], dtype)
        if reduce in ('min', 'max'):
            fn = getattr(ts, f'scatter_{reduce}')
            out, (arg,) = compare(lambda s, i: fn(s, i, dim, None, n), None, [src, index], dtype)
            d = dim % src.dim()
            valid = arg < src.size(d)
            picked = src.cuda().gather(d, arg.clamp(max=src.size(d) - 1))
            close(torch.where(valid, picked, torch.zeros_like(picked)), out.detach(), exact=True)


def segment_inputs(shape, ishape, n, dtype):
    torch.manual_seed(0)
    src = distinct(shape, dtype)
    index = torch.randint(0, n, ishape).sort(dim=-1).values
    counts = torch.nn.functional.one_hot(index, n).sum(-2)  # [..., n]
    indptr = torch.cat([torch.zeros_like(counts[..., :1]), counts.cumsum(-1)], -1)
    return src, index, indptr


def t_segment(kind, reduce, dtype):
    import torch_scatter as ts
    for shape, ishape, n in SEGMENT_CFGS:
        src, index, indptr = segment_inputs(shape, ishape, n, dtype)
        dim = index.dim() - 1
        ref = (lambda s, i: ref_scatter(s, i, dim, n, reduce))
        if kind == 'coo':
            fn = {'sum': ts.segment_sum_coo, 'mean': ts.segment_mean_coo,
                  'min': ts.segment_min_coo, 'max': ts.segment_max_coo}[reduce]
            compare(lambda s, i: fn(s, i, None, n), ref, [src, index], dtype)
            compare(lambda s, i: ts.segment_coo(s, i, None, n, reduce), ref, [src, index], dtype)
        else:
            fn = {'sum': ts.segment_sum_csr, 'mean': ts.segment_mean_csr,
                  'min': ts.segment_min_csr, 'max': ts.segment_max_csr}[reduce]
            compare(lambda s, p: fn(s, p, None),
                    lambda s, p: ref(s, index), [src, indptr], dtype)
            compare(lambda s, p: ts.segment_csr(s, p, None, reduce),
                    lambda s, p: ref(s, index), [src, indptr], dtype)


def ref_gather(src, index):
    dim = index.dim() - 1
    idx = bcast(index, tuple(index.shape) + tuple(src.shape[dim + 1:]), dim)
    return src.gather(dim, idx)


def t_gather(kind, dtype):
    import torch_scatter as ts
    for shape, ishape, n in SEGMENT_CFGS:
        src_e, index, indptr = segment_inputs(shape, ishape, n, dtype)
        dim = index.dim() - 1
        src = distinct(tuple(src_e.shape[:dim]) + (n,) + tuple(src_e.shape[dim + 1:]), dtype)
        if kind == 'coo':
            compare(ts.gather_coo, lambda s, i: ref_gather(s, i), [src, index], dtype)
        else:
            compare(ts.gather_csr, lambda s, p: ref_gather(s, index), [src, indptr], dtype)


def ref_softmax(src, index, dim, log):
    n = int(index.max()) + 1
    idx = bcast(index, src.shape, dim)
    m = ref_scatter(src, index, dim, n, 'max').gather(dim, idx)
    s = ref_scatter((src - m).exp(), index, dim, n, 'sum')
    if log:
        return (src - m) - (s + 1e-12).log().gather(dim, idx)
    return (src - m).exp() / s.gather(dim, idx)


def t_composite(name, dtype):
    import torch_scatter as ts
    for shape, ishape, rng, dim, n in SCATTER_CFGS:
        torch.manual_seed(0)
        src = distinct(shape, dtype)
        index = torch.randint(0, rng, ishape)
        if name == 'softmax':
            compare(lambda s, i: ts.scatter_softmax(s, i, dim),
                    lambda s, i: ref_softmax(s, i, dim, False), [src, index], dtype)
        elif name == 'log_softmax':
            compare(lambda s, i: ts.scatter_log_softmax(s, i, dim),
                    lambda s, i: ref_softmax(s, i, dim, True), [src, index], dtype)
        elif name == 'logsumexp':
            compare(lambda s, i: ts.scatter_logsumexp(s, i, dim, dim_size=n), None, [src, index], dtype)
        elif name == 'std':
            compare(lambda s, i: ts.scatter_std(s, i, dim, dim_size=n), None, [src, index], dtype)


def t_env():
    assert torch.cuda.is_available(), 'torch.cuda.is_available() is False'
    print(f'  torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name(0)}')


def t_import():
    import torch_scatter
    d = os.path.dirname(torch_scatter.__file__)
    for lib in ['_version', '_scatter', '_segment_csr', '_segment_coo']:
        spec = importlib.machinery.PathFinder().find_spec(f'{lib}_cuda', [d])
        assert spec is not None, f'{PKG}.{lib}_cuda is missing from {d}'
    print(f'  {PKG} {torch_scatter.__version__} from {d}')


def t_cuda_version():
    v = torch.ops.torch_scatter.cuda_version()
    print(f'  torch.ops.torch_scatter.cuda_version() = {v}')
    assert v != -1 and v >= 10000, f'cuda_version() = {v}: the CUDA build was not loaded'
    assert v // 1000 == int(torch.version.cuda.split('.')[0]), (v, torch.version.cuda)


def main():
    check('cuda_available', t_env)
    if not (check('import', t_import) and results[0]):
        print(f'{PKG}: {sum(results)}/{len(results)} checks passed')
        return 1
    check('cuda_version', t_cuda_version)
    for dtype in DTYPES:
        dn = str(dtype).replace('torch.', '')
        for r in ['sum', 'mean', 'mul', 'min', 'max']:
            check(f'scatter_{r}[{dn}]', t_scatter, r, dtype)
        for kind in ['coo', 'csr']:
            for r in ['sum', 'mean', 'min', 'max']:
                check(f'segment_{r}_{kind}[{dn}]', t_segment, kind, r, dtype)
            check(f'gather_{kind}[{dn}]', t_gather, kind, dtype)
        for name in ['softmax', 'log_softmax', 'logsumexp', 'std']:
            check(f'scatter_{name}[{dn}]', t_composite, name, dtype)
    print(f'{PKG}: {sum(results)}/{len(results)} checks passed')
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
