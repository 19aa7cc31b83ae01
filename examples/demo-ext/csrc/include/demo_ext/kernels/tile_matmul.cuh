// The device code of tile_matmul: d[m][8] = a[m][16] * b[16][8], half inputs,
// float accumulation and output, one block of 128 threads (a warpgroup) per
// 64 rows. Built for the arch-specific sm_90a target (cuda-archs "9.0a"),
// the block issues Hopper's warpgroup MMA: wgmma.mma_async m64n8k16 with the
// rows of a in registers and b in shared memory, read through a matrix
// descriptor. Every other image (sm_80, plain sm_90, the compute_90 PTX that
// newer GPUs JIT-compile) runs the portable loop. Both give the same sums.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

namespace demo_ext {
namespace {

constexpr int kTileRows = 64;
constexpr int kTileThreads = 128;

// Which code the launched image holds: 1 for the sm_90a (wgmma) path.
__global__ void tile_matmul_path_kernel(int* path) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *path = 1;
#else
  *path = 0;
#endif
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// A wgmma matrix descriptor for a shared-memory operand without swizzling:
// the start address, then the byte offsets between core matrices (8 rows of
// 16 bytes) along K (leading) and along N (stride), each in 16-byte units.
__device__ inline uint64_t wgmma_descriptor(const void* smem, uint32_t leading, uint32_t stride) {
  const uint64_t address = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return ((address & 0x3FFFF) >> 4) | (uint64_t((leading >> 4) & 0x3FFF) << 16) |
         (uint64_t((stride >> 4) & 0x3FFF) << 32);
}

__device__ inline uint32_t half_pair(const __half* a, int64_t m, int64_t row, int col) {
  const __half zero = __float2half(0.0f);
  const __half2 pair = row < m ? __halves2half2(a[row * 16 + col], a[row * 16 + col + 1])
                               : __halves2half2(zero, zero);
  return *reinterpret_cast<const uint32_t*>(&pair);
}
#endif

__global__ void __launch_bounds__(kTileThreads)
    tile_matmul_kernel(const __half* __restrict__ a, const __half* __restrict__ b,
                       float* __restrict__ d, int64_t m) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kTileRows;
  const int t = threadIdx.x;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // b in shared memory as two K-major core matrices (k 0-7, k 8-15), each
  // 8 rows (n) of 8 halves (k): leading offset 128 bytes, stride 256.
  __shared__ alignas(128) __half b_tile[2 * 64];
  for (int i = t; i < 128; i += kTileThreads) {
    const int core = i / 64, n = (i % 64) / 8, k = i % 8;
    b_tile[i] = b[(8 * core + k) * 8 + n];
  }
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  // The m16n8k16 fragment layout per warp: warp w holds rows 16w..16w+15.
  const int warp = t / 32, group = (t % 32) / 4, quad = t % 4;
  const int64_t r0 = base + 16 * warp + group, r1 = r0 + 8;
  const uint32_t a0 = half_pair(a, m, r0, 2 * quad), a1 = half_pair(a, m, r1, 2 * quad);
  const uint32_t a2 = half_pair(a, m, r0, 2 * quad + 8), a3 = half_pair(a, m, r1, 2 * quad + 8);
  const uint64_t b_desc = wgmma_descriptor(b_tile, 128, 256);
  float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile(
      "{\n.reg .pred zero_d;\nsetp.ne.b32 zero_d, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "%8, zero_d, 1, 1, 0;\n}\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(b_desc));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  if (r0 < m) {
    d[r0 * 8 + 2 * quad] = d0;
    d[r0 * 8 + 2 * quad + 1] = d1;
  }
  if (r1 < m) {
    d[r1 * 8 + 2 * quad] = d2;
    d[r1 * 8 + 2 * quad + 1] = d3;
  }
#else
  for (int i = t; i < kTileRows * 8; i += kTileThreads) {
    const int64_t row = base + i / 8;
    const int n = i % 8;
    if (row >= m) {
      continue;
    }
    float sum = 0.0f;
    for (int k = 0; k < 16; ++k) {
      sum += __half2float(a[row * 16 + k]) * __half2float(b[k * 8 + n]);
    }
    d[row * 8 + n] = sum;
  }
#endif
}

}  // namespace
}  // namespace demo_ext
