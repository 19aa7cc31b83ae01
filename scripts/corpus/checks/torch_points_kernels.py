#!/usr/bin/env python3
# needs: numpy
"""GPU correctness checks for the torch-points-kernels 0.7.0 wheel (torch_points_kernels.points_cuda).

CUDA ops are compared with the wheel's own CPU module (points_cpu: nanoflann knn / ball query,
knn_interpolate, the numba instance_iou / region growing) and with float64 pure-torch references
written from each op's definition; forward and, for differentiable ops, autograd backward.
Neighbour searches are compared tie-robustly: as sets, with a band around the radius, and by
distances rather than indices. Most kernels are float32-only (CHECK_IS_FLOAT); chamfer,
gridding and cubic_feature_sampling dispatch float64 too. Exit 1 if any check fails.
"""
import importlib
import os
import sys
import traceback

import torch

try:
    import numba  # noqa: F401  (the package's cluster.py and metrics.py jit-compile with it)
except ImportError:
    # numba is pure-Python-compatible by design: without it (its llvmlite
    # wheel is too large for the device run), its decorators are the
    # identity and the same functions run as plain Python.
    import types

    import numpy as np

    shim = types.ModuleType("numba")
    shim.jit = shim.njit = lambda *a, **k: a[0] if a and callable(a[0]) else (lambda f: f)
    shim.prange = range
    shim.types = types.SimpleNamespace(bool_=np.bool_)
    sys.modules["numba"] = shim
    print("note: numba is not installed; its jit functions run as plain Python")

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


def sqdist(a, b):  # (..., n, 3), (..., m, 3) -> (..., n, m) in float64
    return ((a.double()[..., :, None, :] - b.double()[..., None, :, :]) ** 2).sum(-1)


@check("backend (points_cuda + points_cpu are the wheel's modules)")
def _backend():
    import torch_points_kernels as tpk
    from torch_points_kernels import torchpoints
    pkg_dir = os.path.dirname(tpk.__file__)
    for name in ("points_cuda", "points_cpu"):
        mod = importlib.import_module(f"torch_points_kernels.{name}")
        f = getattr(mod, "__file__", "") or ""
        assert f.endswith(".so") and os.path.dirname(f) == pkg_dir, f"{name}: unexpected file {f!r}"
    assert torchpoints.tpcuda is importlib.import_module("torch_points_kernels.points_cuda")
    for op in ("furthest_point_sampling", "three_nn", "ball_query_dense", "chamfer_dist", "gridding"):
        assert hasattr(torchpoints.tpcuda, op), op


@check("furthest_point_sample (FPS property, f64)")
def _fps():
    import torch_points_kernels as tpk
    torch.manual_seed(0)
    for b, n, m in [(2, 1000, 128), (3, 4097, 512), (1, 37, 37)]:
        pts = torch.rand(b, n, 3) + 0.1  # the kernel skips points with |p|^2 <= 1e-3
        idx = tpk.furthest_point_sample(pts.to(DEV), m).cpu().long()
        assert idx.shape == (b, m), idx.shape
        for bi in range(b):
            p, sel = pts[bi].double(), idx[bi]
            assert sel[0] == 0 and len(set(sel.tolist())) == m, "must start at 0, no repeats"
            mind = ((p - p[0]) ** 2).sum(-1)
            for j in range(1, m):  # each pick must be (near-)farthest from the points picked so far
                gap = float(mind.max() - mind[sel[j]])
                _ERR[0] = max(_ERR[0], gap)
                assert gap <= 1e-5 * max(1.0, float(mind.max())), f"batch {bi} step {j}: gap {gap}"
                mind = torch.minimum(mind, ((p - p[sel[j]]) ** 2).sum(-1))


@check("three_nn vs CPU knn + brute force (distances)")
def _three_nn():
    import torch_points_kernels as tpk
    torch.manual_seed(1)
    for b, n, m in [(2, 500, 100), (4, 1000, 3000), (1, 3, 5)]:
        unknown, known = torch.randn(b, n, 3), torch.randn(b, m, 3)
        dist, idx = tpk.three_nn(unknown.to(DEV), known.to(DEV))
        dist_cpu, _ = tpk.three_nn(unknown, known)  # nanoflann knn on CPU
        ref = sqdist(unknown, known).topk(3, dim=-1, largest=False).values.sqrt()
        close(dist, ref, 1e-5, 1e-5, "distances vs brute force")
        close(dist, dist_cpu, 1e-5, 1e-5, "distances vs CPU")
        picked = known.double().gather(1, idx.cpu().long().reshape(b, -1, 1).expand(-1, -1, 3)).reshape(b, n, 3, 3)
        close(dist, (unknown.double()[:, :, None] - picked).norm(dim=-1), 1e-5, 1e-5, "dist of returned idx")


