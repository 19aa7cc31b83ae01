// The toolchain check's kernel: what a real torch CUDA extension's .cu includes and uses (ATen
// tensors, the device guard, the current stream, the dispatch macro over float, double, half and
// bfloat16), small enough to compile in seconds per architecture.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

namespace {

template <typename scalar_t>
__global__ void scale_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, float alpha,
                             int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = static_cast<scalar_t>(static_cast<float>(x[i]) * alpha);
  }
}

}  // namespace

at::Tensor cuwheel_check_scale(const at::Tensor& x, double alpha) {
  TORCH_CHECK(x.is_cuda(), "cuwheel_check_scale: x must be a CUDA tensor");
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  at::Tensor y = at::empty_like(xc);
  const int64_t n = xc.numel();
  if (n == 0) {
    return y;
  }
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, xc.scalar_type(),
                                  "cuwheel_check_scale", [&] {
    scale_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), static_cast<float>(alpha), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
