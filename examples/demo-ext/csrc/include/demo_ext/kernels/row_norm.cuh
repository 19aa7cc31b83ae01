// The device code of the per-row Euclidean norm and its gradient: a
// block-per-row reduction (each thread sums the squares of a strided slice of
// its row, warps combine with shuffles, the first warp combines the warps'
// sums) and an elementwise backward. Included by the ATen TU
// (csrc/kernels/row_norm.cu) and the stable-ABI TU (csrc/stable/row_norm.cu);
// the anonymous namespace gives each TU its own copy.
#pragma once

#include <cstdint>

#include <demo_ext/kernels/common.cuh>

namespace demo_ext {
namespace {

constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = kThreadsPerBlock / kWarpSize;

template <typename acc_t>
__device__ __forceinline__ acc_t warp_sum(acc_t v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;
}

template <typename scalar_t>
__global__ void row_norm_forward_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y,
                                        int64_t width) {
  using acc_t = acc_type_t<scalar_t>;
  __shared__ acc_t partial[kWarpsPerBlock];
  const scalar_t* row = x + static_cast<int64_t>(blockIdx.x) * width;
  acc_t sum = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const acc_t v = static_cast<acc_t>(row[j]);
    sum += v * v;
  }
  sum = warp_sum(sum);
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  if (lane == 0) {
    partial[warp] = sum;
  }
  __syncthreads();
  if (warp == 0) {
    sum = lane < kWarpsPerBlock ? partial[lane] : acc_t(0);
    sum = warp_sum(sum);
    if (lane == 0) {
      y[blockIdx.x] = static_cast<scalar_t>(sqrt(sum));
    }
  }
}

template <typename scalar_t>
__global__ void row_norm_backward_kernel(const scalar_t* __restrict__ grad_y,
                                         const scalar_t* __restrict__ x,
                                         const scalar_t* __restrict__ y,
                                         scalar_t* __restrict__ grad_x, int64_t n, int64_t width) {
  using acc_t = acc_type_t<scalar_t>;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int64_t r = i / width;
    const acc_t norm = static_cast<acc_t>(y[r]);
    // The norm is not differentiable at 0; use the subgradient 0, as
    // torch.linalg.vector_norm does.
    grad_x[i] = norm == acc_t(0)
                    ? scalar_t(0)
                    : static_cast<scalar_t>(static_cast<acc_t>(grad_y[r]) *
                                            static_cast<acc_t>(x[i]) / norm);
  }
}

}  // namespace
}  // namespace demo_ext