@check("three_interpolate fwd+bwd vs CPU ext + gather (f64)")
def _three_interp():
    import torch_points_kernels as tpk
    torch.manual_seed(2)
    for b, c, m, n in [(2, 30, 100, 500), (3, 7, 1000, 4099)]:
        feats = torch.randn(b, c, m)
        idx = torch.randint(0, m, (b, n, 3))
        w = torch.rand(b, n, 3)
        w = w / w.sum(-1, keepdim=True)
        gout = torch.randn(b, c, n)
        fc = feats.to(DEV).requires_grad_()
        out = tpk.three_interpolate(fc, idx.int().to(DEV), w.to(DEV))
        out.backward(gout.to(DEV))
        fcpu = feats.detach().clone().requires_grad_()
        out_cpu = tpk.three_interpolate(fcpu, idx, w)
        out_cpu.backward(gout)
        fr = feats.detach().double().requires_grad_()
        gathered = fr.gather(2, idx.reshape(b, 1, -1).expand(-1, c, -1)).reshape(b, c, n, 3)
        ref = (gathered * w.double()[:, None]).sum(-1)
        ref.backward(gout.double())
        close(out, ref, 1e-5, 1e-5, "forward")
        close(out, out_cpu, 1e-5, 1e-5, "forward vs CPU")
        close(fc.grad, fr.grad, 1e-4, 1e-5, "grad features")
        close(fc.grad, fcpu.grad, 1e-4, 1e-5, "grad features vs CPU")


def _check_ball(idx, dist, d2, r, nsample, what, ordered, tol=1e-5):
    """idx/dist: (Q, nsample) results; d2: (Q, N) float64 squared distances (inf = not allowed)."""
    idx, dist = idx.cpu().long(), dist.cpu().double()
    valid = dist >= 0
    cnt = torch.zeros(d2.shape, dtype=torch.long).scatter_add_(1, idx.clamp(min=0), valid.long())
    assert cnt.max() <= 1, f"{what}: a neighbour is listed twice"
    member, sure, maybe = cnt > 0, d2 < r * r - tol, (d2 - r * r).abs() <= tol
    assert not (member & ~(sure | maybe)).any(), f"{what}: neighbour outside the ball"
    got_d2 = d2.gather(1, idx.clamp(min=0))
    close(dist[valid], got_d2[valid], 1e-5, 1e-5, f"{what}: distances")
    n_in = valid.sum(1)
    full = n_in < nsample
    assert not (sure & ~member)[full].any(), f"{what}: in-ball neighbour missing"
    if ordered:  # CUDA takes the first nsample in index order and pads behind them
        assert (valid[:, :-1] | ~valid[:, 1:]).all(), f"{what}: padding before a valid entry"
        last = torch.where(valid, idx, -1).max(1).values
        skipped = sure & ~member & (torch.arange(d2.shape[1])[None] < last[:, None])
        assert not skipped.any(), f"{what}: skipped an earlier in-ball point"
        diffs = torch.where(valid[:, 1:] & valid[:, :-1], idx[:, 1:] - idx[:, :-1], 1)
        assert (diffs > 0).all(), f"{what}: not in index order"


@check("ball_query dense vs CPU ext + brute force (sets)")
def _ball_dense():
    import torch_points_kernels as tpk
    torch.manual_seed(3)
    b, n, m, r = 2, 512, 128, 0.2
    x, y = torch.rand(b, n, 3), torch.rand(b, m, 3)
    x[:, :5] = y[:, :5]  # exact hits (distance 0)
    d2 = sqdist(y, x).reshape(b * m, n)
    assert int((d2 <= r * r + 1e-5).sum(1).max()) < 64
    for dev, ns, ordered in [(DEV, 64, True), ("cpu", 64, False), (DEV, 8, True)]:
        idx, dist = tpk.ball_query(r, ns, x.to(dev), y.to(dev), mode="dense")
        assert idx.shape == (b, m, ns), idx.shape
        _check_ball(idx.reshape(b * m, ns), dist.reshape(b * m, ns), d2, r, ns, f"{dev} nsample={ns}", ordered)


