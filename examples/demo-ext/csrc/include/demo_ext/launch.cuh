// What every ATen kernel file shares: argument checks on at::Tensor. The
// block size and launch shape are the device code's (kernels/common.cuh),
// shared with the stable-ABI TUs.
#pragma once

#include <type_traits>

#include <ATen/AccumulateType.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <demo_ext/kernels/common.cuh>

namespace demo_ext {

// The kernels compute in acc_type_t, which must be what ATen would use.
static_assert(std::is_same_v<acc_type_t<at::Half>, at::acc_type<at::Half, true>>);
static_assert(std::is_same_v<acc_type_t<at::BFloat16>, at::acc_type<at::BFloat16, true>>);
static_assert(std::is_same_v<acc_type_t<float>, at::acc_type<float, true>>);
static_assert(std::is_same_v<acc_type_t<double>, at::acc_type<double, true>>);

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
