#!/usr/bin/env python3
# needs-no-deps: mmengine addict yapf platformdirs termcolor rich markdown-it-py mdurl pygments pyyaml packaging numpy pillow opencv-python-headless==4.11.0.86
"""GPU correctness checks for the mmcv 2.2.0 wheel (mmcv._ext, 130 CUDA TUs, sm_90).

mmcv's sdist ships no op tests, so each CUDA op is compared with a reference the
package itself carries, forward and (where the op has one) backward:
- the same op on CPU tensors, where mmcv compiles a CPU kernel (nms, nms_rotated,
  roi_align, roi_align_rotated, deform_conv2d, modulated_deform_conv2d,
  box_iou_rotated, points_in_boxes, dynamic voxelization, psa_mask);
- mmcv's own pure-PyTorch implementation (filtered_lrelu, upfirdn2d and bias_act
  against their `_ref` functions with use_custom_op=False;
  multi_scale_deformable_attn_pytorch; _bbox_overlaps_cpu);
- a float64 formula from the kernel's definition (sigmoid and softmax focal loss,
  fused_bias_leakyrelu, knn, three_nn, gather_points, furthest_point_sample);
- carafe against carafe_naive (two separate kernels of the package).
filtered_lrelu must take its compiled kernel: the op's "no optimized CUDA kernel,
using generic fallback" warning fails the check.
mmcv's requirements name opencv-python, whose cv2 the headless wheel provides as
well (4.11: its 50 MB wheel fits a device call's carry, 5.x's 64 MB does not), and
mmengine's name matplotlib, which mmcv.ops never imports: the run installs these
without their requirements (the `needs-no-deps` line).
Prints one line per check and exits 1 if any check failed.
"""
import os
import sys
import traceback
import warnings

_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != _HERE]

import torch  # noqa: E402

PKG = 'mmcv'
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4),
       torch.float64: dict(rtol=1e-9, atol=1e-9),
       torch.float16: dict(rtol=1e-2, atol=1e-2)}
results, _err = [], [0.0]


