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
#include "devices/mps/mps_device.h"

#include <cstdint>
#include <limits>

#include "core/error.h"
#include "devices/mps/mps_kernels.h"
#include "ops/sdpa.h"

namespace aotishim {
namespace {

// The kernel's shape (kernels/params.h, shared with the shader).
constexpr int64_t kRowsPerGroup = AOTISHIM_SDPA_ROWS;  // SIMD groups (query rows) per threadgroup
constexpr int64_t kSimdWidth = AOTISHIM_SDPA_LANES;    // Apple GPUs' SIMD width, checked on the pipeline
constexpr int64_t kMaxHeadDim = AOTISHIM_SDPA_LANES * AOTISHIM_SDPA_PER_LANE;
using mps::SdpaParams;

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

  dev.encode([&](MpsDevice::Encoder& e) {
    e.set_kernel(name);
    const metal::Pipeline& pso = e.pipeline();
    // The kernel reduces a score across one SIMD group of kSimdWidth lanes.
    AOTISHIM_CHECK(pso.execution_width() == static_cast<uint64_t>(kSimdWidth) &&
                       pso.max_threads_per_group() >= static_cast<uint64_t>(kSimdWidth * kRowsPerGroup),
                   "mps: the attention kernel needs SIMD groups of ", kSimdWidth, " threads and ",
                   kSimdWidth * kRowsPerGroup, " threads per threadgroup; this GPU gives ",
                   pso.execution_width(), " and ", pso.max_threads_per_group());
    e.write(0, a.out, "attention output");
    e.write(1, a.lse, "attention logsumexp");
    if (a.has_probs) e.write(2, a.probs, "attention weights");
    else e.scratch(2);
    e.read(3, a.q, "query");
    e.read(4, a.k, "key");
    e.read(5, a.v, "value");
    if (a.has_mask) e.read(6, a.mask, "attn_mask");
    else e.scratch(6);
    e.bytes(7, &p, sizeof(p));
    const uint64_t blocks = static_cast<uint64_t>((p.l + kRowsPerGroup - 1) / kRowsPerGroup);
    e.dispatch_threadgroups({blocks, static_cast<uint64_t>(p.h), static_cast<uint64_t>(p.b)},
                            {static_cast<uint64_t>(kSimdWidth), static_cast<uint64_t>(kRowsPerGroup), 1});
  });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::sdpa, DeviceType::MPS, mps_sdpa);

}  // namespace aotishim
