#!/usr/bin/env python3
"""GPU correctness checks for the pytorch-fast-transformers wheel.

The package's __init__ files swallow ImportError of the *_cuda modules, so all 15 compiled
modules are imported explicitly first. Each CUDA op (forward, and backward through the package's
autograd Functions) is then compared with the same op on CPU tensors (its *_cpu module) and, for
causal_product / sparse_product / hashing / clustering, with references written from the op's
definition. float32 only (all the kernels support)."""
import importlib
import sys
import traceback

import torch

PKG = "fast_transformers"
DEV = "cuda"
RESULTS = []
_ERRS = []
MODULES = [f"fast_transformers.{m}_{kind}" for m in (
    "hashing.hash", "aggregate.aggregate", "clustering.hamming.cluster", "sparse_product.sparse_product",
    "sparse_product.clustered_sparse_product", "causal_product.causal_product",
    "local_product.local_product") for kind in ("cpu", "cuda")]
MODULES.append("fast_transformers.aggregate.clustered_aggregate_cuda")


def check(name, fn):
    _ERRS.clear()
    try:
        fn()
        torch.cuda.synchronize()
        ok = True
    except Exception:
        ok = False
        traceback.print_exc()
    print(f"{name}: {'PASS' if ok else 'FAIL'} max_abs_err={max(_ERRS, default=float('nan')):.3e}",
          flush=True)
    RESULTS.append(ok)


