#include "devices/cpu/vector_isa.h"

namespace aotishim::cpu {

VectorIsa host_vector_isa() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const VectorIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
      return VectorIsa::kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorIsa::kAvx2;
    return VectorIsa::kBaseline;
  }();
  return isa;
#else
  return VectorIsa::kBaseline;
#endif
}

}  // namespace aotishim::cpu
