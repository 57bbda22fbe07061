#include "core/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define AOTISHIM_CPUID 1
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace aotishim {
namespace {

#if defined(AOTISHIM_CPUID)
struct X86 {
  bool avx512_core = false;  // F, BW, VL, DQ, with the OS saving zmm state
  bool avx512_fp16 = false;  // avx512_core plus AVX512-FP16 (and VNNI, BF16)
  bool avx2_vnni_2 = false;  // AVX2, AVX-VNNI, AVX-VNNI-INT8, AVX-NE-CONVERT
};

uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

X86 read_x86() {
  X86 f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr = xcr0();
  const bool ymm_saved = (xcr & 0x6) == 0x6;
  const bool zmm_saved = ymm_saved && (xcr & 0xE0) == 0xE0;
  if (!ymm_saved || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx2 = (b >> 5) & 1;
  const bool avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
  const bool avx512_vnni = (c >> 11) & 1, avx512fp16 = (d >> 23) & 1;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
  const bool avx_vnni = (a1 >> 4) & 1, avx512_bf16 = (a1 >> 5) & 1;
  const bool vnni_int8 = (d1 >> 4) & 1, ne_convert = (d1 >> 5) & 1;
  f.avx512_core = zmm_saved && avx512;
  f.avx512_fp16 = f.avx512_core && avx512_vnni && avx512_bf16 && avx512fp16;
  f.avx2_vnni_2 = avx2 && avx_vnni && vnni_int8 && ne_convert;
  return f;
}

const X86& x86() {
  static const X86 features = read_x86();
  return features;
}
#endif

#if defined(__aarch64__)
bool arm_bf16() {
#if defined(__APPLE__)
  int value = 0;
  size_t size = sizeof(value);
  return sysctlbyname("hw.optional.arm.FEAT_BF16", &value, &size, nullptr, 0) == 0 && value != 0;
#elif defined(__linux__)
  constexpr unsigned long kHwcap2Bf16 = 1UL << 14;  // HWCAP2_BF16
  return (getauxval(AT_HWCAP2) & kHwcap2Bf16) != 0;
#else
  return false;
#endif
}
#endif

}  // namespace

bool onednn_takes_bfloat16() {
#if defined(AOTISHIM_CPUID)
  return x86().avx512_core || x86().avx2_vnni_2;
#elif defined(__aarch64__)
  static const bool bf16 = arm_bf16();
  return bf16;
#else
  return false;
#endif
}

bool onednn_takes_float16() {
#if defined(AOTISHIM_CPUID)
  return x86().avx512_fp16 || x86().avx2_vnni_2;
#else
  return false;
#endif
}

}  // namespace aotishim
