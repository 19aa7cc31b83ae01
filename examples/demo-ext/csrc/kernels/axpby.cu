// out = alpha * x + beta * y for every floating dtype, computed in the
// dtype's accumulation type (float for half and bfloat16): the ATen host
// code (checks, dispatch, launch); the device code is kernels/axpby.cuh.

#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <demo_ext/kernels/axpby.cuh>
#include <demo_ext/launch.cuh>
#include <demo_ext/ops.h>

namespace demo_ext {

at::Tensor axpby(const at::Tensor& x_in, const at::Tensor& y_in, double alpha, double beta) {
  check_cuda_tensor(x_in, "x");
  check_cuda_tensor(y_in, "y");
  check_same(x_in, "x", y_in, "y");
  TORCH_CHECK(x_in.sizes() == y_in.sizes(), "demo_ext.axpby: x has shape ", x_in.sizes(),
              " but y has ", y_in.sizes());
  const c10::cuda::OptionalCUDAGuard guard(x_in.device());
  const at::Tensor x = x_in.contiguous();
  const at::Tensor y = y_in.contiguous();
  at::Tensor out = at::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) {
    return out;
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "axpby", [&] {
    using acc_t = at::acc_type<scalar_t, /*is_cuda=*/true>;
    axpby_kernel<scalar_t, acc_t><<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), y.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(),
        static_cast<acc_t>(alpha), static_cast<acc_t>(beta), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace demo_ext
