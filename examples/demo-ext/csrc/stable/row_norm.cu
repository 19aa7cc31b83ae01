// Per-row Euclidean norm on torch's stable ABI, forward and backward. The
// host side of csrc/kernels/row_norm.cu with stable tensors; the device code
// is the same header, kernels/row_norm.cuh.

#include <demo_ext/stable/launch.h>

#include <demo_ext/kernels/row_norm.cuh>
#include <demo_ext/stable/ops.h>

namespace demo_ext::stable {
namespace {

void check_matrix(const Tensor& x) {
  check_cuda_tensor(x, "x");
  STD_TORCH_CHECK(x.dim() == 2, "demo_ext.row_norm: x must be 2-D, got shape ", shape(x));
  STD_TORCH_CHECK(x.size(0) <= 2147483647, "demo_ext.row_norm: at most 2^31 - 1 rows, got ",
                  x.size(0));
}

}  // namespace

Tensor row_norm_forward(const Tensor& x_in) {
  check_matrix(x_in);
  const torch::stable::accelerator::DeviceGuard guard(x_in.get_device_index());
  const Tensor x = torch::stable::contiguous(x_in);
  const int64_t rows = x.size(0);
  Tensor y = torch::stable::new_empty(x, {rows});
  if (rows == 0) {
    return y;
  }
  const cudaStream_t stream = current_stream(x.get_device_index());
  DEMO_EXT_DISPATCH_FLOATING(x.scalar_type(), "row_norm_forward", [&] {
    row_norm_forward_kernel<scalar_t>
        <<<static_cast<unsigned int>(rows), kThreadsPerBlock, 0, stream>>>(
            x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), x.size(1));
  });
  STD_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

Tensor row_norm_backward(const Tensor& grad_y_in, const Tensor& x_in, const Tensor& y_in) {
  check_matrix(x_in);
  check_cuda_tensor(grad_y_in, "grad_y");
  check_cuda_tensor(y_in, "y");
  check_same(grad_y_in, "grad_y", x_in, "x");
  check_same(y_in, "y", x_in, "x");
  STD_TORCH_CHECK(grad_y_in.dim() == 1 && grad_y_in.size(0) == x_in.size(0) &&
                      same_shape(y_in, grad_y_in),
                  "demo_ext.row_norm: grad_y and y must have shape [", x_in.size(0), "]");
  const torch::stable::accelerator::DeviceGuard guard(x_in.get_device_index());
  const Tensor grad_y = torch::stable::contiguous(grad_y_in);
  const Tensor x = torch::stable::contiguous(x_in);
  const Tensor y = torch::stable::contiguous(y_in);
  Tensor grad_x = torch::stable::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) {
    return grad_x;
  }
  const cudaStream_t stream = current_stream(x.get_device_index());
  DEMO_EXT_DISPATCH_FLOATING(x.scalar_type(), "row_norm_backward", [&] {
    row_norm_backward_kernel<scalar_t><<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(
        grad_y.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(), y.const_data_ptr<scalar_t>(),
        grad_x.mutable_data_ptr<scalar_t>(), n, x.size(1));
  });
  STD_CUDA_KERNEL_LAUNCH_CHECK();
  return grad_x;
}

}  // namespace demo_ext::stable
