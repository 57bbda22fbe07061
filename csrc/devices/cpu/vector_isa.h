// The widest x86-64 vector instruction set this CPU runs, for the cpu
// kernels compiled again per instruction set under __attribute__((target))
// (depthwise_conv.cpp, softmax_rows.cpp): asked once, then cached.
#pragma once

namespace aotishim::cpu {

enum class VectorIsa {
  kBaseline,  // the build's own (x86-64's SSE2, or not x86 at all)
  kAvx2,      // AVX2 with FMA
  kAvx512,    // AVX-512 F, BW and VL
};

VectorIsa host_vector_isa();

}  // namespace aotishim::cpu
