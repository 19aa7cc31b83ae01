#!/usr/bin/env python3
# needs: scipy
"""GPU correctness checks for the torch_sparse 0.6.18 wheel (torch 2.11 / CUDA 13, sm_90).

Ops run on CUDA and are compared, forward and backward (autograd), against the
same op on CPU tensors (the package's CPU kernels) and against dense
pure-PyTorch references computed in float64. torch_scatter must be installed.
Prints one line per check and exits 1 if any check failed.
"""
import importlib.machinery
import os
import sys
import traceback

# This file is named like the package: keep its folder off sys.path so that
# `import torch_sparse` finds the installed wheel, not this script.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != _HERE]

import torch  # noqa: E402

PKG = 'torch_sparse'
LIBS = ['_version', '_convert', '_diag', '_spmm', '_metis', '_rw', '_saint', '_sample',
        '_ego_sample', '_hgt_sample', '_neighbor_sample', '_relabel']
DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4),
       torch.float64: dict(rtol=1e-9, atol=1e-9)}
REF_REDUCE = {'sum': 'sum', 'mean': 'mean', 'min': 'amin', 'max': 'amax'}
SHAPES = [(30, 20, 0.2), (64, 48, 0.05), (7, 100, 0.3)]  # (M, N, density), some empty rows
results, _err, tsp = [], [0.0], None


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
    """Run fn on copies of args on device; returns (out, grads of the float args)."""
    args = [a.detach().to(device).requires_grad_(grad and a.is_floating_point())
            if torch.is_tensor(a) else a for a in args]
    out = fn(*args)
    grads = []
    if grad:
        gen = torch.Generator().manual_seed(1234)
        g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(dtype)
        leaves = [a for a in args if torch.is_tensor(a) and a.requires_grad]
        grads = torch.autograd.grad((out * g.to(device, out.dtype)).sum(), leaves)
    return out, grads


def compare(fn, ref, args, dtype, grad=True):
    """CUDA vs CPU (same op) and CUDA vs float64 pure-PyTorch reference."""
    oc, gc = fwd_bwd(fn, args, 'cuda', dtype, grad)
    op, gp = fwd_bwd(fn, args, 'cpu', dtype, grad)
    close(oc, op)
    for a, b in zip(gc, gp):
        close(a, b)
    if ref is not None:
        rargs = [a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in args]
        orf, gr = fwd_bwd(ref, rargs, 'cpu', dtype, grad)
        close(oc, orf)
        for a, b in zip(gc, gr):
            close(a, b)
    return oc


