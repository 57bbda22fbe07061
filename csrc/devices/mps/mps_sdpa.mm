// Scaled dot-product attention on mps: a Metal compute kernel with one
// threadgroup per (batch, head, block of query rows) and one SIMD group per
// query row. The row's lanes split the head dims: each key's score is a
// SIMD-group sum, folded into a running maximum and sum (online softmax,
// float32) that rescale the output accumulated so far, so memory does not
// grow with the sequence. Causal, bool or additive masks (any broadcast
// strides), scale, grouped heads; views as they lie. When the caller asks for
// the softmax weights, a second pass over the keys writes them against the
// row's final logsumexp.
//
// Why our own kernel rather than MPSGraph's attention: MPSGraph takes dense
// tensors (strided views and broadcast masks would need packing copies), and
// its headers (MetalPerformanceShadersGraph) are not in the SDK kit this code
// is compile-checked against on Linux, so code using it could not be checked
// outside macOS.
#import "devices/mps/mps_device.h"

#include <cstdint>
#include <limits>

#include "core/error.h"
#include "devices/mps/mps_kernels.h"
#include "ops/sdpa.h"

#if !__has_feature(objc_arc)
#error "the mps device is built with ARC (-fobjc-arc)"
#endif

namespace aotishim {
namespace {

constexpr int64_t kRowsPerGroup = 8;   // SIMD groups (query rows) per threadgroup
constexpr int64_t kSimdWidth = 32;     // Apple GPUs' SIMD width, checked on the pipeline
constexpr int64_t kMaxHeadDim = 512;   // kSimdWidth * the kernel's per-lane registers (16)

// Mirrored field by field in the Metal source below; strides in elements.
struct SdpaParams {
  int64_t b, h, hkv, l, s, e, ev;
  int64_t q_strides[4], k_strides[4], v_strides[4], out_strides[4];
  int64_t mask_strides[4], probs_strides[4];
  int64_t lse_strides[3];
  float scale;
  int32_t causal, has_mask, mask_dtype, has_probs, pad;
};
static_assert(sizeof(SdpaParams) == 7 * 8 + 6 * 4 * 8 + 3 * 8 + 24, "SdpaParams layout");

const char* kernel_name(DType t) {
  switch (t) {
    case DType::Float32: return "aotishim_sdpa_float32";
    case DType::Float16: return "aotishim_sdpa_float16";
    case DType::BFloat16: return "aotishim_sdpa_bfloat16";
    default:
      fail(str("mps: attention supports float32, float16 and bfloat16, not ", dtype_name(t),
               " (Metal has no float64)"));
  }
}

void mps_sdpa(const SdpaArgs& a) {
  const char* name = kernel_name(a.q.dtype);
  MpsDevice& dev = static_cast<MpsDevice&>(a.q.device());
  SdpaParams p{};
  p.b = a.q.sizes[0];
  p.h = a.q.sizes[1];
  p.l = a.q.sizes[2];
  p.e = a.q.sizes[3];
  p.hkv = a.k.sizes[1];
  p.s = a.k.sizes[2];
  p.ev = a.v.sizes[3];
  AOTISHIM_CHECK(p.e <= kMaxHeadDim && p.ev <= kMaxHeadDim, "mps: attention supports head dims up to ",
                 kMaxHeadDim, ", got query ", shape_string(a.q.sizes), " and value ",
                 shape_string(a.v.sizes));
  AOTISHIM_CHECK(!a.has_mask || a.mask.dtype != DType::Float64,
                 "mps: a float64 attn_mask is not supported (Metal has no float64)");
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  AOTISHIM_CHECK(p.b <= kMax && p.h <= kMax, "mps: attention of ", p.b, " x ", p.h,
                 " heads is too large for one dispatch");
  for (int i = 0; i < 4; ++i) {
    p.q_strides[i] = a.q.strides[i];
    p.k_strides[i] = a.k.strides[i];
    p.v_strides[i] = a.v.strides[i];
    p.out_strides[i] = a.out.strides[i];
    p.mask_strides[i] = a.has_mask ? a.mask.strides[i] : 0;
    p.probs_strides[i] = a.has_probs ? a.probs.strides[i] : 0;
  }
  for (int i = 0; i < 3; ++i) p.lse_strides[i] = a.lse.strides[i];
  p.scale = static_cast<float>(a.scale);
  p.causal = a.causal ? 1 : 0;
  p.has_mask = a.has_mask ? 1 : 0;
  p.mask_dtype = a.has_mask ? static_cast<int32_t>(a.mask.dtype) : 0;
  p.has_probs = a.has_probs ? 1 : 0;

  std::vector<MpsDevice::BufferUse> buffers = {
      {dev.bind(a.out, "attention output"), true},
      {dev.bind(a.lse, "attention logsumexp"), true},
      {a.has_probs ? dev.bind(a.probs, "attention weights") : dev.scratch(), a.has_probs},
      {dev.bind(a.q, "query"), false},
      {dev.bind(a.k, "key"), false},
      {dev.bind(a.v, "value"), false},
      {a.has_mask ? dev.bind(a.mask, "attn_mask") : dev.scratch(), false},
  };
  dev.encode_kernel(
      name, buffers, &p, sizeof(p),
      [&](id<MTLComputeCommandEncoder> encoder, id<MTLComputePipelineState> pso) {
        // The kernel reduces a score across one SIMD group of kSimdWidth lanes.
        AOTISHIM_CHECK([pso threadExecutionWidth] == static_cast<NSUInteger>(kSimdWidth) &&
                           [pso maxTotalThreadsPerThreadgroup] >=
                               static_cast<NSUInteger>(kSimdWidth * kRowsPerGroup),
                       "mps: the attention kernel needs SIMD groups of ", kSimdWidth,
                       " threads and ", kSimdWidth * kRowsPerGroup,
                       " threads per threadgroup; this GPU gives ", [pso threadExecutionWidth],
                       " and ", [pso maxTotalThreadsPerThreadgroup]);
        const NSUInteger blocks =
            static_cast<NSUInteger>((p.l + kRowsPerGroup - 1) / kRowsPerGroup);
        [encoder dispatchThreadgroups:MTLSizeMake(blocks, static_cast<NSUInteger>(p.h),
                                                  static_cast<NSUInteger>(p.b))
                threadsPerThreadgroup:MTLSizeMake(kSimdWidth, kRowsPerGroup, 1)];
      });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::sdpa, DeviceType::MPS, mps_sdpa);

namespace mps {

// Uses bf16_t, load_value, store_value, load_float and dtype_size from
// kernel_source().
const char* sdpa_kernel_source() {
  return R"METAL(
struct SdpaParams {
  long b;
  long h;
  long hkv;
  long l;
  long s;
  long e;
  long ev;
  long q_strides[4];
  long k_strides[4];
  long v_strides[4];
  long out_strides[4];
  long mask_strides[4];
  long probs_strides[4];
  long lse_strides[3];
  float scale;
  int causal;
  int has_mask;
  int mask_dtype;
  int has_probs;
  int pad;
};

#define SDPA_ROWS 8    // query rows (SIMD groups) per threadgroup
#define SDPA_LANES 32  // lanes per SIMD group
#define SDPA_PER_LANE 16  // head dims per lane: up to 512

// Score of key j for query row i, the same on every lane of the SIMD group
// (every lane must call it: simd_sum); -INFINITY where masked.
template <typename T>
inline float sdpa_score(thread const float* qv, device const T* k_row, long j, long i, long b,
                        long h, device const uchar* mask, constant SdpaParams& p, uint lane) {
  float dot = 0.0f;
  for (int t = 0; t < SDPA_PER_LANE; ++t) {
    const long e = long(lane) + long(t) * SDPA_LANES;
    if (e < p.e) dot += qv[t] * load_value(k_row + j * p.k_strides[2] + e * p.k_strides[3]);
  }
  float score = simd_sum(dot) * p.scale;
  if (p.causal != 0 && j > i) return -INFINITY;
  if (p.has_mask != 0) {
    const long at = b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2] +
                    j * p.mask_strides[3];
    const float m = load_float(mask + at * dtype_size(p.mask_dtype), p.mask_dtype);
    if (p.mask_dtype == DT_BOOL) {
      if (m == 0.0f) return -INFINITY;
    } else {
      score += m;
    }
  }
  return score;
}

template <typename T>
[[kernel]] void aotishim_sdpa(device T* out [[buffer(0)]],
                              device float* lse [[buffer(1)]],
                              device T* probs [[buffer(2)]],
                              device const T* q [[buffer(3)]],
                              device const T* k [[buffer(4)]],
                              device const T* v [[buffer(5)]],
                              device const uchar* mask [[buffer(6)]],
                              constant SdpaParams& p [[buffer(7)]],
                              uint3 group [[threadgroup_position_in_grid]],
                              uint lane [[thread_index_in_simdgroup]],
                              uint row [[simdgroup_index_in_threadgroup]]) {
  const long i = long(group.x) * SDPA_ROWS + long(row);
  const long h = long(group.y);
  const long b = long(group.z);
  if (i >= p.l) return;  // the whole SIMD group leaves together
  const long hk = h / (p.h / p.hkv);
  device const T* q_row = q + b * p.q_strides[0] + h * p.q_strides[1] + i * p.q_strides[2];
  device const T* k_head = k + b * p.k_strides[0] + hk * p.k_strides[1];
  device const T* v_head = v + b * p.v_strides[0] + hk * p.v_strides[1];
  float qv[SDPA_PER_LANE];
  float acc[SDPA_PER_LANE];
  for (int t = 0; t < SDPA_PER_LANE; ++t) {
    const long e = long(lane) + long(t) * SDPA_LANES;
    qv[t] = e < p.e ? load_value(q_row + e * p.q_strides[3]) : 0.0f;
    acc[t] = 0.0f;
  }
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  const long s_end = (p.causal != 0 && i + 1 < p.s) ? i + 1 : p.s;
  for (long j = 0; j < s_end; ++j) {
    const float score = sdpa_score(qv, k_head, j, i, b, h, mask, p, lane);
    if (score == -INFINITY) continue;  // the same on every lane
    const float new_max = max(running_max, score);
    const float correction = exp(running_max - new_max);  // 0 while nothing was kept
    const float weight = exp(score - new_max);
    running_sum = running_sum * correction + weight;
    running_max = new_max;
    device const T* v_row = v_head + j * p.v_strides[2];
    for (int t = 0; t < SDPA_PER_LANE; ++t) {
      const long e = long(lane) + long(t) * SDPA_LANES;
      if (e < p.ev) acc[t] = acc[t] * correction + weight * load_value(v_row + e * p.v_strides[3]);
    }
  }
  // A row with every key masked: zeros, logsumexp -inf (as the cpu kernel).
  const float inv = running_sum > 0.0f ? 1.0f / running_sum : 0.0f;
  device T* out_row = out + b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2];
  for (int t = 0; t < SDPA_PER_LANE; ++t) {
    const long e = long(lane) + long(t) * SDPA_LANES;
    if (e < p.ev) store_value(out_row + e * p.out_strides[3], acc[t] * inv);
  }
  const float row_lse = running_sum > 0.0f ? running_max + log(running_sum) : -INFINITY;
  if (lane == 0) lse[b * p.lse_strides[0] + h * p.lse_strides[1] + i * p.lse_strides[2]] = row_lse;
  if (p.has_probs == 0) return;
  device T* p_row = probs + b * p.probs_strides[0] + h * p.probs_strides[1] +
                    i * p.probs_strides[2];
  for (long j = 0; j < p.s; ++j) {
    const float score = sdpa_score(qv, k_head, j, i, b, h, mask, p, lane);
    const float weight = (score == -INFINITY || row_lse == -INFINITY) ? 0.0f : exp(score - row_lse);
    if (lane == 0) store_value(p_row + j * p.probs_strides[3], weight);
  }
}

#define AOTISHIM_SDPA(NAME, T)                                                          \
  template [[host_name(NAME)]] [[kernel]] void aotishim_sdpa<T>(                         \
      device T* out [[buffer(0)]], device float* lse [[buffer(1)]],                     \
      device T* probs [[buffer(2)]], device const T* q [[buffer(3)]],                   \
      device const T* k [[buffer(4)]], device const T* v [[buffer(5)]],                 \
      device const uchar* mask [[buffer(6)]], constant SdpaParams& p [[buffer(7)]],     \
      uint3 group [[threadgroup_position_in_grid]],                                     \
      uint lane [[thread_index_in_simdgroup]],                                          \
      uint row [[simdgroup_index_in_threadgroup]]);

AOTISHIM_SDPA("aotishim_sdpa_float32", float)
AOTISHIM_SDPA("aotishim_sdpa_float16", half)
AOTISHIM_SDPA("aotishim_sdpa_bfloat16", bf16_t)
)METAL";
}

}  // namespace mps
}  // namespace aotishim
