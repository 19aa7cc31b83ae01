// Fused bias + GELU on torch's stable ABI, forward and backward. The host
// side of csrc/kernels/bias_gelu.cu with stable tensors; the device code is
// the same header, kernels/bias_gelu.cuh.

#include <demo_ext/stable/launch.h>

#include <demo_ext/kernels/bias_gelu.cuh>
#include <demo_ext/stable/ops.h>

namespace demo_ext::stable {
namespace {

void check_bias(const Tensor& x, const Tensor& bias) {
  check_cuda_tensor(x, "x");
  check_cuda_tensor(bias, "bias");
  check_same(x, "x", bias, "bias");
  STD_TORCH_CHECK(x.dim() >= 1, "demo_ext.bias_gelu: x must have at least one dimension");
  STD_TORCH_CHECK(bias.dim() == 1 && bias.size(0) == x.size(-1),
                  "demo_ext.bias_gelu: bias must be 1-D with x.size(-1) = ", x.size(-1),
                  " elements, got shape ", shape(bias));
}

}  // namespace

Tensor bias_gelu_forward(const Tensor& x_in, const Tensor& bias_in) {
  check_bias(x_in, bias_in);
  const torch::stable::accelerator::DeviceGuard guard(x_in.get_device_index());
  const Tensor x = torch::stable::contiguous(x_in);
  const Tensor bias = torch::stable::contiguous(bias_in);
  Tensor y = torch::stable::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) {
    return y;
  }
  const cudaStream_t stream = current_stream(x.get_device_index());
  DEMO_EXT_DISPATCH_FLOATING(x.scalar_type(), "bias_gelu_forward", [&] {
    bias_gelu_forward_kernel<scalar_t><<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), bias.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(),
        n, bias.numel());
  });
  STD_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

std::vector<Tensor> bias_gelu_backward(const Tensor& grad_y_in, const Tensor& x_in,
                                       const Tensor& bias_in) {
  check_bias(x_in, bias_in);
  check_cuda_tensor(grad_y_in, "grad_y");
  check_same(grad_y_in, "grad_y", x_in, "x");
  STD_TORCH_CHECK(same_shape(grad_y_in, x_in), "demo_ext.bias_gelu: grad_y has shape ",
                  shape(grad_y_in), " but x has ", shape(x_in));
  const torch::stable::accelerator::DeviceGuard guard(x_in.get_device_index());
  const Tensor grad_y = torch::stable::contiguous(grad_y_in);
  const Tensor x = torch::stable::contiguous(x_in);
  const Tensor bias = torch::stable::contiguous(bias_in);
  Tensor grad_x = torch::stable::empty_like(x);
  const int64_t n = x.numel();
  if (n > 0) {
    const cudaStream_t stream = current_stream(x.get_device_index());
    DEMO_EXT_DISPATCH_FLOATING(x.scalar_type(), "bias_gelu_backward", [&] {
      bias_gelu_backward_kernel<scalar_t><<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(
          grad_y.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(),
          bias.const_data_ptr<scalar_t>(), grad_x.mutable_data_ptr<scalar_t>(), n, bias.numel());
    });
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  }
  // The bias gradient sums grad_x over every row, accumulated in float32 (or
  // float64) as the ATen version does; rows spelled out because reshape
  // cannot infer -1 when a row is empty (x of shape (4, 0)).
  const ScalarType acc = x.scalar_type() == ScalarType::Double ? ScalarType::Double : ScalarType::Float;
  const int64_t width = bias.numel();
  const int64_t rows = width == 0 ? 0 : n / width;
  const std::vector<int64_t> row_dim{0};
  const Tensor grad_bias = torch::stable::to(
      torch::stable::sum(torch::stable::reshape(grad_x, {rows, width}), row_dim, false, acc),
      x.scalar_type());
  return {grad_x, grad_bias};
}

}  // namespace demo_ext::stable