def rand_coo(m, n, density, dtype, seed=0, diag=False):
    """Row-major sorted, duplicate-free COO with distinct nonzero values; row 1 empty unless diag."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(m, n, generator=g) < density
    if diag:
        mask |= torch.eye(m, n, dtype=torch.bool)
    else:
        mask[1] = False
    row, col = mask.nonzero().t()
    value = (torch.randperm(row.numel(), generator=g, dtype=torch.float64) + 1) / row.numel() * 2
    value[::2] *= -1
    return row, col, value.to(dtype)


def dense(row, col, value, m, n):
    return value.new_zeros(m, n).index_put((row, col), value, accumulate=True)


def sp(row, col, value, m, n, dev):
    return tsp.SparseTensor(row=row.to(dev), col=col.to(dev), value=None if value is None else value.to(dev),
                        sparse_sizes=(m, n))


def both(make):  # make(dev) -> list of tensors; compare CUDA vs CPU exactly
    outs = [make(dev) for dev in ('cuda', 'cpu')]
    for a, b in zip(*outs):
        close(a, b, exact=not a.is_floating_point())
    return outs[0]


def t_convert():
    ops = torch.ops.torch_sparse
    for m, n, d in SHAPES:
        row = torch.cat([rand_coo(m, n, d, torch.float32)[0], torch.full((3,), m - 1)])
        ptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.bincount(row, minlength=m).cumsum(0)])
        for M in (m, m + 4):  # extra empty rows at the end
            ref = torch.cat([ptr, ptr.new_full((M - m,), row.numel())])
            close(ops.ind2ptr(row.cuda(), M), ref)
            close(ops.ind2ptr(row, M), ref, cuda=False)
        close(ops.ptr2ind(ptr.cuda(), row.numel()), row)
        close(ops.ptr2ind(ptr, row.numel()), row, cuda=False)
    close(ops.ind2ptr(torch.empty(0, dtype=torch.long, device='cuda'), 5), torch.zeros(6, dtype=torch.long))


def t_construct(dtype):
    for seed, (m, n, d) in enumerate(SHAPES):
        row, col, value = rand_coo(m, n, d, dtype, seed)
        ref = dense(row, col, value, m, n)
        perm = torch.randperm(row.numel(), generator=torch.Generator().manual_seed(seed))
        A = sp(row[perm], col[perm], value[perm], m, n, 'cuda')  # unsorted input gets sorted
        out = both(lambda dev: (lambda B: [*B.coo()] + [getattr(B.storage, a)() for a in (
            'rowptr', 'colptr', 'csr2csc', 'rowcount', 'colcount')])(
            sp(row[perm], col[perm], value[perm], m, n, dev)))
        for a, b in zip(out, (row, col, value)):
            close(a, b, exact=True)
        close(A.to_dense(), ref, exact=True)
        for a, b in zip(tsp.SparseTensor.from_dense(ref.cuda()).coo(), (row, col, value)):
            close(a, b, exact=True)
        C = tsp.SparseTensor.from_torch_sparse_coo_tensor(A.to_torch_sparse_coo_tensor())
        close(C.to_dense(), ref, exact=True)
        close(A.t().to_dense(), ref.t(), exact=True)  # transpose
        both(lambda dev: tsp.transpose(torch.stack([row, col]).to(dev), value.to(dev), m, n))


def t_coalesce(dtype):
    for seed, (m, n, d) in enumerate(SHAPES):
        row, col, value = rand_coo(m, n, d, dtype, seed)
        k = torch.arange(0, row.numel(), 3)  # duplicate every third entry
        row, col = torch.cat([row, row[k]]), torch.cat([col, col[k]])
        value = torch.cat([value, value[k] * 0.5 + 0.25])
        for reduce in ('sum', 'max'):
            ref = torch.zeros(m * n, dtype=torch.float64).scatter_reduce(
                0, row * n + col, value.double(), REF_REDUCE[reduce], include_self=False)
            A = sp(row, col, value, m, n, 'cuda').coalesce(reduce)
            assert A.is_coalesced() and A.nnz() == row.numel() - k.numel()
            both(lambda dev: [*sp(row, col, value, m, n, dev).coalesce(reduce).coo()])
            close(A.to_dense(), ref.view(m, n))
        both(lambda dev: tsp.coalesce(torch.stack([row, col]).to(dev), value.to(dev), m, n))


def ref_spmm(row, col, value, x, m, reduce):
    msg = x.index_select(-2, col)
    if value is not None:
        msg = msg * value.unsqueeze(-1)
    idx = row.view(-1, 1).expand_as(msg) if msg.dim() == 2 else row.view(1, -1, 1).expand_as(msg)
    size = list(msg.shape)
    size[-2] = m
    return msg.new_zeros(size).scatter_reduce(-2, idx, msg, REF_REDUCE[reduce], include_self=False)


def t_matmul(reduce, dtype):
    for seed, (m, n, d) in enumerate(SHAPES):
        row, col, value = rand_coo(m, n, d, dtype, seed)
        fn = (lambda r, c, v, x: tsp.matmul(sp(r, c, v, m, n, r.device), x, reduce))
        ref = (lambda r, c, v, x: ref_spmm(r, c, v, x, m, reduce))
        for f in (1, 16, 33):
            x = (torch.rand(n, f, generator=torch.Generator().manual_seed(f), dtype=torch.float64)
                 * 4 - 2).to(dtype)
            compare(fn, ref, [row, col, value, x], dtype)
            compare(lambda r, c, x: fn(r, c, None, x), lambda r, c, x: ref(r, c, None, x),
                    [row, col, x], dtype)  # value-less sparse matrix
        xb = torch.randn(3, n, 8, dtype=torch.float64).to(dtype)  # batched dense operand
        compare(fn, ref, [row, col, value, xb], dtype, grad=False)


def t_spspmm(dtype):
    for seed, (m, n, d) in enumerate(SHAPES):
        ra, ca, va = rand_coo(m, n, d, dtype, seed)
        rb, cb, vb = rand_coo(n, 12, 0.3, dtype, seed + 10)
        ref = dense(ra, ca, va.double(), m, n) @ dense(rb, cb, vb.double(), n, 12)
        out = both(lambda dev: [(sp(ra, ca, va, m, n, dev) @ sp(rb, cb, vb, n, 12, dev)).to_dense()])
        close(out[0], ref)
        idx, val = tsp.spspmm(torch.stack([ra, ca]).cuda(), va.cuda(),
                                             torch.stack([rb, cb]).cuda(), vb.cuda(), m, n, 12)
        close(dense(idx[0], idx[1], val, m, 12), ref)


def t_index_select(dtype):
    for seed, (m, n, d) in enumerate(SHAPES):
        row, col, value = rand_coo(m, n, d, dtype, seed)
        g = torch.Generator().manual_seed(seed)
        for dim, size in ((0, m), (1, n)):
            idx = torch.randint(0, size, (size // 2 + 1,), generator=g)
            out = sp(row, col, value, m, n, 'cuda').index_select(dim, idx.cuda())
            close(out.to_dense(), dense(row, col, value, m, n).index_select(dim, idx), exact=True)
            both(lambda dev: [*sp(row, col, value, m, n, dev).index_select(dim, idx.to(dev)).csr()])


def t_diag(dtype):
    for seed, (m, n, d) in enumerate(SHAPES):
        row, col, value = rand_coo(m, n, d, dtype, seed)
        for k in (0, 2, -3):  # set_diag uses torch.ops.torch_sparse.non_diag_mask
            ref = dense(row, col, value, m, n)
            ref.diagonal(k).fill_(1)
            close(sp(row, col, value, m, n, 'cuda').set_diag(k=k).to_dense(), ref, exact=True)
            ref.diagonal(k).fill_(0)
            close(sp(row, col, value, m, n, 'cuda').remove_diag(k=k).to_dense(), ref, exact=True)
            both(lambda dev: [*sp(row, col, value, m, n, dev).set_diag(k=k).coo()])


def t_reduce(dtype):
    for seed, (m, n, d) in enumerate(SHAPES):
        row, col, value = rand_coo(m, n, d, dtype, seed)
        A = sp(row, col, value, m, n, 'cuda')
        for red in ('sum', 'mean', 'min', 'max'):
            for dim, idx, size in ((1, row, m), (0, col, n)):
                ref = value.new_zeros(size).scatter_reduce(0, idx, value, REF_REDUCE[red],
                                                           include_self=False)
                close(getattr(A, red)(dim), ref)


def t_random_walk():
    row, col, _ = rand_coo(50, 50, 0.1, torch.float32, 3, diag=True)  # no dangling nodes
    start = torch.arange(50, device='cuda').repeat(4)
    walk = sp(row, col, None, 50, 50, 'cuda').random_walk(start, 10)
    assert walk.is_cuda and tuple(walk.shape) == (200, 11), walk.shape
    close(walk[:, 0], start.cpu(), exact=True)
    adj = dense(row, col, torch.ones(row.numel()), 50, 50).bool()
    w = walk.cpu()
    assert bool(adj[w[:, :-1], w[:, 1:]].all()), 'random walk took a non-edge'


def t_env():
    assert torch.cuda.is_available(), 'torch.cuda.is_available() is False'
    print(f'  torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name(0)}')


def t_import():
    global tsp
    import torch_sparse
    tsp = torch_sparse
    d = os.path.dirname(torch_sparse.__file__)
    for lib in LIBS:
        spec = importlib.machinery.PathFinder().find_spec(f'{lib}_cuda', [d])
        assert spec is not None, f'{PKG}.{lib}_cuda is missing from {d}'
    print(f'  {PKG} {torch_sparse.__version__} from {d}')


def t_cuda_version():
    import torch_scatter  # noqa: F401  (loaded by torch_sparse too)
    for lib in ('torch_sparse', 'torch_scatter'):
        v = getattr(torch.ops, lib).cuda_version()
        print(f'  torch.ops.{lib}.cuda_version() = {v}')
        assert v != -1 and v >= 10000, f'{lib} cuda_version() = {v}: the CUDA build was not loaded'
        assert v // 1000 == int(torch.version.cuda.split('.')[0]), (v, torch.version.cuda)


def main():
    check('cuda_available', t_env)
    if not (check('import', t_import) and results[0]):
        print(f'{PKG}: {sum(results)}/{len(results)} checks passed')
        return 1
    check('cuda_version', t_cuda_version)
    check('ind2ptr_ptr2ind', t_convert)
    check('random_walk', t_random_walk)
    for dtype in DTYPES:
        dn = str(dtype).replace('torch.', '')
        for name, fn in [('construct_transpose', t_construct), ('coalesce', t_coalesce),
                         ('spspmm', t_spspmm),
                         ('index_select', t_index_select), ('set_remove_diag', t_diag),
                         ('reduce_sum_mean_min_max', t_reduce)]:
            check(f'{name}[{dn}]', fn, dtype)
        for r in ['sum', 'mean', 'min', 'max']:
            check(f'matmul_{r}[{dn}]', t_matmul, r, dtype)
    print(f'{PKG}: {sum(results)}/{len(results)} checks passed')
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
