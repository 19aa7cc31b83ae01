// Per-row Euclidean norm of a 2-D tensor, a block-per-row reduction: each
// thread sums the squares of a strided slice of its row, warps combine with
// shuffles, and the first warp combines the warps' partial sums. This is the
// ATen host code; the device code is kernels/row_norm.cuh.

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <demo_ext/kernels/row_norm.cuh>
#include <demo_ext/launch.cuh>
#include <demo_ext/ops.h>

namespace demo_ext {
namespace {

void check_matrix(const at::Tensor& x) {
  check_cuda_tensor(x, "x");
  TORCH_CHECK(x.dim() == 2, "demo_ext.row_norm: x must be 2-D, got shape ", x.sizes());
  TORCH_CHECK(x.size(0) <= 2147483647, "demo_ext.row_norm: at most 2^31 - 1 rows, got ", x.size(0));
}

}  // namespace

at::Tensor row_norm_forward(const at::Tensor& x_in) {
  check_matrix(x_in);
  const c10::cuda::OptionalCUDAGuard guard(x_in.device());
  const at::Tensor x = x_in.contiguous();
  const int64_t rows = x.size(0);
  at::Tensor y = at::empty({rows}, x.options());
  if (rows == 0) {
    return y;
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "row_norm_forward", [&] {
    row_norm_forward_kernel<scalar_t>
        <<<static_cast<unsigned int>(rows), kThreadsPerBlock, 0, stream>>>(
            x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), x.size(1));
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

at::Tensor row_norm_backward(const at::Tensor& grad_y_in, const at::Tensor& x_in,
                             const at::Tensor& y_in) {
  check_matrix(x_in);
  check_cuda_tensor(grad_y_in, "grad_y");
  check_cuda_tensor(y_in, "y");
  check_same(grad_y_in, "grad_y", x_in, "x");
  check_same(y_in, "y", x_in, "x");
  TORCH_CHECK(grad_y_in.dim() == 1 && grad_y_in.size(0) == x_in.size(0) && y_in.sizes() == grad_y_in.sizes(),
              "demo_ext.row_norm: grad_y and y must have shape [", x_in.size(0), "]");
  const c10::cuda::OptionalCUDAGuard guard(x_in.device());
  const at::Tensor grad_y = grad_y_in.contiguous();
  const at::Tensor x = x_in.contiguous();
  const at::Tensor y = y_in.contiguous();
  at::Tensor grad_x = at::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) {
    return grad_x;
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "row_norm_backward", [&] {
    row_norm_backward_kernel<scalar_t><<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(
        grad_y.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(), y.const_data_ptr<scalar_t>(),
        grad_x.mutable_data_ptr<scalar_t>(), n, x.size(1));
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return grad_x;
}

}  // namespace demo_ext
