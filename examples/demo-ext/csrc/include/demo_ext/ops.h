// The demo's CUDA operations: host functions that check their arguments and
// launch the kernels. Kernels (csrc/kernels/*.cu) implement them without
// Python; the two binding flavours (bindings.cpp, ops.cpp) expose them.
#pragma once

#include <ATen/core/Tensor.h>

namespace demo_ext {

// y = gelu(x + bias), bias broadcast over the last dimension (tanh
// approximation). float32, float16 and bfloat16.
at::Tensor bias_gelu_forward(const at::Tensor& x, const at::Tensor& bias);
// Returns {grad_x, grad_bias} for grad_y.
std::vector<at::Tensor> bias_gelu_backward(const at::Tensor& grad_y, const at::Tensor& x,
                                           const at::Tensor& bias);

// Per-row Euclidean norm of a 2-D tensor: y[i] = sqrt(sum_j x[i][j]^2),
// accumulated in float32 (float64 for float64 input).
at::Tensor row_norm_forward(const at::Tensor& x);
// grad_x[i][j] = grad_y[i] * x[i][j] / y[i] (0 where y[i] == 0).
at::Tensor row_norm_backward(const at::Tensor& grad_y, const at::Tensor& x, const at::Tensor& y);

// out = alpha * x + beta * y, elementwise, for any floating dtype.
at::Tensor axpby(const at::Tensor& x, const at::Tensor& y, double alpha, double beta);

// d = a @ b for a [m, 16] and b [16, 8] float16, as float32: Hopper's
// warpgroup MMA in the sm_90a image, a portable loop in every other.
at::Tensor tile_matmul(const at::Tensor& a, const at::Tensor& b);
// Which code the current GPU runs for tile_matmul: 1 for the sm_90a (wgmma)
// path, 0 for the portable one.
int64_t tile_matmul_path();

}  // namespace demo_ext
