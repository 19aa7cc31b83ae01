#!/usr/bin/env python3
# needs: rich jaxtyping
"""GPU correctness checks for the gsplat 1.0.0 wheel (modules gsplat.csrc and gsplat.csrc_legacy).

Each CUDA op against gsplat's own pure-torch implementation (gsplat/cuda/_torch_impl.py,
gsplat/cuda_legacy/_torch_impl.py), forward and backward, at the tolerances of the package's
tests/test_basic.py: quat_scale_to_covar_preci, world_to_cam, persp_proj,
fully_fused_projection (fused and not, with and without compensations), spherical_harmonics
(degrees 0-4), and the whole rasterization path (isect_tiles, isect_offset_encode,
rasterize_to_pixels) for 3 and 32 channels; the legacy module's spherical harmonics against
its compute_sh_color. The package's tests read a scene file the sdist lacks, so the scene is a
seeded random one: Gaussians in a box in front of two cameras. Both compiled modules are
imported first: gsplat JIT-compiles its sources when they are missing, which must not happen
here. Exit 1 if any check fails.
"""
import math
import sys
import traceback

import torch

PKG = "gsplat"
DEV = "cuda"
RESULTS = []
_ERRS = []


def check(name, fn):
    _ERRS.clear()
    ok = True
    try:
        torch.manual_seed(42)
        fn()
        torch.cuda.synchronize()
    except Exception:
        ok = False
        traceback.print_exc()
    err = max(_ERRS) if _ERRS else float("nan")
    print(f"{name}: {'PASS' if ok else 'FAIL'} max_abs_err={err:.3e}", flush=True)
    RESULTS.append(ok)


