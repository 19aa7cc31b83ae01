// tile_matmul: a [m, 16] half times b [16, 8] half into [m, 8] float, on
// Hopper through the sm_90a image's warpgroup MMA (kernels/tile_matmul.cuh
// says which image runs which code). The ATen host code: checks and launch.

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <demo_ext/kernels/tile_matmul.cuh>
#include <demo_ext/launch.cuh>
#include <demo_ext/ops.h>

namespace demo_ext {

at::Tensor tile_matmul(const at::Tensor& a_in, const at::Tensor& b_in) {
  TORCH_CHECK(a_in.is_cuda() && b_in.is_cuda(), "demo_ext.tile_matmul: a and b must be CUDA "
              "tensors, got devices ", a_in.device(), " and ", b_in.device());
  TORCH_CHECK(a_in.device() == b_in.device(), "demo_ext.tile_matmul: a and b must be on the same "
              "device, got ", a_in.device(), " and ", b_in.device());
  TORCH_CHECK(a_in.scalar_type() == at::kHalf && b_in.scalar_type() == at::kHalf,
              "demo_ext.tile_matmul: a and b must be float16, got ", a_in.scalar_type(), " and ",
              b_in.scalar_type());
  TORCH_CHECK(a_in.dim() == 2 && a_in.size(1) == 16, "demo_ext.tile_matmul: a must have shape "
              "[m, 16], got ", a_in.sizes());
  TORCH_CHECK(b_in.dim() == 2 && b_in.size(0) == 16 && b_in.size(1) == 8,
              "demo_ext.tile_matmul: b must have shape [16, 8], got ", b_in.sizes());
  const c10::cuda::OptionalCUDAGuard guard(a_in.device());
  const at::Tensor a = a_in.contiguous();
  const at::Tensor b = b_in.contiguous();
  const int64_t m = a.size(0);
  at::Tensor d = at::empty({m, 8}, a.options().dtype(at::kFloat));
  if (m == 0) {
    return d;
  }
  const int64_t tiles = (m + kTileRows - 1) / kTileRows;
  TORCH_CHECK(tiles <= 2147483647, "demo_ext.tile_matmul: at most 2^31 - 1 tiles of 64 rows");
  tile_matmul_kernel<<<static_cast<unsigned int>(tiles), kTileThreads, 0,
                       at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const __half*>(a.const_data_ptr<at::Half>()),
      reinterpret_cast<const __half*>(b.const_data_ptr<at::Half>()),
      d.mutable_data_ptr<float>(), m);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return d;
}

int64_t tile_matmul_path() {
  at::Tensor path = at::empty({1}, at::TensorOptions().device(at::kCUDA).dtype(at::kInt));
  tile_matmul_path_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(
      path.mutable_data_ptr<int>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return path.item<int>();
}

}  // namespace demo_ext
