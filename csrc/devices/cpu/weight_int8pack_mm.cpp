// _weight_int8pack_mm on the host: both operands widened to packed float32,
// one BLAS gemm (self @ mat2^T), then each column scaled and rounded once
// into out's dtype.
#include <algorithm>
#include <vector>

#include "devices/cpu/blas.h"
#include "devices/cpu/typed_elements.h"
#include "ops/weight_int8pack_mm.h"

namespace aotishim {
namespace {

void host_weight_int8pack_mm(const WeightInt8PackMmArgs& a) {
  const int64_t M = a.self.sizes[0], K = a.self.sizes[1], N = a.mat2.sizes[0];
  AOTISHIM_CHECK(M <= blas::kMaxInt && N <= blas::kMaxInt && K <= blas::kMaxInt,
                 "_weight_int8pack_mm: sizes too large for BLAS");
  const std::vector<float> self = cpu::packed_floats(a.self);
  std::vector<float> weight(static_cast<size_t>(N * K));
  const int8_t* w = cpu::typed<int8_t>(a.mat2);
  size_t i = 0;
  cpu::for_each_element(a.mat2, [&](int64_t off, const std::vector<int64_t>&) {
    weight[i++] = static_cast<float>(w[off]);
  });
  std::vector<float> out(static_cast<size_t>(M * N), 0.0f);
  if (K > 0) {
    const int k = static_cast<int>(K);
    blas::gemm(false, true, static_cast<int>(M), static_cast<int>(N), k, 1.0f, self.data(), k,
               weight.data(), k, 0.0f, out.data(), static_cast<int>(N));
  }
  const std::vector<float> scales = cpu::packed_floats(a.scales);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) out[m * N + n] *= scales[n];
  cpu::store_floats(a.out, out.data());
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::weight_int8pack_mm_kernel, DeviceType::CPU, host_weight_int8pack_mm);

}  // namespace aotishim
