// The device code of axpby: out = alpha * x + beta * y, computed in acc_t.
// Included by the ATen TU (csrc/kernels/axpby.cu) and the stable-ABI TU
// (csrc/stable/axpby.cu); the anonymous namespace gives each TU its own copy.
#pragma once

#include <cstdint>

namespace demo_ext {
namespace {

template <typename scalar_t, typename acc_t>
__global__ void axpby_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ y,
                             scalar_t* __restrict__ out, acc_t alpha, acc_t beta, int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = static_cast<scalar_t>(alpha * static_cast<acc_t>(x[i]) + beta * static_cast<acc_t>(y[i]));
  }
}

}  // namespace
}  // namespace demo_ext
