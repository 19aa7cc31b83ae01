#!/usr/bin/env python3
"""GPU correctness checks for the torch_spline_conv 1.2.2 wheel (torch 2.11 / CUDA 13, sm_90).

spline_basis, spline_weighting and spline_conv run on CUDA and are compared,
forward and backward (autograd), against the same op on CPU tensors (the
package's CPU kernels) and against a pure-PyTorch float64 reference written
from the B-spline definitions, plus the package's own known-value tests.
Prints one line per check and exits 1 if any check failed.
"""
import importlib.machinery
import os
import sys
import traceback

# This file is named like the package: keep its folder off sys.path so that
# `import torch_spline_conv` finds the installed wheel, not this script.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != _HERE]

import torch  # noqa: E402

PKG = 'torch_spline_conv'
DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4),
       torch.float64: dict(rtol=1e-9, atol=1e-9)}
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
    """Run fn on copies of args on device; returns (out, extra outputs, grads of float args)."""
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
        close(a, b, exact=True)  # weight_index
    for a, b in zip(gc, gp):
        close(a, b)
    rargs = [a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in args]
    orf, xr, gr = fwd_bwd(ref, rargs, 'cpu', dtype, grad)
    close(oc, orf)
    for a, b in zip(xc, xr):
        close(a, b, exact=True)
    for a, b in zip(gc, gr):
        close(a, b)


def bspline(v, k, degree):  # the B-spline basis pieces (csrc/cpu/basis_cpu.cpp)
    if degree == 1:
        return 1 - v if k == 0 else v
    if degree == 2:
        return [0.5 * v * v - v + 0.5, -v * v + v + 0.5, 0.5 * v * v][k]
    return [(1 - v) ** 3 / 6, (3 * v ** 3 - 6 * v * v + 4) / 6,
            (-3 * v ** 3 + 3 * v * v + 3 * v + 1) / 6, v ** 3 / 6][k]


def ref_basis(pseudo, kernel_size, is_open_spline, degree):
    E, D = pseudo.shape
    ks, op = kernel_size.tolist(), is_open_spline.tolist()
    basis, wis = [], []
    for s in range((degree + 1) ** D):
        k, b, wi, off = s, pseudo.new_ones(E), torch.zeros(E, dtype=torch.long), 1
        for d in range(D):
            k_mod, k = k % (degree + 1), k // (degree + 1)
            v = pseudo[:, d] * (ks[d] - degree * op[d])
            fl = v.detach().floor()
            wi = wi + ((fl.long() + k_mod) % ks[d]) * off
            off *= ks[d]
            b = b * bspline(v - fl, k_mod, degree)
        basis.append(b)
        wis.append(wi)
    return torch.stack(basis, 1), torch.stack(wis, 1)


def ref_weighting(x, weight, basis, weight_index):
    return torch.einsum('es,ei,esio->eo', basis, x, weight[weight_index])


def ref_conv(x, edge_index, pseudo, weight, kernel_size, is_open_spline, degree, norm,
             root_weight, bias):
    row, col = edge_index[0], edge_index[1]
    basis, wi = ref_basis(pseudo, kernel_size, is_open_spline, degree)
    out_e = ref_weighting(x[col], weight, basis, wi)
    out = x.new_zeros(x.size(0), weight.size(2)).index_add(0, row, out_e)
    if norm:
        deg = x.new_zeros(x.size(0)).index_add(0, row, x.new_ones(row.numel()))
        out = out / deg.clamp(min=1).unsqueeze(-1)
    return out + x @ root_weight + bias


CASES = [  # (E edges, kernel_size, is_open_spline)
    (64, [5], [1]), (100, [3, 4], [1, 0]), (80, [5, 5, 5], [1, 0, 1]), (50, [4, 7], [0, 0])]