def close(actual, expected, rtol=None, atol=None, what=""):
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    a, e = actual.detach(), expected.detach()
    _ERRS.append((a.double() - e.double()).abs().max().item() if a.numel() else 0.0)
    torch.testing.assert_close(a, e, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def scene(N=2000, C=2, width=96, height=64):
    g = torch.Generator().manual_seed(7)
    means = (torch.rand(N, 3, generator=g) * 2 - 1).to(DEV)
    quats = torch.randn(N, 4, generator=g).to(DEV)
    scales = (torch.rand(N, 3, generator=g) * 0.05 + 0.01).to(DEV)
    opacities = torch.rand(N, generator=g).to(DEV)
    viewmats = torch.eye(4).repeat(C, 1, 1)
    viewmats[:, 2, 3] = 4.0  # the box lies 3 to 5 in front of each camera
    viewmats[1, 0, 3] = 0.3
    Ks = torch.tensor([[120.0, 0.0, width / 2], [0.0, 120.0, height / 2], [0.0, 0.0, 1.0]]).repeat(C, 1, 1)
    return means, quats, scales, opacities, viewmats.to(DEV), Ks.to(DEV), width, height


def covar_preci(triu):
    from gsplat.cuda._torch_impl import _quat_scale_to_covar_preci
    from gsplat.cuda._wrapper import quat_scale_to_covar_preci

    _, quats, scales, *_ = scene()
    quats.requires_grad_()
    scales.requires_grad_()
    covars, precis = quat_scale_to_covar_preci(quats, scales, triu=triu)
    _covars, _precis = _quat_scale_to_covar_preci(quats, scales, triu=triu)
    close(covars, _covars, what="covars")
    v_covars = torch.randn_like(covars)
    v_precis = torch.randn_like(precis) * 0.01
    got = torch.autograd.grad((covars * v_covars + precis * v_precis).sum(), (quats, scales))
    want = torch.autograd.grad((_covars * v_covars + _precis * v_precis).sum(), (quats, scales))
    close(got[0], want[0], 1e-1, 1e-1, "d quats")
    close(got[1], want[1], 1e-1, 1e-1, "d scales")


def world_to_cam_check():
    from gsplat.cuda._torch_impl import _world_to_cam
    from gsplat.cuda._wrapper import quat_scale_to_covar_preci, world_to_cam

    means, quats, scales, _, viewmats, *_ = scene()
    covars, _ = quat_scale_to_covar_preci(quats, scales)
    for t in (means, covars, viewmats):
        t.requires_grad_()
    means_c, covars_c = world_to_cam(means, covars, viewmats)
    _means_c, _covars_c = _world_to_cam(means, covars, viewmats)
    close(means_c, _means_c, what="means_c")
    close(covars_c, _covars_c, what="covars_c")
    v_m, v_c = torch.randn_like(means_c), torch.randn_like(covars_c)
    got = torch.autograd.grad((means_c * v_m).sum() + (covars_c * v_c).sum(), (means, covars, viewmats))
    want = torch.autograd.grad((_means_c * v_m).sum() + (_covars_c * v_c).sum(), (means, covars, viewmats))
    close(got[0], want[0], what="d means")
    close(got[1], want[1], what="d covars")
    close(got[2], want[2], 1e-3, 1e-3, "d viewmats")


def persp_proj_check():
    from gsplat.cuda._torch_impl import _persp_proj
    from gsplat.cuda._wrapper import persp_proj, quat_scale_to_covar_preci, world_to_cam

    means, quats, scales, _, viewmats, Ks, width, height = scene()
    covars, _ = quat_scale_to_covar_preci(quats, scales)
    means, covars = world_to_cam(means, covars, viewmats)
    means.requires_grad_()
    covars.requires_grad_()
    m2, c2 = persp_proj(means, covars, Ks, width, height)
    _m2, _c2 = _persp_proj(means, covars, Ks, width, height)
    close(m2, _m2, 1e-4, 1e-4, "means2d")
    close(c2, _c2, 1e-1, 3e-2, "covars2d")
    v_m, v_c = torch.randn_like(m2), torch.randn_like(c2)
    got = torch.autograd.grad((m2 * v_m).sum() + (c2 * v_c).sum(), (means, covars))
    want = torch.autograd.grad((_m2 * v_m).sum() + (_c2 * v_c).sum(), (means, covars))
    close(got[0], want[0], 1e-2, 1e-2, "d means")
    close(got[1], want[1], 1e-1, 1e-1, "d covars")


def projection(fused, comp):
    from gsplat.cuda._torch_impl import _fully_fused_projection
    from gsplat.cuda._wrapper import fully_fused_projection, quat_scale_to_covar_preci

    means, quats, scales, _, viewmats, Ks, width, height = scene()
    for t in (viewmats, quats, scales, means):
        t.requires_grad_()
    if fused:
        out = fully_fused_projection(means, None, quats, scales, viewmats, Ks, width, height,
                                     calc_compensations=comp)
    else:
        covars, _ = quat_scale_to_covar_preci(quats, scales, triu=True)
        out = fully_fused_projection(means, covars, None, None, viewmats, Ks, width, height,
                                     calc_compensations=comp)
    radii, means2d, depths, conics, comps = out
    _covars, _ = quat_scale_to_covar_preci(quats, scales, triu=False)
    _radii, _means2d, _depths, _conics, _comps = _fully_fused_projection(
        means, _covars, viewmats, Ks, width, height, calc_compensations=comp)
    valid = (radii > 0) & (_radii > 0)
    assert int(valid.sum()) > 100, f"only {int(valid.sum())} Gaussians in view"
    close(radii, _radii, 0, 1, "radii")
    close(means2d[valid], _means2d[valid], 1e-4, 1e-4, "means2d")
    close(depths[valid], _depths[valid], 1e-4, 1e-4, "depths")
    close(conics[valid], _conics[valid], 1e-4, 1e-4, "conics")
    if comp:
        close(comps[valid], _comps[valid], 1e-4, 1e-3, "compensations")
    v_m = torch.randn_like(means2d) * radii[..., None]
    v_d = torch.randn_like(depths) * radii
    v_c = torch.randn_like(conics) * radii[..., None]
    v_k = torch.randn_like(comps) * radii if comp else None
    loss = (means2d * v_m).sum() + (depths * v_d).sum() + (conics * v_c).sum()
    _loss = (_means2d * v_m).sum() + (_depths * v_d).sum() + (_conics * v_c).sum()
    if comp:
        loss = loss + (comps * v_k).sum()
        _loss = _loss + (_comps * v_k).sum()
    got = torch.autograd.grad(loss, (viewmats, quats, scales, means))
    want = torch.autograd.grad(_loss, (viewmats, quats, scales, means))
    close(got[0], want[0], 1e-3, 1e-3, "d viewmats")
    close(got[1], want[1], 2e-1, 1e-2, "d quats")
    close(got[2], want[2], 1e-1, 2e-1, "d scales")
    close(got[3], want[3], 1e-2, 6e-2, "d means")


def rasterize(channels):
    from gsplat.cuda._torch_impl import _rasterize_to_pixels
    from gsplat.cuda._wrapper import (fully_fused_projection, isect_offset_encode, isect_tiles,
                                      quat_scale_to_covar_preci, rasterize_to_pixels)

    means, quats, scales, opacities, viewmats, Ks, width, height = scene()
    C = len(Ks)
    colors = torch.rand(C, len(means), channels, device=DEV)
    backgrounds = torch.rand(C, channels, device=DEV)
    covars, _ = quat_scale_to_covar_preci(quats, scales, compute_preci=False, triu=True)
    radii, means2d, depths, conics, _ = fully_fused_projection(means, covars, None, None, viewmats, Ks,
                                                               width, height)
    opacities = opacities.repeat(C, 1)
    tile = 16
    tw, th = math.ceil(width / tile), math.ceil(height / tile)
    _, isect_ids, flatten_ids = isect_tiles(means2d, radii, depths, tile, tw, th)
    offsets = isect_offset_encode(isect_ids, C, tw, th)
    ins = (means2d, conics, colors, opacities, backgrounds)
    for t in ins:
        t.requires_grad_()
    args = (width, height, tile, offsets, flatten_ids)
    rc, ra = rasterize_to_pixels(means2d, conics, colors, opacities, *args, backgrounds=backgrounds)
    _rc, _ra = _rasterize_to_pixels(means2d, conics, colors, opacities, *args, backgrounds=backgrounds)
    assert float(ra.max()) > 0.5, "nothing rendered"
    close(rc, _rc, what="colors")
    close(ra, _ra, what="alphas")
    v_rc, v_ra = torch.randn_like(rc), torch.randn_like(ra)
    got = torch.autograd.grad((rc * v_rc).sum() + (ra * v_ra).sum(), ins)
    want = torch.autograd.grad((_rc * v_rc).sum() + (_ra * v_ra).sum(), ins)
    for what, a, b, tol in zip(("d means2d", "d conics", "d colors", "d opacities", "d backgrounds"),
                               got, want, (1e-3, 1e-3, 1e-3, 1e-3, 1e-5)):
        close(a, b, tol, tol, what)


def sh(degree):
    from gsplat.cuda._torch_impl import _spherical_harmonics
    from gsplat.cuda._wrapper import spherical_harmonics

    coeffs = torch.randn(1000, 25, 3, device=DEV, requires_grad=True)
    dirs = torch.randn(1000, 3, device=DEV, requires_grad=True)
    colors = spherical_harmonics(degree, dirs, coeffs)
    _colors = _spherical_harmonics(degree, dirs, coeffs)
    close(colors, _colors, 1e-4, 1e-4, "colors")
    v = torch.randn_like(colors)
    got = torch.autograd.grad((colors * v).sum(), (coeffs, dirs), allow_unused=True)
    want = torch.autograd.grad((_colors * v).sum(), (coeffs, dirs), allow_unused=True)
    close(got[0], want[0], 1e-4, 1e-4, "d coeffs")
    if degree > 0:
        close(got[1], want[1], 1e-4, 1e-4, "d dirs")


def legacy_sh(degree, method):
    from gsplat.cuda_legacy._torch_impl import compute_sh_color
    from gsplat.cuda_legacy._wrapper import num_sh_bases, spherical_harmonics

    k = num_sh_bases(degree)
    coeffs = torch.randn(1000, k, 3, device=DEV, requires_grad=True)
    dirs = torch.nn.functional.normalize(torch.randn(1000, 3, device=DEV), dim=-1)
    colors = spherical_harmonics(degree, dirs, coeffs, method=method)
    _colors = compute_sh_color(dirs, coeffs, method=method)
    close(colors, _colors, 1e-4, 1e-4, "colors")
    v = torch.randn_like(colors)
    got = torch.autograd.grad((colors * v).sum(), coeffs)[0]
    want = torch.autograd.grad((_colors * v).sum(), coeffs)[0]
    close(got, want, 1e-4, 1e-4, "d coeffs")


def main():
    from gsplat import csrc, csrc_legacy  # prebuilt, not JIT-compiled

    print("modules", csrc.__file__, csrc_legacy.__file__)
    for triu in (False, True):
        check(f"quat_scale_to_covar_preci[triu={int(triu)}]", lambda t=triu: covar_preci(t))
    check("world_to_cam", world_to_cam_check)
    check("persp_proj", persp_proj_check)
    for fused in (False, True):
        for comp in (False, True):
            check(f"fully_fused_projection[fused={int(fused)},compensations={int(comp)}]",
                  lambda a=(fused, comp): projection(*a))
    for channels in (3, 32):
        check(f"rasterize_to_pixels[channels={channels}]", lambda c=channels: rasterize(c))
    for degree in range(5):
        check(f"spherical_harmonics[degree={degree}]", lambda d=degree: sh(d))
    for degree in (0, 1, 3):
        for method in ("poly", "fast"):
            check(f"legacy_spherical_harmonics[degree={degree},{method}]", lambda a=(degree, method): legacy_sh(*a))

    n_ok = sum(RESULTS)
    print(f"{PKG}: {n_ok}/{len(RESULTS)} checks passed")
    return 0 if n_ok == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