def close(actual, expected, rtol=1e-4, atol=1e-4, what="", on_device=True):
    if on_device:
        assert actual.is_cuda, f"{what}: result is not on cuda ({actual.device})"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    a, e = actual.detach().cpu().double(), expected.detach().cpu().double()
    _ERRS.append((a - e).abs().max().item() if a.numel() else 0.0)
    torch.testing.assert_close(a, e, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def gen(seed):  # CPU generator: inputs are identical wherever the script runs
    return torch.Generator().manual_seed(seed)


def vs_cpu(fn, inputs, diff, seed, rtol=1e-4, atol=1e-4, ref=None):
    """fn(*inputs) on DEV vs on CPU (and vs ref on float64 CPU inputs): outputs, and grads of
    inputs[i] for i in diff after backprop of the same random cotangent."""
    res = {}
    for dev in (DEV, "cpu") + (("ref",) if ref else ()):
        args = [t.detach().clone().to("cpu" if dev == "ref" else dev) for t in inputs]
        args = [t.double() if dev == "ref" and t.is_floating_point() else t for t in args]
        for i in diff:
            args[i].requires_grad_()
        y = (ref if dev == "ref" else fn)(*args)
        g = torch.rand(y.shape, generator=gen(seed)).to(y)
        y.backward(g)
        res[dev] = (y, [args[i].grad for i in diff])
    # Every pair is compared before failing, so that a failure says which
    # side is off: the CUDA kernel, or the package's CPU kernel as well.
    pairs = [(DEV, d) for d in res if d != DEV] + ([("cpu", "ref")] if ref else [])
    failed = []
    for a, b in pairs:
        try:
            close(res[a][0], res[b][0], rtol, atol, f"forward {a} vs {b}", on_device=a == DEV)
            for i, ga, gb in zip(diff, res[a][1], res[b][1]):
                close(ga, gb, rtol, atol, f"grad[{i}] {a} vs {b}", on_device=a == DEV)
        except AssertionError as e:
            failed.append(str(e).splitlines()[0] + " " + " ".join(
                l for l in str(e).splitlines() if l.startswith("Greatest absolute")))
    assert not failed, "; ".join(failed)


def causal_ref(Q, K, V):
    L = Q.shape[2]
    QK = torch.einsum("nhle,nhse->nhls", Q, K) * torch.tril(torch.ones(L, L, dtype=Q.dtype))
    return torch.einsum("nhls,nhsm->nhlm", QK, V)


def causal_check(N, H, L, E, M):
    from fast_transformers.causal_product import causal_dot_product
    g = gen(N * 1000 + L + E)
    QKV = [torch.rand(N, H, L, x, generator=g) for x in (E, E, M)]  # positive, as upstream tests
    vs_cpu(causal_dot_product, QKV, [0, 1, 2], seed=1, rtol=2e-4, atol=1e-3, ref=causal_ref)


def hash_check(n, d, bits):
    from fast_transformers.hashing import compute_hashes
    g = gen(bits)
    X, A = torch.randn(n, d, generator=g), torch.randn(bits, d + 1, generator=g)
    proj = X.double() @ A[:, :-1].double().T
    ref_bits = proj > A[:, -1].double()
    ambiguous = (proj - A[:, -1].double()).abs() < 1e-3
    shifts = torch.arange(bits)
    for dev in (DEV, "cpu"):
        h = compute_hashes(X.to(dev), A.to(dev))
        assert h.device.type == dev and h.dtype == torch.int64
        h = h.cpu()
        assert bool((h >> bits == 0).all()), f"{dev}: bits set above bit {bits}"
        got = ((h[:, None] >> shifts) & 1).bool()
        bad = int(((got != ref_bits) & ~ambiguous).sum())
        _ERRS.append(float(bad))
        assert bad == 0, f"{dev}: {bad} hash bits differ from the float64 reference"


def cluster_random_check():
    """CUDA k-means on hashes: check the final assignment against its definition."""
    from fast_transformers.hashing import compute_hashes
    from fast_transformers.clustering.hamming import cluster
    N, H, L, C, bits = 3, 4, 200, 8, 31
    g = gen(7)
    X, A = torch.randn(N * H * L, 32, generator=g), torch.randn(bits, 33, generator=g)
    hashes = compute_hashes(X.to(DEV), A.to(DEV)).view(N, H, L)
    lengths = torch.tensor([L, 150, 77], dtype=torch.int32, device=DEV)
    centroids = hashes[:, :, :C].clone()
    distances = torch.empty(N, H, L, dtype=torch.int32, device=DEV)
    groups, counts = cluster(hashes, lengths, centroids=centroids, distances=distances,
                             iterations=10, bits=bits)
    assert groups.is_cuda and counts.is_cuda
    hs, cs, gr, cn, ds = (t.cpu().long() for t in (hashes, centroids, groups, counts, distances))
    xor = hs[..., None] ^ cs[:, :, None, :]
    dist = sum((xor >> i) & 1 for i in range(bits))  # hamming distances (N, H, L, C)
    mind, arg = dist.min(-1)
    valid = torch.arange(L)[None, None, :] < lengths.cpu().long()[:, None, None]
    bad = int((gr != torch.where(valid, arg, C + 1)).sum())
    bad += int((ds != torch.where(valid, mind, -1)).sum())
    ref_counts = (torch.where(valid, gr, C)[..., None] == torch.arange(C)).sum(2)
    bad += int((cn != ref_counts).sum())
    _ERRS.append(float(bad))
    assert bad == 0, f"{bad} labels/distances/counts inconsistent with the final centroids"


def cluster_separated_check():
    """Well separated clusters: CUDA and CPU k-means must both recover them exactly."""
    from fast_transformers.clustering.hamming import cluster
    N, H, per, bits = 2, 3, 25, 24
    patterns = torch.tensor([0, 0xFFF, 0xFFF000, 0xFFFFFF], dtype=torch.int64)
    C, L = len(patterns), len(patterns) * per
    g = gen(3)
    truth = torch.stack([torch.randperm(L, generator=g) % C for _ in range(N * H)]).view(N, H, L)
    flip = (torch.rand(N, H, L, generator=g) < 0.5).long() << torch.randint(0, bits, (N, H, L), generator=g)
    hashes = patterns[truth] ^ flip
    lengths = torch.full((N,), L, dtype=torch.int32)
    for dev in (DEV, "cpu"):
        cent = patterns.view(1, 1, C).repeat(N, H, 1).to(dev)
        gr, cn = cluster(hashes.to(dev), lengths.to(dev), centroids=cent, iterations=5, bits=bits)
        assert gr.device.type == dev and cn.device.type == dev
        bad = int((gr.cpu().long() != truth).sum()) + int((cn.cpu() != per).sum())
        _ERRS.append(float(bad))
        assert bad == 0, f"{dev}: {bad} wrong labels/counts"


def sorted_groups(N, H, L, C, seed):
    g = gen(seed)
    counts = torch.stack([torch.diff(torch.cat([torch.tensor([0]), (torch.randperm(
        L - 1, generator=g)[:C - 1] + 1).sort().values, torch.tensor([L])])) for _ in range(N * H)])
    groups = torch.stack([torch.repeat_interleave(torch.arange(C), c) for c in counts])
    return groups.view(N, H, L).int(), counts.view(N, H, C).int()


def aggregate_checks(N, H, L, E, C, clustered):
    from fast_transformers import aggregate as ag
    g = gen(11 + C)
    X, Y = torch.randn(N, H, L, E, generator=g), torch.randn(N, H, C, E, generator=g)
    F = torch.rand(N, H, C, generator=g)
    if not clustered:
        G = torch.randint(-1, C + 1, (N, H, L), generator=g, dtype=torch.int32)  # -1, C: skipped
        close(ag.aggregate(X.to(DEV), G.to(DEV), F.to(DEV)), ag.aggregate(X, G, F), what="aggregate")
        close(ag.broadcast(Y.to(DEV), G.to(DEV), F.to(DEV)), ag.broadcast(Y, G, F), what="broadcast")
        return
    G, counts = sorted_groups(N, H, L, C, seed=C)
    lengths = torch.full((N,), L, dtype=torch.int32)
    lengths[-1] = L - 37
    Gp = G.clone()
    Gp[-1, :, L - 37:] = C  # padding beyond the length: ignored by both
    close(ag.clustered_aggregate(X.to(DEV), Gp.to(DEV), F.to(DEV), lengths.to(DEV)),
          ag.aggregate(X, Gp, F), what="clustered_aggregate")
    close(ag.clustered_broadcast(Y.to(DEV), G.to(DEV), counts.to(DEV), F.to(DEV)),
          ag.broadcast(Y, G, F), what="clustered_broadcast")


def sparse_checks():
    from fast_transformers.sparse_product import sparse_dot_product, sparse_weighted_average
    N, H, L, S, E, k = 2, 4, 200, 150, 32, 24
    g = gen(13)
    Q, K = torch.randn(N, H, L, E, generator=g), torch.randn(N, H, S, E, generator=g)
    topk = torch.topk(torch.randn(N, H, L, S, generator=g), k, dim=-1).indices
    W = torch.rand(N, H, L, k, generator=g)
    ix = (torch.arange(N).view(N, 1, 1, 1), torch.arange(H).view(1, H, 1, 1))

    vs_cpu(sparse_dot_product, [Q, K, topk], [0, 1], seed=2,
           ref=lambda Q, K, t: torch.einsum("nhle,nhlke->nhlk", Q, K[ix[0], ix[1], t]))
    vs_cpu(sparse_weighted_average, [W, K, topk], [0, 1], seed=3,
           ref=lambda W, V, t: torch.einsum("nhlk,nhlke->nhle", W, V[ix[0], ix[1], t]))


def clustered_sparse_checks():
    from fast_transformers.sparse_product import (clustered_sparse_dot_product,
                                                  clustered_sparse_weighted_average)
    N, H, L, S, E, C, k = 2, 3, 200, 100, 64, 12, 32
    groups, counts = sorted_groups(N, H, L, C, seed=5)
    g = gen(14)
    Q, K = torch.randn(N, H, L, E, generator=g), torch.randn(N, H, S, E, generator=g)
    topk = torch.topk(torch.randn(N, H, C, S, generator=g), k, dim=-1).indices
    W = torch.rand(N, H, L, k, generator=g)
    lengths = torch.full((N,), L, dtype=torch.int32)
    vs_cpu(clustered_sparse_dot_product, [Q, K, topk, groups, counts, lengths], [0, 1], seed=4)
    vs_cpu(clustered_sparse_weighted_average, [W, K, topk, groups, counts], [0, 1], seed=5)


def local_checks(N, H, L, E, ctx):
    from fast_transformers.local_product import local_dot_product, local_weighted_average
    g = gen(15 + ctx)
    Q, K = torch.randn(N, H, L, E, generator=g), torch.randn(N, H, L, E, generator=g)
    mask = 0.1 * torch.randn(L, L, generator=g)
    key_lengths = torch.tensor([L] + [L - 23] * (N - 1), dtype=torch.int64)
    A, V = torch.rand(N, H, L, ctx, generator=g), torch.randn(N, H, L, E, generator=g)

    def dot(q, k, m, kl):
        # Zero the masked (-1e24) entries so that their cotangent is 0, as after a
        # softmax: the CUDA backward ignores key_lengths while the CPU one skips them.
        y = local_dot_product(q, k, m, kl, ctx)
        return torch.where(y > -1e20, y, torch.zeros_like(y))

    def dot_ref(q, k, m, kl):
        # From the definition (local_product_cpu.cpp): entry j of query l is
        # q_l . k_s + mask[l, s] for key s = l - ctx//2 + j inside
        # [0, key_length), masked otherwise.
        n, h, length, _ = q.shape
        full = torch.einsum("nhle,nhse->nhls", q, k) + m[:length, :length]
        s = torch.arange(length)[:, None] - ctx // 2 + torch.arange(ctx)[None, :]
        valid = (s >= 0)[None] & (s[None] < kl[:, None, None])
        picked = full.gather(-1, s.clamp(0, length - 1).expand(n, h, length, ctx))
        return torch.where(valid[:, None], picked, torch.zeros_like(picked))
    vs_cpu(dot, [Q, K, mask, key_lengths], [0, 1], seed=6, ref=dot_ref)
    vs_cpu(local_weighted_average, [A, V], [0, 1], seed=7)


def main():
    try:
        for m in MODULES:
            importlib.import_module(m)
        assert torch.cuda.is_available(), "CUDA not available"
        print(f"import: PASS max_abs_err=0.000e+00 ({len(MODULES)} modules, {torch.cuda.get_device_name()})")
    except Exception:
        traceback.print_exc()
        print(f"import: FAIL max_abs_err=nan\n{PKG}: 0/1 checks passed")
        return 1
    RESULTS.append(True)

    # (N, H, L, E, M): low-occupancy and regular NVIDIA kernels, E>256 generic fallback
    for shape in ((2, 4, 100, 32, 32), (4, 12, 257, 64, 64), (4, 10, 130, 128, 96),
                  (2, 3, 77, 48, 200), (2, 2, 150, 300, 64)):
        check(f"causal_product_fwd_bwd{list(shape)}", lambda s=shape: causal_check(*s))
    for n, d, bits in ((1000, 32, 16), (777, 64, 31), (500, 48, 63)):
        check(f"compute_hashes[n={n},d={d},bits={bits}]", lambda a=(n, d, bits): hash_check(*a))
    check("cluster_hamming_cuda_consistency[bits=31,C=8]", cluster_random_check)
    check("cluster_hamming_separated_cuda_vs_cpu[C=4]", cluster_separated_check)
    for clustered, shape in ((False, (3, 4, 300, 48, 17)), (True, (2, 3, 200, 64, 12)),
                             (True, (2, 2, 1000, 64, 300))):
        check(f"{'clustered_' * clustered}aggregate_broadcast_cuda_vs_cpu[C={shape[-1]}]",
              lambda a=shape + (clustered,): aggregate_checks(*a))
    check("sparse_product_fwd_bwd_cuda_vs_cpu", sparse_checks)
    check("clustered_sparse_product_fwd_bwd_cuda_vs_cpu", clustered_sparse_checks)
    for N, H, L, E, ctx in ((2, 3, 150, 32, 9), (1, 4, 300, 64, 32)):
        check(f"local_product_fwd_bwd_cuda_vs_cpu[L={L},E={E},ctx={ctx}]",
              lambda a=(N, H, L, E, ctx): local_checks(*a))

    n_ok = sum(RESULTS)
    print(f"{PKG}: {n_ok}/{len(RESULTS)} checks passed")
    return 0 if n_ok == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