def basis_inputs(E, ks, op, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    pseudo = torch.rand(E, len(ks), generator=g, dtype=torch.float64).to(dtype)
    return pseudo, torch.tensor(ks, dtype=torch.long), torch.tensor(op, dtype=torch.uint8)


def t_basis(degree, dtype):
    from torch_spline_conv import spline_basis
    for i, (E, ks, op) in enumerate(CASES):
        pseudo, kernel_size, is_open = basis_inputs(E, ks, op, dtype, i)
        compare(lambda p, k, o: spline_basis(p, k, o, degree),
                lambda p, k, o: ref_basis(p, k, o, degree), [pseudo, kernel_size, is_open], dtype)


def t_weighting(degree, dtype):
    from torch_spline_conv import spline_basis, spline_weighting
    for i, (E, ks, op) in enumerate(CASES):
        pseudo, kernel_size, is_open = basis_inputs(E, ks, op, dtype, i)
        basis, wi = ref_basis(pseudo.double(), kernel_size, is_open, degree)
        basis = basis.to(dtype)
        g = torch.Generator().manual_seed(100 + i)
        K = int(torch.prod(kernel_size))
        for m_in, m_out in ((1, 1), (4, 8), (16, 33)):
            x = torch.randn(E, m_in, generator=g, dtype=torch.float64).to(dtype)
            w = torch.randn(K, m_in, m_out, generator=g, dtype=torch.float64).to(dtype)
            compare(lambda x, w, b, i: spline_weighting(x, w, b, i), ref_weighting,
                    [x, w, basis, wi], dtype)
        b_cuda, wi_cuda = spline_basis(pseudo.cuda(), kernel_size.cuda(), is_open.cuda(), degree)
        close(wi_cuda, wi, exact=True)
        close(b_cuda, basis)


def t_conv(degree, dtype):
    from torch_spline_conv import spline_conv
    for i, (E, ks, op) in enumerate(CASES):
        pseudo, kernel_size, is_open = basis_inputs(E, ks, op, dtype, i)
        g = torch.Generator().manual_seed(200 + i)
        N, m_in, m_out, K = 30, 3, 5, int(torch.prod(kernel_size))
        edge_index = torch.randint(0, N, (2, E), generator=g)
        edge_index[0, :5] = 0  # node 0 has several neighbours, some nodes none
        r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(dtype)  # noqa: E731
        x, w, root, bias = r(N, m_in), r(K, m_in, m_out), r(m_in, m_out), r(m_out)
        for norm in (True, False):
            compare(lambda *a: spline_conv(*a), ref_conv,
                    [x, edge_index, pseudo, w, kernel_size, is_open, degree, norm, root, bias],
                    dtype)


def t_known_values(dtype):  # from the package's test/test_basis.py and test/test_conv.py
    from torch_spline_conv import spline_basis, spline_conv
    dev = 'cuda'
    tests = [([[0], [0.0625], [0.25], [0.75], [0.9375], [1]], [5], [1],
              [[1, 0], [0.75, 0.25], [1, 0], [1, 0], [0.25, 0.75], [1, 0]],
              [[0, 1], [0, 1], [1, 2], [3, 4], [3, 4], [4, 0]]),
             ([[0], [0.0625], [0.25], [0.75], [0.9375], [1]], [4], [0],
              [[1, 0], [0.75, 0.25], [1, 0], [1, 0], [0.25, 0.75], [1, 0]],
              [[0, 1], [0, 1], [1, 2], [3, 0], [3, 0], [0, 1]]),
             ([[0.125, 0.5], [0.5, 0.5], [0.75, 0.125]], [5, 5], [1, 1],
              [[0.5, 0.5, 0, 0], [1, 0, 0, 0], [0.5, 0, 0.5, 0]],
              [[10, 11, 15, 16], [12, 13, 17, 18], [3, 4, 8, 9]])]
    for pseudo, ks, op, basis, wi in tests:
        b, w = spline_basis(torch.tensor(pseudo, dtype=dtype, device=dev),
                            torch.tensor(ks, device=dev), torch.tensor(op, dtype=torch.uint8, device=dev), 1)
        close(b, torch.tensor(basis, dtype=dtype))
        close(w, torch.tensor(wi), exact=True)
    t = lambda v, dt=dtype: torch.tensor(v, dtype=dt, device=dev)  # noqa: E731
    out = spline_conv(t([[9, 10], [1, 2], [3, 4], [5, 6], [7, 8]]),
                      t([[0, 0, 0, 0], [1, 2, 3, 4]], torch.long),
                      t([[0.25, 0.125], [0.25, 0.375], [0.75, 0.625], [0.75, 0.875]]),
                      t([[[0.5 + i], [1.0 + i]] for i in range(12)]),
                      t([3, 4], torch.long), t([1, 0], torch.uint8), 1, True,
                      t([[12.5], [13]]), t([1]))
    expected = [[1 + 12.5 * 9 + 13 * 10 + (8.5 + 40.5 + 107.5 + 101.5) / 4],
                [1 + 12.5 * 1 + 13 * 2], [1 + 12.5 * 3 + 13 * 4],
                [1 + 12.5 * 5 + 13 * 6], [1 + 12.5 * 7 + 13 * 8]]
    close(out, torch.tensor(expected, dtype=dtype))


def t_env():
    assert torch.cuda.is_available(), 'torch.cuda.is_available() is False'
    print(f'  torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name(0)}')


def t_import():
    import torch_spline_conv
    d = os.path.dirname(torch_spline_conv.__file__)
    for lib in ['_version', '_basis', '_weighting']:
        spec = importlib.machinery.PathFinder().find_spec(f'{lib}_cuda', [d])
        assert spec is not None, f'{PKG}.{lib}_cuda is missing from {d}'
    print(f'  {PKG} {torch_spline_conv.__version__} from {d}')


def t_cuda_version():
    v = torch.ops.torch_spline_conv.cuda_version()
    print(f'  torch.ops.torch_spline_conv.cuda_version() = {v}')
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
        check(f'known_values[{dn}]', t_known_values, dtype)
        for degree in (1, 2, 3):
            check(f'spline_basis[deg{degree},{dn}]', t_basis, degree, dtype)
            check(f'spline_weighting[deg{degree},{dn}]', t_weighting, degree, dtype)
            check(f'spline_conv[deg{degree},{dn}]', t_conv, degree, dtype)
    print(f'{PKG}: {sum(results)}/{len(results)} checks passed')
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
