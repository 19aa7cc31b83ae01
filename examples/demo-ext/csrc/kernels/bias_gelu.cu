// Fused bias + GELU (tanh approximation), forward and backward: one read of
// x and bias, one write, instead of an add kernel followed by a GELU kernel.
// Templated over float, double, half and bfloat16 through ATen's dispatch.
// This is the ATen host code; the device code is kernels/bias_gelu.cuh.

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <demo_ext/kernels/bias_gelu.cuh>
#include <demo_ext/launch.cuh>
#include <demo_ext/ops.h>

namespace demo_ext {
namespace {

void check_bias(const at::Tensor& x, const at::Tensor& bias) {
  check_cuda_tensor(x, "x");
  check_cuda_tensor(bias, "bias");
  check_same(x, "x", bias, "bias");
  TORCH_CHECK(x.dim() >= 1, "demo_ext.bias_gelu: x must have at least one dimension");
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == x.size(-1),
              "demo_ext.bias_gelu: bias must be 1-D with x.size(-1) = ", x.size(-1),
              " elements, got shape ", bias.sizes());
}

}  // namespace

at::Tensor bias_gelu_forward(const at::Tensor& x_in, const at::Tensor& bias_in) {
  check_bias(x_in, bias_in);
  const c10::cuda::OptionalCUDAGuard guard(x_in.device());
  const at::Tensor x = x_in.contiguous();
  const at::Tensor bias = bias_in.contiguous();
  at::Tensor y = at::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) {
    return y;
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu_forward", [&] {
    bias_gelu_forward_kernel<scalar_t><<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), bias.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(),
        n, bias.numel());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

std::vector<at::Tensor> bias_gelu_backward(const at::Tensor& grad_y_in, const at::Tensor& x_in,
                                           const at::Tensor& bias_in) {
  check_bias(x_in, bias_in);
  check_cuda_tensor(grad_y_in, "grad_y");
  check_same(grad_y_in, "grad_y", x_in, "x");
  TORCH_CHECK(grad_y_in.sizes() == x_in.sizes(), "demo_ext.bias_gelu: grad_y has shape ",
              grad_y_in.sizes(), " but x has ", x_in.sizes());
  const c10::cuda::OptionalCUDAGuard guard(x_in.device());
  const at::Tensor grad_y = grad_y_in.contiguous();
  const at::Tensor x = x_in.contiguous();
  const at::Tensor bias = bias_in.contiguous();
  at::Tensor grad_x = at::empty_like(x);
  const int64_t n = x.numel();
  if (n > 0) {
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu_backward", [&] {
      bias_gelu_backward_kernel<scalar_t><<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(
          grad_y.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(),
          bias.const_data_ptr<scalar_t>(), grad_x.mutable_data_ptr<scalar_t>(), n, bias.numel());
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  // The bias gradient sums grad_x over every row; accumulate in float32 (or
  // float64) so half and bfloat16 rows do not lose precision.
  const at::ScalarType acc = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  // Rows spelled out: reshape cannot infer -1 when a row is empty (x of shape (4, 0)).
  const int64_t rows = bias.numel() == 0 ? 0 : n / bias.numel();
  at::Tensor grad_bias = grad_x.reshape({rows, bias.numel()}).sum(0, /*keepdim=*/false, acc).to(x.scalar_type());
  return {grad_x, grad_bias};
}

}  // namespace demo_ext
