#!/usr/bin/env python3
# needs: rich
"""GPU correctness checks for the nerfacc 0.5.3 wheel's prebuilt CUDA module `nerfacc.csrc`.

Every CUDA op is compared with nerfacc's own pure-torch paths (_ray_aabb_intersect,
_sample_from_weighted, _opencv_lens_undistortion, ...) or with float64 CPU references written
from the op's definition; forward and, where differentiable, backward through autograd.
The kernels are float32-only (they read data_ptr<float>), so no float64 GPU cases.
Exit 1 if any check fails, including when `nerfacc.csrc` is missing (nerfacc would then
JIT-compile its sources or disable CUDA: both count as failure here).
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
    """assert_close on CPU float64 copies, recording the max abs error (equal infs count as 0)."""
    a = actual.detach().cpu().double()
    e = expected.detach().cpu().double()
    if a.shape == e.shape and a.numel():
        d = (a - e).abs()
        d[a == e] = 0.0
        _ERR[0] = max(_ERR[0], float(torch.nan_to_num(d, nan=float("inf")).max()))
    torch.testing.assert_close(a, e, atol=atol, rtol=rtol, msg=lambda m: f"{what}: {m}")


def exact(actual, expected, what=""):
    close(actual.long(), expected.long(), 0, 0, what)


def packed(n_rays, lo, hi, g):
    cnts = torch.randint(lo, hi + 1, (n_rays,), generator=g)
    starts = torch.cumsum(cnts, 0) - cnts
    return torch.stack([starts, cnts], -1)


def seg_incl_sum(x, pinfo):
    """Per-chunk inclusive cumsum of a flat float64 tensor (differentiable)."""
    starts, cnts = pinfo[:, 0], pinfo[:, 1]
    first = torch.repeat_interleave(starts, cnts)
    cs = torch.cumsum(x, 0)
    base = torch.where(first > 0, cs[(first - 1).clamp(min=0)], torch.zeros_like(cs))
    return cs - base


REFS = {  # op name -> float64 reference on a flat tensor with positive entries
    "inclusive_sum": lambda x, p: seg_incl_sum(x, p),
    "exclusive_sum": lambda x, p: seg_incl_sum(x, p) - x,
    "inclusive_prod": lambda x, p: torch.exp(seg_incl_sum(torch.log(x), p)),
    "exclusive_prod": lambda x, p: torch.exp(seg_incl_sum(torch.log(x), p) - torch.log(x)),
}


@check("backend (nerfacc.csrc is the prebuilt module)")
def _backend():
    mod = importlib.import_module("nerfacc.csrc")  # no JIT fallback possible here
    from nerfacc.cuda import _backend as be
    assert be._C is mod, f"nerfacc.cuda._backend._C is {be._C!r}, not nerfacc.csrc"
    f = getattr(mod, "__file__", "") or ""
    pkg_dir = os.path.dirname(importlib.import_module("nerfacc").__file__)
    assert f.endswith(".so") and os.path.dirname(f) == pkg_dir, f"unexpected module file {f}"
    for op in ("inclusive_sum", "traverse_grids", "importance_sampling", "opencv_lens_undistortion"):
        assert hasattr(mod, op), f"nerfacc.csrc lacks {op}"


def _scan_check(op, n_rays, lo, hi, seed):
    import nerfacc
    g = torch.Generator().manual_seed(seed)
    pinfo = packed(n_rays, lo, hi, g)
    n = int(pinfo[:, 1].sum())
    x = (0.2 + 0.8 * torch.rand(n, generator=g)).float()  # in [0.2, 1): safe for logs/products
    gout = torch.randn(n, generator=g)
    xc = x.to(DEV).requires_grad_()
    out = getattr(nerfacc, op)(xc, packed_info=pinfo.to(DEV))
    out.backward(gout.to(DEV))
    xr = x.detach().double().requires_grad_()
    ref = REFS[op](xr, pinfo)
    ref.backward(gout.double())
    # float32 scan error grows with the chunk length (values < 1, |grad_out| < ~5)
    close(out, ref, 1e-6 * hi, 1e-5, f"{op} forward")
    close(xc.grad, xr.grad, 5e-6 * hi, 1e-5, f"{op} grad")


for _op in ("inclusive_sum", "exclusive_sum", "inclusive_prod", "exclusive_prod"):
    for _i, (_nr, _lo, _hi) in enumerate([(300, 0, 40), (4000, 0, 300), (3, 2000, 5000)]):
        check(f"{_op} packed fwd+bwd [{_nr} rays, len {_lo}..{_hi}]")(
            lambda op=_op, nr=_nr, lo=_lo, hi=_hi, s=_i: _scan_check(op, nr, lo, hi, 10 + s))


def _volrend_check(kind):
    import nerfacc
    g = torch.Generator().manual_seed(3)
    pinfo = packed(500, 0, 64, g)
    cnts = pinfo[:, 1]
    n = int(cnts.sum())
    ray_indices = torch.repeat_interleave(torch.arange(len(cnts)), cnts)
    dt = 0.01 + 0.05 * torch.rand(n, generator=g)
    t_starts = torch.rand(n, generator=g)
    t_ends = t_starts + dt
    v = (torch.rand(n, generator=g) * (0.9 if kind == "alpha" else 5.0)).float()
    gw, gt = torch.randn(n, generator=g), torch.randn(n, generator=g)
    vc = v.to(DEV).requires_grad_()
    vr = v.detach().double().requires_grad_()
    ri = ray_indices.to(DEV)
    if kind == "alpha":
        w, trans = nerfacc.render_weight_from_alpha(vc, ray_indices=ri, n_rays=len(cnts))
        trans_r = REFS["exclusive_prod"](1 - vr, pinfo)
        w_r = trans_r * vr
    else:
        w, trans, _ = nerfacc.render_weight_from_density(
            t_starts.to(DEV), t_ends.to(DEV), vc, ray_indices=ri, n_rays=len(cnts))
        sdt = vr * (t_ends - t_starts).double()
        trans_r = torch.exp(-REFS["exclusive_sum"](sdt, pinfo))
        w_r = trans_r * (1 - torch.exp(-sdt))
    ((w * gw.to(DEV)).sum() + (trans * gt.to(DEV)).sum()).backward()
    ((w_r * gw.double()).sum() + (trans_r * gt.double()).sum()).backward()
    close(w, w_r, 1e-5, 1e-4, "weights")
    close(trans, trans_r, 1e-5, 1e-4, "transmittance")
    close(vc.grad, vr.grad, 1e-4, 1e-4, "grad")


check("render_weight_from_alpha packed fwd+bwd")(lambda: _volrend_check("alpha"))
check("render_weight_from_density packed fwd+bwd")(lambda: _volrend_check("density"))


@check("ray_aabb_intersect vs _ray_aabb_intersect (f64 CPU)")
def _aabb():
    from nerfacc.grid import _ray_aabb_intersect, ray_aabb_intersect
    torch.manual_seed(42)
    for near in (-float("inf"), 0.0):
        o = torch.rand(2000, 3) * 4 - 2
        d = torch.nn.functional.normalize(torch.randn(2000, 3), dim=-1)
        lo = torch.rand(64, 3) * 2 - 1
        aabbs = torch.cat([lo, lo + 0.1 + torch.rand(64, 3)], -1)
        tmin, tmax, hit = ray_aabb_intersect(o.to(DEV), d.to(DEV), aabbs.to(DEV), near_plane=near)
        rmin, rmax, rhit = _ray_aabb_intersect(o.double(), d.double(), aabbs.double(), near_plane=near)
        bad = hit.cpu() != rhit
        # A ray grazing a box edge may hit in float32 and miss in float64:
        # a flag that the package's own float32 CPU path also gives is not
        # a kernel error.
        _, _, fhit = _ray_aabb_intersect(o, d, aabbs, near_plane=near)
        bad &= hit.cpu() != fhit
        degenerate = ((rmax - rmin).abs() < 1e-4) | (rmax.abs() < 1e-4) | (rmin.abs() < 1e-4)
        # Ill-conditioned pairs: the float64 flag changes when every face
        # of the box moves by 1e-5 (about 40 float32 ulps at these
        # coordinates), outwards or inwards. Such a pair's flag is decided
        # by rounding, in any precision; it is counted and shown, not failed.
        eps = torch.tensor([-1e-5] * 3 + [1e-5] * 3, dtype=torch.float64)
        _, _, grown = _ray_aabb_intersect(o.double(), d.double(), aabbs.double() + eps, near_plane=near)
        _, _, shrunk = _ray_aabb_intersect(o.double(), d.double(), aabbs.double() - eps, near_plane=near)
        degenerate |= grown != shrunk
        print(f"    near_plane={near}: {int(degenerate.sum())} of {degenerate.numel()} ray-box pairs "
              f"ill-conditioned, {int((bad & degenerate).sum())} of them with a differing flag")
        assert not (bad & ~degenerate).any(), f"{int((bad & ~degenerate).sum())} hit flags differ"
        both = hit.cpu() & rhit
        close(tmin.cpu()[both], rmin[both], 1e-4, 1e-4, "t_min")
        close(tmax.cpu()[both], rmax[both], 1e-4, 1e-4, "t_max")
        assert torch.isinf(tmin.cpu()[~hit.cpu()]).all(), "misses must carry miss_value=inf"


@check("traverse_grids sample counts and occupancy")
def _traverse():
    from nerfacc.grid import _enlarge_aabb, _query, _ray_aabb_intersect, traverse_grids
    torch.manual_seed(0)
    n, res, step = 400, 32, 1e-2
    aabb = torch.tensor([-1.0, -1.0, -1.0, 1.0, 1.0, 1.0])
    target = torch.rand(n, 3) - 0.5
    o = torch.nn.functional.normalize(torch.randn(n, 3), dim=-1) * 3.0
    d = torch.nn.functional.normalize(target - o, dim=-1)
    c = (torch.arange(res) + 0.5) / res * 2 - 1
    r2 = sum(t**2 for t in torch.meshgrid(c, c, c, indexing="ij"))
    grids = {"full": torch.ones(1, res, res, res, dtype=torch.bool), "ball": (r2 < 0.6**2)[None]}
    for gname, binaries in grids.items():
        iv, sm, _ = traverse_grids(o.to(DEV), d.to(DEV), binaries.to(DEV), aabb[None].to(DEV), step_size=step)
        cnt = sm.packed_info[:, 1].cpu()
        t0, t1 = iv.vals[iv.is_left].cpu(), iv.vals[iv.is_right].cpu()
        close(t1 - t0, torch.full_like(t0, step), 1e-4, 0, f"{gname}: interval length")
        # reference: midpoints of the lattice k*step from t=0 that fall in [tmin, tmax) and an occupied cell
        tmin, tmax, hit = _ray_aabb_intersect(o.double(), d.double(), aabb[None].double())
        tmin, tmax = tmin[:, 0].clamp(min=0), tmax[:, 0]
        k = torch.arange(int(12 / step))
        mids = (k[None] + 0.5) * step
        pts = o.double()[:, None] + d.double()[:, None] * mids[..., None]
        ijk = ((pts + 1) / 2 * res).floor().long().clamp(0, res - 1)
        occ = binaries[0][ijk[..., 0], ijk[..., 1], ijk[..., 2]]
        inside = (mids[None] >= tmin[:, None]) & (mids[None] < tmax[:, None]) & hit[:, :1]
        ref_cnt = (occ & inside).sum(-1)
        diff = (cnt - ref_cnt).abs()
        _ERR[0] = max(_ERR[0], float(diff.max()))
        assert diff.max() <= (2 if gname == "full" else 4) and diff.float().mean() < 0.5, \
            f"{gname}: sample counts differ from reference by up to {int(diff.max())}"
    # multi-level random grid (as nerfacc's test): every sample must lie in an occupied cell
    base = torch.tensor([-1.0, -1.0, -1.0, 1.0, 1.0, 1.0], device=DEV)
    aabbs = torch.stack([_enlarge_aabb(base, 2**i) for i in range(4)])
    binaries = torch.rand(4, res, res, res, device=DEV) > 0.5
    oc, dc = torch.randn(100, 3, device=DEV), torch.nn.functional.normalize(torch.randn(100, 3, device=DEV), dim=-1)
    iv, sm, _ = traverse_grids(oc, dc, binaries, aabbs)
    mid = (iv.vals[iv.is_left] + iv.vals[iv.is_right]) / 2
    occs, sel = _query(oc[sm.ray_indices] + dc[sm.ray_indices] * mid[:, None], binaries, base)
    frac = float((occs & sel).float().mean())
    assert mid.numel() > 1000 and frac > 0.999, f"{mid.numel()} samples, {frac:.5f} in occupied cells"


def _rand_intervals(n_rays, lo, hi, g):
    from nerfacc.data_specs import RayIntervals
    pinfo = packed(n_rays, lo, hi, g)
    vals = torch.cat([torch.sort(torch.rand(int(c), generator=g))[0] for c in pinfo[:, 1]])
    ri = torch.repeat_interleave(torch.arange(n_rays), pinfo[:, 1])
    return RayIntervals(vals=vals.to(DEV), packed_info=pinfo.to(DEV), ray_indices=ri.to(DEV)), pinfo


@check("searchsorted batched + packed vs torch.searchsorted")
def _searchsorted():
    from nerfacc.data_specs import RayIntervals
    from nerfacc.pdf import searchsorted
    g = torch.Generator().manual_seed(1)
    key = torch.sort(torch.rand(64, 101, generator=g), -1)[0]
    q = torch.rand(64, 77, generator=g) * 1.2 - 0.1
    left, right = searchsorted(RayIntervals(vals=key.to(DEV)), RayIntervals(vals=q.to(DEV)))
    p = torch.searchsorted(key, q, right=True)
    exact(right.cpu(), p.clamp(0, key.shape[-1] - 1), "batched ids_right")
    # Out of range, nerfacc answers as if the value were clipped to the
    # sequence (its docstring): ids_left is always ids_right - 1, at least 0.
    exact(left.cpu(), (p.clamp(0, key.shape[-1] - 1) - 1).clamp(min=0), "batched ids_left")
    kspec, kinfo = _rand_intervals(200, 1, 30, g)
    qspec, qinfo = _rand_intervals(200, 1, 30, g)
    left, right = searchsorted(kspec, qspec)
    kv, qv = kspec.vals.cpu(), qspec.vals.cpu()
    rl, rr = [], []
    for (ks, kc), (qs, qc) in zip(kinfo.tolist(), qinfo.tolist()):
        p = torch.searchsorted(kv[ks:ks + kc], qv[qs:qs + qc], right=True)
        rr.append(ks + p.clamp(0, kc - 1))
        rl.append(ks + (p.clamp(0, kc - 1) - 1).clamp(min=0))
    exact(right.cpu(), torch.cat(rr), "packed ids_right")
    exact(left.cpu(), torch.cat(rl), "packed ids_left")


@check("importance_sampling vs _sample_from_weighted")
def _importance():
    from nerfacc.data_specs import RayIntervals
    from nerfacc.pdf import _sample_from_weighted, importance_sampling
    g = torch.Generator().manual_seed(42)
    for n_rays, n_bins, n_samp in [(16, 64, 32), (5, 100, 100), (40, 8, 129)]:
        vals = torch.sort(torch.rand(n_rays, n_bins + 1, generator=g), -1)[0]
        cdfs = torch.sort(torch.rand(n_rays, n_bins + 1, generator=g), -1)[0]
        iv, sm = importance_sampling(RayIntervals(vals=vals.to(DEV)), cdfs.to(DEV), n_samp, False)
        for i in range(n_rays):
            v64 = vals[i:i + 1].double()
            r_iv, r_sm = _sample_from_weighted(v64, (cdfs[i:i + 1, 1:] - cdfs[i:i + 1, :-1]).double(),
                                               n_samp, False, v64.min(), v64.max())
            close(iv.vals[i:i + 1], r_iv, 2e-4, 0, f"intervals ray {i}")
            close(sm.vals[i:i + 1], r_sm, 2e-4, 0, f"samples ray {i}")


@check("opencv_lens_undistortion(+fisheye) vs pure-torch")
def _camera():
    from nerfacc.cameras import (_opencv_lens_distortion_fisheye, _opencv_lens_undistortion,
                                 opencv_lens_undistortion, opencv_lens_undistortion_fisheye)
    torch.manual_seed(42)
    x = torch.rand(3, 1000, 2)
    for n_par in (8, 4, 2):
        params = torch.rand(n_par) * 0.01
        got = opencv_lens_undistortion(x.to(DEV), params.to(DEV), 1e-5, 10)
        close(got, _opencv_lens_undistortion(x.double(), params.double(), 1e-5, 10), 1e-5, 0, f"N={n_par}")
    params = torch.rand(4) * 0.01
    und = opencv_lens_undistortion_fisheye(x.to(DEV), params.to(DEV), 1e-5, 10)
    close(_opencv_lens_distortion_fisheye(und.cpu().double(), params.double()), x, 1e-5, 0, "fisheye roundtrip")


def main():
    if not torch.cuda.is_available():
        print("CUDA is not available on this machine")
        print(f"nerfacc: 0/{len(CHECKS)} checks passed")
        return 1
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"sm_{''.join(map(str, torch.cuda.get_device_capability()))}")
    passed, backend_ok = 0, True
    for name, fn in CHECKS:
        _ERR[0] = 0.0
        if not backend_ok:  # calling an op now would start nerfacc's JIT build: don't
            print(f"{name}: FAIL max_abs_err=nan (not run: prebuilt nerfacc.csrc unusable)", flush=True)
            continue
        try:
            fn()
            torch.cuda.synchronize()
            print(f"{name}: PASS max_abs_err={_ERR[0]:.3e}", flush=True)
            passed += 1
        except Exception:
            print(f"{name}: FAIL max_abs_err={_ERR[0]:.3e}", flush=True)
            traceback.print_exc()
            backend_ok = backend_ok and not name.startswith("backend")
            sys.stdout.flush()
    print(f"nerfacc: {passed}/{len(CHECKS)} checks passed")
    return 0 if passed == len(CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
