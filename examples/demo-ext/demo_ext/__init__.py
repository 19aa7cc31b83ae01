"""cuwheel's demo extension: three CUDA operations with autograd support.

    >>> import torch, demo_ext
    >>> x = torch.randn(4, 8, device="cuda", requires_grad=True)
    >>> demo_ext.bias_gelu(x, torch.zeros(8, device="cuda")).sum().backward()
"""

from demo_ext.ops import axpby, bias_gelu, row_norm

__all__ = ["axpby", "bias_gelu", "row_norm"]