@check("ball_query partial_dense vs CPU ext + brute force (sets)")
def _ball_partial():
    import torch_points_kernels as tpk
    torch.manual_seed(4)
    nx, ny, r = torch.tensor([300, 1, 700]), torch.tensor([50, 20, 130]), 0.15
    bx, by = torch.repeat_interleave(torch.arange(3), nx), torch.repeat_interleave(torch.arange(3), ny)
    x, y = torch.rand(int(nx.sum()), 3), torch.rand(int(ny.sum()), 3)
    d2 = sqdist(y, x).masked_fill(by[:, None] != bx[None], float("inf"))
    assert int((d2 <= r * r + 1e-5).sum(1).max()) < 64
    for dev, ns, ordered in [(DEV, 64, True), ("cpu", 64, False), (DEV, 4, True)]:
        idx, dist = tpk.ball_query(r, ns, x.to(dev), y.to(dev), mode="partial_dense",
                                   batch_x=bx.to(dev), batch_y=by.to(dev))
        assert idx.shape == (len(y), ns), idx.shape
        assert ((idx >= 0) == (dist >= 0)).all(), "padding must be idx -1 / dist -1"
        _check_ball(idx, dist, d2, r, ns, f"{dev} nsample={ns}", ordered)


@check("grow_proximity clusters CUDA vs CPU (numba)")
def _grow():
    from torch_points_kernels.cluster import grow_proximity
    torch.manual_seed(5)
    pos, batch = torch.rand(800, 3), torch.repeat_interleave(torch.arange(2), torch.tensor([500, 300]))
    res = [grow_proximity(pos.to(dev), batch.to(dev), nsample=128, radius=0.08, min_cluster_size=3)
           for dev in (DEV, "cpu")]
    got, ref = [sorted(sorted(c) for c in r) for r in res]
    assert len(ref) > 5 and got == ref, f"{len(got)} clusters on CUDA vs {len(ref)} on CPU"


@check("instance_iou CUDA vs CPU (numba)")
def _iou():
    from torch_points_kernels.metrics import instance_iou
    g = torch.Generator().manual_seed(6)
    gt = torch.randint(0, 10, (1000,), generator=g)
    batch = torch.repeat_interleave(torch.arange(2), torch.tensor([600, 400]))
    props = [torch.randint(0, 600, (int(torch.randint(5, 50, (1,), generator=g)),), generator=g) for _ in range(20)]
    props += [600 + torch.randint(0, 400, (30,), generator=g) for _ in range(5)]
    for bt in (None, batch):
        ref = instance_iou(props, gt, batch=bt)
        got = instance_iou([p.to(DEV) for p in props], gt.to(DEV), batch=None if bt is None else bt.to(DEV))
        close(got, ref, 1e-4, 1e-4, f"batch={bt is not None}")


def chamfer_ref(x1, x2):
    d = sqdist(x1, x2)
    return d.min(2).values, d.min(1).values


@check("chamfer_dist fwd+bwd f32/f64 vs torch (f64)")
def _chamfer():
    from torch_points_kernels.chamfer_dist import ChamferFunction, chamfer_dist
    torch.manual_seed(7)
    for dt in (torch.float32, torch.float64):
        tol = 1e-5 if dt == torch.float32 else 1e-10
        for b, n, m in [(2, 1000, 800), (1, 1531, 2049), (3, 17, 5)]:
            x1, x2 = torch.randn(b, n, 3, dtype=dt), torch.randn(b, m, 3, dtype=dt)
            d1, d2 = ChamferFunction.apply(x1.to(DEV), x2.to(DEV))
            r1, r2 = chamfer_ref(x1, x2)
            close(d1, r1, tol, tol, "dist1")
            close(d2, r2, tol, tol, "dist2")
            c1, c2 = x1.to(DEV).requires_grad_(), x2.to(DEV).requires_grad_()
            loss = chamfer_dist(c1, c2)
            loss.backward()
            f1, f2 = x1.detach().double().requires_grad_(), x2.detach().double().requires_grad_()
            lr = sum(t.mean() for t in chamfer_ref(f1, f2))
            lr.backward()
            close(loss, lr, tol, tol, "loss")
            close(c1.grad, f1.grad, tol, 1e-4, "grad xyz1")
            close(c2.grad, f2.grad, tol, 1e-4, "grad xyz2")


