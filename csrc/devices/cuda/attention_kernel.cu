// Attention on cuda, flash style: a block takes 32 query rows of one (batch,
// head), walks the keys in tiles of 32 staged in shared memory, and keeps a
// running max and sum per row (online softmax), so the (Lq, Lk) score matrix
// never exists. Everything accumulates in float32 whatever the input dtype.
//
// Within a block each warp owns 8 query rows. For a row, lane j scores key j
// of the tile; the warp reduces max and sum by shuffles; then every lane adds
// the tile's weighted values into its own slice of the output row (dims
// lane, lane + 32, ...). Scores are kept in log2 units (q pre-scaled by
// scale * log2(e)) so each exponential is one exp2f.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "devices/cuda/attention_kernel.h"
#include "devices/cuda/cuda_check.h"

namespace aotishim {
namespace cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 8;
constexpr int kBlockRows = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kTileKeys = 32;                       // keys per tile: one per lane
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ float load(float v) { return v; }
__device__ __forceinline__ float load(__half v) { return __half2float(v); }
__device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T store(float v);
template <> __device__ __forceinline__ float store<float>(float v) { return v; }
template <> __device__ __forceinline__ __half store<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// VPL: output dims per lane (Dv <= 32 * VPL).
template <typename T, int VPL>
__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(AttentionLaunch p) {
  extern __shared__ float smem[];
  const int D = static_cast<int>(p.D), Dv = static_cast<int>(p.Dv);
  constexpr int kDvPad = 32 * VPL;
  float* qs = smem;                        // [kBlockRows][D], pre-scaled
  float* ks = qs + kBlockRows * D;         // [kTileKeys][D + 1] (padded: no bank conflicts)
  float* vs = ks + kTileKeys * (D + 1);    // [kTileKeys][kDvPad], zero beyond Dv

  const int64_t b = blockIdx.x / p.H, h = blockIdx.x % p.H;
  const int64_t g = h / (p.H / p.Hkv);
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kBlockRows;
  const T* q = static_cast<const T*>(p.q) + b * p.q_st[0] + h * p.q_st[1];
  const T* k = static_cast<const T*>(p.k) + b * p.k_st[0] + g * p.k_st[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_st[0] + g * p.v_st[1];
  const T* bias = p.bias == nullptr
                      ? nullptr
                      : static_cast<const T*>(p.bias) + b * p.bias_st[0] + h * p.bias_st[1];
  const float qscale = p.scale * kLog2e;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  for (int idx = threadIdx.x; idx < kBlockRows * D; idx += blockDim.x) {
    const int r = idx / D, d = idx % D;
    const int64_t i = row0 + r;
    qs[idx] = i < p.Lq ? load(q[i * p.q_st[2] + d * p.q_st[3]]) * qscale : 0.0f;
  }

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][VPL];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
#pragma unroll
    for (int c = 0; c < VPL; ++c) acc[rr][c] = 0.0f;
  }

  // Keys past the block's last row are all masked under causal masking.
  const int64_t row_end = min(row0 + kBlockRows, p.Lq);
  int64_t key_end = row0 >= p.Lq ? 0 : p.Lk;
  if (p.causal) key_end = min(key_end, row_end);

