// What every demo kernel file shares: argument checks and the launch shape of
// a grid-stride elementwise loop.
#pragma once

#include <algorithm>
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace demo_ext {

constexpr int kThreadsPerBlock = 256;

// Enough blocks to cover n elements once, capped: the kernels loop with a
// grid stride, so a cap only changes how many elements each thread handles.
inline unsigned int elementwise_blocks(int64_t n) {
  const int64_t wanted = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(wanted, 65535)));
}

inline void check_cuda_tensor(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.is_cuda(), "demo_ext: ", name, " must be a CUDA tensor, got device ", t.device());
  TORCH_CHECK(t.is_floating_point(), "demo_ext: ", name, " must have a floating dtype, got ",
              t.scalar_type());
}

inline void check_same(const at::Tensor& a, const char* a_name, const at::Tensor& b,
                       const char* b_name) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "demo_ext: ", a_name, " and ", b_name,
              " must have the same dtype, got ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.device() == b.device(), "demo_ext: ", a_name, " and ", b_name,
              " must be on the same device, got ", a.device(), " and ", b.device());
}

}  // namespace demo_ext