def corners(p):  # trilinear corner coordinates of float64 points (..., 3)
    lo = p.detach().floor()
    up = p.detach().ceil()
    up = torch.where(up == lo, up + 1, up)
    return lo, up


@check("gridding fwd+bwd f32/f64 vs torch (f64)")
def _gridding():
    from torch_points_kernels.gridding import gridding
    torch.manual_seed(8)
    for dt in (torch.float32, torch.float64):
        tol = 1e-4 if dt == torch.float32 else 1e-10
        for b, n, s in [(2, 2048, 8), (3, 100, 4)]:
            pts = torch.rand(b, n, 3, dtype=dt) * 1.65 - 0.9  # p*s stays inside [-s, s-1]
            gg = torch.randn(b, (2 * s) ** 3, dtype=torch.float64)
            pc = pts.to(DEV).requires_grad_()
            grid = gridding(pc, s)
            grid.backward(gg.to(DEV, dt))
            pr = pts.detach().double().requires_grad_()
            p = pr * s  # exact: s is a power of two
            lo, up = corners(p)
            ref = torch.zeros(b, (2 * s) ** 3, dtype=torch.float64)
            for cx in (lo[..., 0], up[..., 0]):
                for cy in (lo[..., 1], up[..., 1]):
                    for cz in (lo[..., 2], up[..., 2]):
                        c = torch.stack([cx, cy, cz], -1)
                        w = (1 - (p - c).abs()).prod(-1)
                        lin = ((c + s).long() * torch.tensor([4 * s * s, 2 * s, 1])).sum(-1)
                        ref = ref.index_put((torch.arange(b)[:, None].expand_as(lin), lin), w, accumulate=True)
            ref.backward(gg)
            close(grid, ref, tol, 1e-5, "grid")
            close(pc.grad, pr.grad, tol * 10, 1e-4, "grad ptcloud")


@check("cubic_feature_sampling fwd+bwd f32/f64 vs torch (f64)")
def _cubic():
    import torch_points_kernels as tpk
    torch.manual_seed(9)
    for dt in (torch.float32, torch.float64):
        for b, n, c, m, ns in [(2, 500, 4, 8, 1), (1, 300, 3, 6, 2)]:
            pts = torch.rand(b, n, 3, dtype=dt) * 2.1 - 1.05  # some neighbours fall outside the grid
            feats = torch.randn(b, c, m, m, m, dtype=dt)
            nv = (2 * ns) ** 3
            gout = torch.randn(b, n, nv, c, dtype=dt)
            pc, fc = pts.to(DEV).requires_grad_(), feats.to(DEV).requires_grad_()
            out = tpk.cubic_feature_sampling(pc, fc, ns)
            out.backward(gout.to(DEV))
            fr = feats.detach().double().requires_grad_()
            lo, _ = corners((pts * (m / 2) + m / 2).double())  # same f32 rounding as the package
            offs = torch.arange(-(ns - 1), ns + 1, dtype=torch.float64)
            ox, oy, oz = torch.meshgrid(offs, offs, offs, indexing="ij")  # x outer, z inner
            v = (lo[:, :, None] + torch.stack([ox, oy, oz], -1).reshape(1, 1, -1, 3)).long()
            ok = ((v >= 0) & (v < m)).all(-1)
            vc = v.clamp(0, m - 1)
            bi = torch.arange(b)[:, None, None].expand_as(ok)
            ref = fr.permute(0, 2, 3, 4, 1)[bi, vc[..., 0], vc[..., 1], vc[..., 2]] * ok[..., None]
            ref.backward(gout.double())
            close(out, ref, 0, 0, "features")
            close(fc.grad, fr.grad, 1e-4 if dt == torch.float32 else 1e-10, 1e-5, "grad features")
            close(pc.grad, torch.zeros_like(pts), 0, 0, "grad ptcloud (zero by design)")


def main():
    if not torch.cuda.is_available():
        print("CUDA is not available on this machine")
        print(f"torch_points_kernels: 0/{len(CHECKS)} checks passed")
        return 1
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"sm_{''.join(map(str, torch.cuda.get_device_capability()))}")
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
    print(f"torch_points_kernels: {passed}/{len(CHECKS)} checks passed")
    return 0 if passed == len(CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