  for (int64_t kt = 0; kt < key_end; kt += kTileKeys) {
    __syncthreads();  // the previous tile is consumed (and q is staged)
    for (int idx = threadIdx.x; idx < kTileKeys * D; idx += blockDim.x) {
      const int j = idx / D, d = idx % D;
      const int64_t kj = kt + j;
      ks[j * (D + 1) + d] = kj < p.Lk ? load(k[kj * p.k_st[2] + d * p.k_st[3]]) : 0.0f;
    }
    for (int idx = threadIdx.x; idx < kTileKeys * kDvPad; idx += blockDim.x) {
      const int j = idx / kDvPad, d = idx % kDvPad;
      const int64_t kj = kt + j;
      vs[idx] = kj < p.Lk && d < Dv ? load(v[kj * p.v_st[2] + d * p.v_st[3]]) : 0.0f;
    }
    __syncthreads();

    const int64_t j = kt + lane;
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int64_t i = row0 + r;
      if (i >= p.Lq) break;  // uniform across the warp
      float s = -INFINITY;
      if (j < p.Lk && (!p.causal || j <= i)) {
        const float* qr = qs + r * D;
        const float* kr = ks + lane * (D + 1);
        float dot = 0.0f;
        for (int d = 0; d < D; ++d) dot = fmaf(qr[d], kr[d], dot);
        s = dot;
        if (bias != nullptr) s += load(bias[i * p.bias_st[2] + j * p.bias_st[3]]) * kLog2e;
      }
      const float m_new = fmaxf(m[rr], warp_max(s));
      if (m_new == -INFINITY) continue;  // every key so far masked: nothing to add
      const float alpha = exp2f(m[rr] - m_new);
      const float pj = s == -INFINITY ? 0.0f : exp2f(s - m_new);
      l[rr] = l[rr] * alpha + warp_sum(pj);
#pragma unroll
      for (int c = 0; c < VPL; ++c) acc[rr][c] *= alpha;
      for (int jj = 0; jj < kTileKeys; ++jj) {
        const float pk = __shfl_sync(0xffffffffu, pj, jj);
        const float* vr = vs + jj * kDvPad + lane;
#pragma unroll
        for (int c = 0; c < VPL; ++c) acc[rr][c] = fmaf(pk, vr[32 * c], acc[rr][c]);
      }
      m[rr] = m_new;
    }
  }

  T* out = static_cast<T*>(p.out) + b * p.out_st[0] + h * p.out_st[1];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = row0 + warp * kRowsPerWarp + rr;
    if (i < p.Lq) {
      // A row whose keys are all masked has no softmax: output 0, lse -inf.
      const float inv = l[rr] > 0.0f ? 1.0f / l[rr] : 0.0f;
#pragma unroll
      for (int c = 0; c < VPL; ++c) {
        const int d = lane + 32 * c;
        if (d < Dv) out[i * p.out_st[2] + d * p.out_st[3]] = store<T>(acc[rr][c] * inv);
      }
      if (p.lse != nullptr && lane == 0)
        p.lse[b * p.lse_st[0] + h * p.lse_st[1] + i * p.lse_st[2]] =
            l[rr] > 0.0f ? (m[rr] + log2f(l[rr])) * kLn2 : -INFINITY;
    } else if (p.lse != nullptr && lane == 0 && i < p.lse_rows) {
      p.lse[b * p.lse_st[0] + h * p.lse_st[1] + i * p.lse_st[2]] = INFINITY;
    }
  }
}

template <typename T, int VPL>
void launch_typed(const AttentionLaunch& p, cudaStream_t stream) {
  const size_t floats = static_cast<size_t>(kBlockRows) * p.D +
                        static_cast<size_t>(kTileKeys) * (p.D + 1) +
                        static_cast<size_t>(kTileKeys) * 32 * VPL;
  const size_t smem = floats * sizeof(float);
  auto kernel = attention_kernel<T, VPL>;
  // Beyond 48 KiB a kernel must opt in (head dims above ~120).
  if (smem > 48 * 1024)
    AOTISHIM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(smem)));
  const int64_t rows = std::max(p.Lq, p.lse != nullptr ? p.lse_rows : 0);
  const int64_t row_blocks = (rows + kBlockRows - 1) / kBlockRows;
  AOTISHIM_CHECK(p.B * p.H <= INT32_MAX && row_blocks <= 65535,
                 "cuda attention: too large (batch*heads ", p.B * p.H, ", query length ", rows,
                 ")");
  dim3 grid(static_cast<unsigned>(p.B * p.H), static_cast<unsigned>(row_blocks));
  kernel<<<grid, kWarps * 32, smem, stream>>>(p);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_for_dv(const AttentionLaunch& p, cudaStream_t stream) {
  if (p.Dv <= 32) return launch_typed<T, 1>(p, stream);
  if (p.Dv <= 64) return launch_typed<T, 2>(p, stream);
  if (p.Dv <= 128) return launch_typed<T, 4>(p, stream);
  return launch_typed<T, 8>(p, stream);
}

}  // namespace

void launch_attention(const AttentionLaunch& p, cudaStream_t stream) {
  AOTISHIM_CHECK(p.D <= kAttentionMaxHeadDim && p.Dv <= kAttentionMaxHeadDim,
                 "cuda attention supports head dims up to ", kAttentionMaxHeadDim, ", got ", p.D,
                 " (query/key) and ", p.Dv, " (value)");
  const int64_t rows = std::max(p.Lq, p.lse != nullptr ? p.lse_rows : 0);
  if (p.B * p.H == 0 || rows == 0) return;
  switch (p.dtype) {
    case DType::Float32: return launch_for_dv<float>(p, stream);
    case DType::Float16: return launch_for_dv<__half>(p, stream);
    case DType::BFloat16: return launch_for_dv<__nv_bfloat16>(p, stream);
    default: break;
  }
  fail(str("cuda attention supports float32, float16 and bfloat16, not ", dtype_name(p.dtype)));
}

}  // namespace cuda
}  // namespace aotishim