def close(actual, expected, tol=None, exact=False):
    a, e = actual.detach().cpu(), expected.detach().cpu()
    assert a.shape == e.shape, f'shape {tuple(a.shape)} != {tuple(e.shape)}'
    if a.numel() and (a.is_floating_point() or e.is_floating_point()):
        d = (a.double() - e.double()).abs().nan_to_num(0.0, float('inf'), float('inf'))
        _err[0] = max(_err[0], d.max().item())
    if exact or not a.is_floating_point():
        torch.testing.assert_close(a, e.to(a.dtype), rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(a, e.to(a.dtype), equal_nan=True,
                                   **(tol or TOL[a.dtype]))


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


def run(fn, args, device, dtype=None, grad=True):
    """fn on copies of args moved to device (floats cast to dtype); returns (out, grads)."""
    moved = []
    for a in args:
        if torch.is_tensor(a):
            a = a.detach().to(device)
            if a.is_floating_point():
                a = a.to(dtype or a.dtype).requires_grad_(grad)
        moved.append(a)
    out = fn(*moved)
    grads = []
    if grad:
        gen = torch.Generator().manual_seed(1234)
        g = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(device, out.dtype)
        leaves = [a for a in moved if torch.is_tensor(a) and a.requires_grad]
        grads = torch.autograd.grad((out * g).sum(), leaves)
    return out, grads


def compare(fn, ref, args, dtype=torch.float32, ref_device='cpu', ref_dtype=None,
            grad=True, tol=None):
    """fn on CUDA against ref (default: fn itself) on ref_device, outputs and gradients."""
    oc, gc = run(fn, args, 'cuda', dtype, grad)
    assert oc.is_cuda, f'result is on {oc.device}'
    orf, gr = run(ref or fn, args, ref_device, ref_dtype or dtype, grad)
    close(oc, orf, tol)
    for a, b in zip(gc, gr):
        close(a, b, tol)
    return oc


def boxes(n, size=64.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=gen) * size
    wh = torch.rand(n, 2, generator=gen) * size / 4 + 2
    return torch.cat([xy, xy + wh], 1)


def t_import():
    import mmcv
    from mmcv.ops import get_compiling_cuda_version
    from mmcv.utils import ext_loader
    ext = ext_loader.load_ext('_ext', ['nms'])
    print(f'  mmcv {mmcv.__version__}, _ext {ext.__file__}, '
          f'compiled with CUDA {get_compiling_cuda_version()}')


def t_nms():
    from mmcv.ops import nms
    b = boxes(500)
    s = torch.rand(500, generator=torch.Generator().manual_seed(1))
    dc, kc = nms(b.cuda(), s.cuda(), 0.5)
    dp, kp = nms(b, s, 0.5)
    assert 0 < kp.numel() < 500, kp.numel()
    close(kc, kp, exact=True)
    close(dc, dp, exact=True)


def t_nms_rotated():
    from mmcv.ops import nms_rotated
    gen = torch.Generator().manual_seed(2)
    d = torch.cat([torch.rand(200, 2, generator=gen) * 50, torch.rand(200, 2, generator=gen) * 10 + 2,
                   (torch.rand(200, 1, generator=gen) - 0.5) * 3.1], 1)
    s = torch.rand(200, generator=gen)
    dc, kc = nms_rotated(d.cuda(), s.cuda(), 0.3)
    dp, kp = nms_rotated(d, s, 0.3)
    assert 0 < kp.numel() < 200, kp.numel()
    close(kc, kp, exact=True)
    close(dc, dp)


def t_box_iou_rotated(aligned):
    from mmcv.ops import box_iou_rotated
    gen = torch.Generator().manual_seed(3)

    def rb(n):
        return torch.cat([torch.rand(n, 2, generator=gen) * 20, torch.rand(n, 2, generator=gen) * 8 + 1,
                          (torch.rand(n, 1, generator=gen) - 0.5) * 3.1], 1)
    a, b = rb(40), rb(40)
    ic = box_iou_rotated(a.cuda(), b.cuda(), aligned=aligned)
    ip = box_iou_rotated(a, b, aligned=aligned)
    assert ip.max() > 0
    close(ic, ip, tol=dict(rtol=1e-4, atol=1e-5))


def t_bbox_overlaps(mode):
    from mmcv.ops import bbox_overlaps
    from mmcv.ops.bbox import _bbox_overlaps_cpu
    a, b = boxes(60, seed=4), boxes(50, seed=5)
    oc = bbox_overlaps(a.cuda(), b.cuda(), mode=mode)
    ref = _bbox_overlaps_cpu(a.double(), b.double(), mode=mode)
    assert ref.max() > 0
    close(oc, ref)


def rois(n, size=32.0, seed=6, batch=2):
    b = boxes(n, size, seed)
    idx = torch.randint(0, batch, (n, 1), generator=torch.Generator().manual_seed(seed)).float()
    return torch.cat([idx, b], 1)


def t_roi_align(pool_mode, aligned):
    from mmcv.ops import roi_align
    x = torch.randn(2, 4, 32, 32, generator=torch.Generator().manual_seed(7))
    r = rois(12)
    compare(lambda x: roi_align(x, r.to(x.device), (5, 5), 1.0, 2, pool_mode, aligned), None, [x])


def t_roi_align_rotated():
    from mmcv.ops import roi_align_rotated
    gen = torch.Generator().manual_seed(8)
    x = torch.randn(2, 3, 24, 24, generator=gen)
    r = torch.cat([torch.randint(0, 2, (10, 1), generator=gen).float(),
                   torch.rand(10, 2, generator=gen) * 16 + 4, torch.rand(10, 2, generator=gen) * 8 + 2,
                   (torch.rand(10, 1, generator=gen) - 0.5) * 3], 1)
    compare(lambda x: roi_align_rotated(x, r.to(x.device), (4, 4), 1.0, 2, True, False), None, [x])


def t_deform_conv():
    from mmcv.ops import deform_conv2d
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(2, 4, 12, 12, generator=gen)
    off = torch.randn(2, 2 * 9, 12, 12, generator=gen) * 2
    w = torch.randn(6, 4, 3, 3, generator=gen)
    compare(lambda x, o, w: deform_conv2d(x, o, w, 1, 1, 1, 1, 1), None, [x, off, w],
            tol=dict(rtol=1e-4, atol=5e-4))


def t_modulated_deform_conv():
    from mmcv.ops import modulated_deform_conv2d
    gen = torch.Generator().manual_seed(10)
    x = torch.randn(2, 4, 12, 12, generator=gen)
    off = torch.randn(2, 2 * 9, 12, 12, generator=gen) * 2
    m = torch.rand(2, 9, 12, 12, generator=gen)
    w = torch.randn(6, 4, 3, 3, generator=gen)
    b = torch.randn(6, generator=gen)
    compare(lambda x, o, m, w, b: modulated_deform_conv2d(x, o, m, w, b, 1, 1, 1, 1, 1), None,
            [x, off, m, w, b], tol=dict(rtol=1e-4, atol=5e-4))


def t_psa_mask(kind):
    from mmcv.ops import PSAMask
    x = torch.randn(2, 25, 6, 7, generator=torch.Generator().manual_seed(11))
    op = PSAMask(kind, (5, 5))
    compare(lambda x: op(x), None, [x])


def t_points_in_boxes():
    from mmcv.ops import points_in_boxes_all, points_in_boxes_cpu
    gen = torch.Generator().manual_seed(12)
    pts = torch.rand(2, 2000, 3, generator=gen) * 20 - 10
    ctr = torch.rand(2, 8, 3, generator=gen) * 12 - 6
    dims = torch.rand(2, 8, 3, generator=gen) * 5 + 1
    yaw = (torch.rand(2, 8, 1, generator=gen) - 0.5) * 3
    bx = torch.cat([ctr, dims, yaw], 2)
    c = points_in_boxes_all(pts.cuda(), bx.cuda())
    p = points_in_boxes_cpu(pts, bx)
    assert p.sum() > 0
    close(c, p, exact=True)


def t_voxelize():
    from mmcv.ops import voxelization
    pts = torch.rand(5000, 4, generator=torch.Generator().manual_seed(13)) * 40 - 20
    args = ([0.5, 0.5, 0.5], [-20, -20, -20, 20, 20, 20], -1)
    close(voxelization(pts.cuda(), *args), voxelization(pts, *args), exact=True)


def t_focal(kind):
    from mmcv.ops import sigmoid_focal_loss, softmax_focal_loss
    gen = torch.Generator().manual_seed(14)
    x = torch.randn(64, 7, generator=gen)
    t = torch.randint(0, 7, (64,), generator=gen)
    gamma, alpha = 2.0, 0.25
    if kind == 'sigmoid':
        def ref(x):
            p = x.sigmoid()
            pos = torch.nn.functional.one_hot(t.to(x.device), 7).to(x.dtype)
            tp = (1 - p) ** gamma * p.clamp_min(1.1754943508222875e-38).log()
            tn = p ** gamma * (1 - p).clamp_min(1.1754943508222875e-38).log()
            return -pos * alpha * tp - (1 - pos) * (1 - alpha) * tn
        compare(lambda x: sigmoid_focal_loss(x, t.to(x.device), gamma, alpha, None, 'none'), ref,
                [x], ref_dtype=torch.float64)
    else:  # forward only: the op's backward is its own closed form
        def ref(x):
            p = x.softmax(1).gather(1, t.to(x.device)[:, None])[:, 0]
            return -alpha * (1 - p) ** gamma * p.log()
        compare(lambda x: softmax_focal_loss(x, t.to(x.device), gamma, alpha, None, 'none'), ref,
                [x], ref_dtype=torch.float64, grad=False)


def t_fused_bias_leakyrelu():
    from mmcv.ops import fused_bias_leakyrelu
    gen = torch.Generator().manual_seed(15)
    x, b = torch.randn(4, 8, 5, 5, generator=gen), torch.randn(8, generator=gen)
    compare(fused_bias_leakyrelu,
            lambda x, b: torch.nn.functional.leaky_relu(x + b.view(1, -1, 1, 1), 0.2) * 2 ** 0.5,
            [x, b], ref_dtype=torch.float64)


def t_bias_act(act):
    from mmcv.ops import bias_act
    gen = torch.Generator().manual_seed(16)
    x, b = torch.randn(4, 8, 6, 6, generator=gen), torch.randn(8, generator=gen)
    compare(lambda x, b: bias_act(x, b, act=act),
            lambda x, b: bias_act(x, b, act=act, use_custom_op=False), [x, b],
            ref_dtype=torch.float64)


def t_upfirdn2d(up, down):
    from mmcv.ops import upfirdn2d
    gen = torch.Generator().manual_seed(17)
    x, f = torch.randn(2, 3, 16, 16, generator=gen), torch.randn(4, 4, generator=gen)
    # The filter stays float32, as both the kernel and the reference assert;
    # so does the reference (on the CPU: no TF32 convolution there).
    compare(lambda x: upfirdn2d(x, f.to(x.device), up, down, 1),
            lambda x: upfirdn2d(x, f.to(x.device), up, down, 1, use_custom_op=False), [x])


def t_filtered_lrelu():
    from mmcv.ops import filtered_lrelu
    gen = torch.Generator().manual_seed(18)
    x = torch.randn(2, 8, 32, 32, generator=gen)
    fu, fd = torch.randn(12, generator=gen) / 4, torch.randn(12, generator=gen) / 4
    b = torch.randn(8, generator=gen)

    def op(x, b, custom):
        return filtered_lrelu(x, fu.to(x.device), fd.to(x.device), b, up=2, down=2,
                              padding=11, clamp=256.0, use_custom_op=custom)
    with warnings.catch_warnings():  # the generic fallback would not test the compiled kernel
        warnings.filterwarnings('error', message='filtered_lrelu called with parameters that have no')
        compare(lambda x, b: op(x, b, True), lambda x, b: op(x, b, False), [x, b],
                tol=dict(rtol=1e-3, atol=1e-3))


def t_ms_deform_attn():
    from mmcv.ops.multi_scale_deform_attn import (MultiScaleDeformableAttnFunction,
                                                   multi_scale_deformable_attn_pytorch)
    gen = torch.Generator().manual_seed(19)
    shapes = torch.tensor([[8, 10], [4, 5], [2, 3]])
    start = torch.cat([shapes.new_zeros(1), (shapes[:, 0] * shapes[:, 1]).cumsum(0)[:-1]])
    nk = int((shapes[:, 0] * shapes[:, 1]).sum())
    bs, nq, nh, dh, nl, npnt = 2, 12, 4, 8, 3, 4
    v = torch.randn(bs, nk, nh, dh, generator=gen)
    loc = torch.rand(bs, nq, nh, nl, npnt, 2, generator=gen)
    w = torch.rand(bs, nq, nh, nl, npnt, generator=gen) + 1e-5
    w = w / w.sum((-1, -2), keepdim=True)
    compare(lambda v, loc, w: MultiScaleDeformableAttnFunction.apply(
                v, shapes.to(v.device), start.to(v.device), loc, w, 64),
            lambda v, loc, w: multi_scale_deformable_attn_pytorch(v, shapes.to(v.device), loc, w),
            [v, loc, w], ref_dtype=torch.float64, tol=dict(rtol=1e-4, atol=1e-4))


def t_carafe():
    from mmcv.ops import carafe, carafe_naive
    gen = torch.Generator().manual_seed(20)
    x = torch.randn(2, 8, 10, 10, generator=gen)
    m = torch.rand(2, 5 * 5 * 2, 20, 20, generator=gen)
    compare(lambda x, m: carafe(x, m, 5, 2, 2), lambda x, m: carafe_naive(x, m, 5, 2, 2), [x, m],
            ref_device='cuda')


def t_knn():
    from mmcv.ops import knn
    gen = torch.Generator().manual_seed(21)
    xyz, ctr = torch.rand(2, 256, 3, generator=gen), torch.rand(2, 32, 3, generator=gen)
    idx = knn(5, xyz.cuda(), ctr.cuda())  # (B, k, npoint)
    d = torch.cdist(ctr.double(), xyz.double())  # (B, npoint, N)
    picked = d.gather(2, idx.long().cpu().transpose(1, 2))
    close(picked, d.topk(5, 2, largest=False).values, tol=dict(rtol=1e-5, atol=1e-6))


def t_three_nn():
    from mmcv.ops import three_nn
    gen = torch.Generator().manual_seed(22)
    tgt, src = torch.rand(2, 64, 3, generator=gen), torch.rand(2, 128, 3, generator=gen)
    dist, idx = three_nn(tgt.cuda(), src.cuda())
    ref = torch.cdist(tgt.double(), src.double()).topk(3, 2, largest=False)
    close(dist, ref.values, tol=dict(rtol=1e-4, atol=1e-5))
    close(idx.long(), ref.indices, exact=True)


def t_gather_points():
    from mmcv.ops import gather_points
    gen = torch.Generator().manual_seed(23)
    f = torch.randn(2, 6, 100, generator=gen)
    i = torch.randint(0, 100, (2, 30), generator=gen).int()
    compare(lambda f: gather_points(f, i.to(f.device)),
            lambda f: f.gather(2, i.long()[:, None, :].expand(-1, f.size(1), -1)), [f])


def t_furthest_point_sample():
    from mmcv.ops import furthest_point_sample
    pts = torch.rand(2, 300, 3, generator=torch.Generator().manual_seed(24))
    got = furthest_point_sample(pts.cuda(), 40).long().cpu()
    p = pts.double()
    for b in range(2):
        sel, dist = [0], ((p[b] - p[b, 0]) ** 2).sum(1)
        for _ in range(39):
            sel.append(int(dist.argmax()))
            dist = torch.minimum(dist, ((p[b] - p[b, sel[-1]]) ** 2).sum(1))
        close(got[b], torch.tensor(sel), exact=True)


def t_env():
    assert torch.cuda.is_available(), 'torch.cuda.is_available() is False'
    print(f'  torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name(0)}')


def main():
    check('cuda_available', t_env)
    if not (check('import', t_import) and results[0]):
        print(f'{PKG}: {sum(results)}/{len(results)} checks passed')
        return 1
    check('nms', t_nms)
    check('nms_rotated', t_nms_rotated)
    for aligned in (False, True):
        check(f'box_iou_rotated[aligned={aligned}]', t_box_iou_rotated, aligned)
    for mode in ('iou', 'iof'):
        check(f'bbox_overlaps[{mode}]', t_bbox_overlaps, mode)
    for mode, aligned in (('avg', True), ('avg', False), ('max', True)):
        check(f'roi_align[{mode},aligned={aligned}]', t_roi_align, mode, aligned)
    check('roi_align_rotated', t_roi_align_rotated)
    check('deform_conv2d', t_deform_conv)
    check('modulated_deform_conv2d', t_modulated_deform_conv)
    for kind in ('collect', 'distribute'):
        check(f'psa_mask[{kind}]', t_psa_mask, kind)
    check('points_in_boxes_all', t_points_in_boxes)
    check('voxelization[dynamic]', t_voxelize)
    for kind in ('sigmoid', 'softmax'):
        check(f'{kind}_focal_loss', t_focal, kind)
    check('fused_bias_leakyrelu', t_fused_bias_leakyrelu)
    for act in ('relu', 'lrelu', 'tanh', 'sigmoid', 'swish'):
        check(f'bias_act[{act}]', t_bias_act, act)
    for up, down in ((1, 1), (2, 1), (1, 2)):
        check(f'upfirdn2d[up={up},down={down}]', t_upfirdn2d, up, down)
    check('filtered_lrelu[up=2,down=2]', t_filtered_lrelu)
    check('multi_scale_deform_attn', t_ms_deform_attn)
    check('carafe', t_carafe)
    check('knn', t_knn)
    check('three_nn', t_three_nn)
    check('gather_points', t_gather_points)
    check('furthest_point_sample', t_furthest_point_sample)
    print(f'{PKG}: {sum(results)}/{len(results)} checks passed')
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
