// The demo's CUDA operations on torch's stable ABI: the same five operations
// as demo_ext/ops.h, taking and returning torch::stable::Tensor. Implemented
// by csrc/stable/*.cu and registered as torch.ops.demo_ext by
// csrc/stable/ops.cpp, with the schemas of csrc/ops.cpp.
#pragma once

#include <vector>

#include <torch/csrc/stable/tensor.h>

namespace demo_ext::stable {

// y = gelu(x + bias), bias broadcast over the last dimension.
torch::stable::Tensor bias_gelu_forward(const torch::stable::Tensor& x,
                                        const torch::stable::Tensor& bias);
// Returns {grad_x, grad_bias} for grad_y.
std::vector<torch::stable::Tensor> bias_gelu_backward(const torch::stable::Tensor& grad_y,
                                                      const torch::stable::Tensor& x,
                                                      const torch::stable::Tensor& bias);

// Per-row Euclidean norm of a 2-D tensor and its gradient.
torch::stable::Tensor row_norm_forward(const torch::stable::Tensor& x);
torch::stable::Tensor row_norm_backward(const torch::stable::Tensor& grad_y,
                                        const torch::stable::Tensor& x,
                                        const torch::stable::Tensor& y);

// out = alpha * x + beta * y.
torch::stable::Tensor axpby(const torch::stable::Tensor& x, const torch::stable::Tensor& y,
                            double alpha, double beta);

}  // namespace demo_ext::stable
