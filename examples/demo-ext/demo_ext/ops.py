"""The operations as autograd functions over the compiled kernels.

A pybind11 wheel exposes the kernels as functions of ``demo_ext._C``; the
abi3 (torch-library) wheel registers them with the dispatcher as
``torch.ops.demo_ext``. Importing ``_C`` loads either; this module picks
whichever the installed wheel provides.
"""

import torch

from demo_ext import _C

_kernels = _C if hasattr(_C, "bias_gelu_forward") else torch.ops.demo_ext


class _BiasGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias):
        ctx.save_for_backward(x, bias)
        return _kernels.bias_gelu_forward(x, bias)

    @staticmethod
    def backward(ctx, grad_y):
        x, bias = ctx.saved_tensors
        grad_x, grad_bias = _kernels.bias_gelu_backward(grad_y.contiguous(), x, bias)
        return grad_x, grad_bias


class _RowNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = _kernels.row_norm_forward(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, y = ctx.saved_tensors
        return _kernels.row_norm_backward(grad_y.contiguous(), x, y)


class _Axpby(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, alpha, beta):
        ctx.alpha, ctx.beta = alpha, beta
        return _kernels.axpby(x, y, alpha, beta)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * ctx.alpha, grad_out * ctx.beta, None, None


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """GELU (tanh approximation) of ``x + bias``; ``bias`` spans the last dimension."""
    return _BiasGelu.apply(x, bias)


def row_norm(x: torch.Tensor) -> torch.Tensor:
    """The Euclidean norm of each row of the 2-D tensor ``x``."""
    return _RowNorm.apply(x)


def axpby(x: torch.Tensor, y: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    """``alpha * x + beta * y``."""
    return _Axpby.apply(x, y, float(alpha), float(beta))


def tile_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for ``a`` of shape [m, 16] and ``b`` of [16, 8], float16, as float32.

    On Hopper (compute capability 9.0) the wheel's sm_90a code computes it with
    the warpgroup MMA (``wgmma``); every other GPU runs a portable loop.
    ``tile_matmul_path()`` says which. Not differentiable. The torch-stable
    wheel does not carry it.
    """
    return _kernels.tile_matmul(a, b)


def tile_matmul_path() -> int:
    """1 when the current GPU runs ``tile_matmul``'s sm_90a (wgmma) code, else 0."""
    return _kernels.tile_matmul_path()
