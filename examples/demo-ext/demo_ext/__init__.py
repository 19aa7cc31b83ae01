"""cuwheel's demo extension: three CUDA operations with autograd support, and
a float16 matmul tile that Hopper GPUs compute with their warpgroup MMA
(wgmma, in the wheel's arch-specific sm_90a code).

    >>> import torch, demo_ext
    >>> x = torch.randn(4, 8, device="cuda", requires_grad=True)
    >>> demo_ext.bias_gelu(x, torch.zeros(8, device="cuda")).sum().backward()
"""

from demo_ext.ops import axpby, bias_gelu, row_norm, tile_matmul, tile_matmul_path

__all__ = ["axpby", "bias_gelu", "row_norm", "tile_matmul", "tile_matmul_path"]
