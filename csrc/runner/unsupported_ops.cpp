#include "runner/unsupported_ops.h"

#include <cstring>

namespace aotishim::runner {
namespace {

struct Declined {
  const char* op;
  const char* reason;
};

constexpr const char* kQat =
    "quantisation-aware training (an observer updating running statistics and fake-quantising "
    "as it trains), which an inference runtime does not run";
constexpr const char* kSparse =
    "it makes a sparse tensor, and the ABI's tensors are strided (dense) only";

constexpr const char* kFloat8 =
    "its operands are float8 (e4m3fn / e5m2) tensors, which aotishim's tensors cannot hold yet "
    "(float8 dtypes are refused for every tensor)";
constexpr const char* kDynQuant4 =
    "torch's cpu kernel quantises the activations on the fly into its own packed 4-bit format; "
    "that quantisation is not reproduced, so results would differ from torch's";

constexpr Declined kDeclined[] = {
    {"_scaled_mm", kFloat8},
    {"_scaled_mm_out", kFloat8},
    {"_dyn_quant_pack_4bit_weight", kDynQuant4},
    {"_dyn_quant_matmul_4bit", kDynQuant4},
    {"_fused_moving_avg_obs_fq_helper", kQat},
    {"_fused_moving_avg_obs_fq_helper_functional", kQat},
    {"_to_sparse", kSparse},
    {"to_sparse", kSparse},
    {"_scaled_dot_product_fused_attention_overrideable",
     "a hook that out-of-tree backends override with their own attention kernel; torch itself "
     "has no implementation of it to match"},
};

constexpr const char* kDevicePrefixes[] = {"aoti_torch_cpu_", "aoti_torch_cuda_",
                                           "aoti_torch_mps_", "aoti_torch_xpu_"};

}  // namespace

const char* unsupported_reason(const std::string& shim) {
  for (const char* prefix : kDevicePrefixes) {
    if (shim.rfind(prefix, 0) != 0) continue;
    const std::string op = shim.substr(std::strlen(prefix));
    for (const Declined& d : kDeclined)
      if (op == d.op) return d.reason;
  }
  return nullptr;
}

}  // namespace aotishim::runner
