// What every stable-ABI host file (csrc/stable/*.cu) shares: argument checks
// on torch::stable::Tensor, the device guard, the current CUDA stream and
// the launch check, all through torch's stable C shim and header-only API
// (no ATen, no c10 symbols). Include it first: it turns on the shim's CUDA
// declarations.
#pragma once

#if !defined(TORCH_STABLE_ONLY) || !defined(TORCH_TARGET_VERSION)
#error "demo_ext's stable-ABI sources need -DTORCH_STABLE_ONLY and -DTORCH_TARGET_VERSION=0xMMmm000000000000 (the oldest torch they serve)"
#endif

// torch's C shim declares its CUDA functions (the current stream, the CUDA
// error check) only under USE_CUDA, so it must be on before the shim's first
// inclusion.
#ifdef AOTI_TORCH_SHIM
#error "include <demo_ext/stable/launch.h> before any torch header"
#endif
#ifndef USE_CUDA
#define USE_CUDA
#endif

#include <cstdint>
#include <sstream>
#include <string>

#include <cuda_runtime.h>

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/macros.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/Dispatch.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>
#include <torch/headeronly/util/shim_utils.h>

#include <demo_ext/kernels/common.cuh>

// ATen's AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, ...) with the
// header-only switch: the body sees `scalar_t`. (THO_DISPATCH_V2 would split
// a body at the commas of a kernel launch's <<<...>>>.)
#define DEMO_EXT_DISPATCH_FLOATING(TYPE, NAME, ...)                               \
  THO_DISPATCH_SWITCH(                                                           \
      TYPE, NAME,                                                                \
      THO_DISPATCH_CASE(torch::headeronly::ScalarType::Double, __VA_ARGS__)      \
      THO_DISPATCH_CASE(torch::headeronly::ScalarType::Float, __VA_ARGS__)       \
      THO_DISPATCH_CASE(torch::headeronly::ScalarType::Half, __VA_ARGS__)        \
      THO_DISPATCH_CASE(torch::headeronly::ScalarType::BFloat16, __VA_ARGS__))

namespace demo_ext::stable {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

// `[2, 3]`, for messages (the stable size list has no operator<<).
inline std::string shape(const Tensor& t) {
  std::ostringstream out;
  out << '[';
  for (int64_t d = 0; d < t.dim(); ++d) {
    out << (d == 0 ? "" : ", ") << t.size(d);
  }
  out << ']';
  return out.str();
}

inline void check_cuda_tensor(const Tensor& t, const char* name) {
  STD_TORCH_CHECK(t.is_cuda(), "demo_ext: ", name, " must be a CUDA tensor");
  const ScalarType st = t.scalar_type();
  STD_TORCH_CHECK(st == ScalarType::Float || st == ScalarType::Double || st == ScalarType::Half ||
                      st == ScalarType::BFloat16,
                  "demo_ext: ", name, " must be float32, float64, float16 or bfloat16, got ",
                  torch::headeronly::toString(st));
}

inline void check_same(const Tensor& a, const char* a_name, const Tensor& b, const char* b_name) {
  STD_TORCH_CHECK(a.scalar_type() == b.scalar_type(), "demo_ext: ", a_name, " and ", b_name,
                  " must have the same dtype, got ", torch::headeronly::toString(a.scalar_type()),
                  " and ", torch::headeronly::toString(b.scalar_type()));
  STD_TORCH_CHECK(a.get_device_index() == b.get_device_index(), "demo_ext: ", a_name, " and ",
                  b_name, " must be on the same device, got cuda:", a.get_device_index(),
                  " and cuda:", b.get_device_index());
}

inline bool same_shape(const Tensor& a, const Tensor& b) {
  return a.sizes().equals(b.sizes());
}

// The stream torch runs work on for the device, as ATen's getCurrentCUDAStream.
inline cudaStream_t current_stream(int32_t device_index) {
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device_index, &stream));
  return static_cast<cudaStream_t>(stream);
}

}  // namespace demo_ext::stable
