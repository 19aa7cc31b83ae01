// The device code of the fused bias + GELU (tanh approximation), forward and
// backward. Included by the ATen TU (csrc/kernels/bias_gelu.cu) and the
// stable-ABI TU (csrc/stable/bias_gelu.cu); the anonymous namespace gives
// each TU its own copy.
#pragma once

#include <cstdint>

#include <demo_ext/kernels/common.cuh>

namespace demo_ext {
namespace {

// sqrt(2 / pi) and the cubic coefficient of the tanh approximation.
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

template <typename acc_t>
__device__ __forceinline__ acc_t gelu(acc_t v) {
  const acc_t u = acc_t(kSqrt2OverPi) * (v + acc_t(kCubic) * v * v * v);
  return acc_t(0.5) * v * (acc_t(1) + tanh(u));
}

template <typename acc_t>
__device__ __forceinline__ acc_t gelu_derivative(acc_t v) {
  const acc_t u = acc_t(kSqrt2OverPi) * (v + acc_t(kCubic) * v * v * v);
  const acc_t t = tanh(u);
  const acc_t du = acc_t(kSqrt2OverPi) * (acc_t(1) + acc_t(3 * kCubic) * v * v);
  return acc_t(0.5) * (acc_t(1) + t) + acc_t(0.5) * v * (acc_t(1) - t * t) * du;
}

template <typename scalar_t>
__global__ void bias_gelu_forward_kernel(const scalar_t* __restrict__ x,
                                         const scalar_t* __restrict__ bias,
                                         scalar_t* __restrict__ y, int64_t n, int64_t width) {
  using acc_t = acc_type_t<scalar_t>;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const acc_t v = static_cast<acc_t>(x[i]) + static_cast<acc_t>(bias[i % width]);
    y[i] = static_cast<scalar_t>(gelu(v));
  }
}

template <typename scalar_t>
__global__ void bias_gelu_backward_kernel(const scalar_t* __restrict__ grad_y,
                                          const scalar_t* __restrict__ x,
                                          const scalar_t* __restrict__ bias,
                                          scalar_t* __restrict__ grad_x, int64_t n,
                                          int64_t width) {
  using acc_t = acc_type_t<scalar_t>;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const acc_t v = static_cast<acc_t>(x[i]) + static_cast<acc_t>(bias[i % width]);
    grad_x[i] = static_cast<scalar_t>(static_cast<acc_t>(grad_y[i]) * gelu_derivative(v));
  }
}

}  // namespace
}  // namespace demo_ext
