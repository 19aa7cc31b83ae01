// What every demo kernel shares, for both host flavours (the ATen TUs in
// csrc/kernels/ and the stable-ABI TUs in csrc/stable/): the block size, the
// launch shape of a grid-stride loop, and the accumulation type of a dtype.
// Only torch/headeronly types where torch has them (2.8 on), so a
// TORCH_STABLE_ONLY TU may include it; c10's for older torch (2.7), whose
// ATen kernels use the same types under that name.
#pragma once

#include <algorithm>
#include <cstdint>

#if __has_include(<torch/headeronly/util/BFloat16.h>)
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>
namespace demo_ext {
using Half = torch::headeronly::Half;
using BFloat16 = torch::headeronly::BFloat16;
}  // namespace demo_ext
#else
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
namespace demo_ext {
using Half = c10::Half;
using BFloat16 = c10::BFloat16;
}  // namespace demo_ext
#endif

namespace demo_ext {

constexpr int kThreadsPerBlock = 256;

// Enough blocks to cover n elements once, capped: the kernels loop with a
// grid stride, so a cap only changes how many elements each thread handles.
inline unsigned int elementwise_blocks(int64_t n) {
  const int64_t wanted = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(wanted, 65535)));
}

// The type a kernel computes in: float for the 16-bit floats, the dtype
// itself otherwise. The same as ATen's at::acc_type<T, /*is_cuda=*/true> for
// the dtypes the demo dispatches over (launch.cuh asserts it).
template <typename scalar_t>
struct acc_type {
  using type = scalar_t;
};
template <>
struct acc_type<Half> {
  using type = float;
};
template <>
struct acc_type<BFloat16> {
  using type = float;
};
template <typename scalar_t>
using acc_type_t = typename acc_type<scalar_t>::type;

}  // namespace demo_ext
