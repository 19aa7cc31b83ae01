// axpby on torch's stable ABI: out = alpha * x + beta * y. The host side
// (checks, dispatch, launch) of csrc/kernels/axpby.cu with stable tensors;
// the device code is the same header, kernels/axpby.cuh.

#include <demo_ext/stable/launch.h>

#include <demo_ext/kernels/axpby.cuh>
#include <demo_ext/stable/ops.h>

namespace demo_ext::stable {

Tensor axpby(const Tensor& x_in, const Tensor& y_in, double alpha, double beta) {
  check_cuda_tensor(x_in, "x");
  check_cuda_tensor(y_in, "y");
  check_same(x_in, "x", y_in, "y");
  STD_TORCH_CHECK(same_shape(x_in, y_in), "demo_ext.axpby: x has shape ", shape(x_in),
                  " but y has ", shape(y_in));
  const torch::stable::accelerator::DeviceGuard guard(x_in.get_device_index());
  const Tensor x = torch::stable::contiguous(x_in);
  const Tensor y = torch::stable::contiguous(y_in);
  Tensor out = torch::stable::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) {
    return out;
  }
  const cudaStream_t stream = current_stream(x.get_device_index());
  DEMO_EXT_DISPATCH_FLOATING(x.scalar_type(), "axpby", [&] {
    using acc_t = acc_type_t<scalar_t>;
    axpby_kernel<scalar_t, acc_t><<<elementwise_blocks(n), kThreadsPerBlock, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), y.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(),
        static_cast<acc_t>(alpha), static_cast<acc_t>(beta), n);
  });
  STD_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace demo_ext::stable
