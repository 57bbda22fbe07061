// _weight_int8pack_mm on the host, each column scaled and rounded once into
// out's dtype at the end. Up to 64 rows (decoding) with packed weight rows: in
// parallel over the weight's rows, each row's int8 values are widened in
// registers and multiplied into up to 4 input rows at a time, so the weight
// is read once per 4 rows and never widened whole. Otherwise both operands
// are widened to packed float32 and one BLAS gemm (self @ mat2^T) runs.
#include <algorithm>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "devices/cpu/blas.h"
#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "devices/cpu/vector_isa.h"
#include "ops/weight_int8pack_mm.h"

namespace aotishim {
namespace {

// Up to this many rows the direct path runs. Measured at 4096x4096 on a
// 2-core Xeon VM: direct 18 ms at 32 rows and 39 at 64, the widened gemm
// 49 ms at 65 and 63-67 at 128 (the widening costs much of it); they cross
// near 96.
constexpr int64_t kDirectRows = 64;

// out[m * N + n] for rows m of self (packed floats, K each) against weight
// row n (int8, packed), rows [m0, m0 + rows) with rows <= 4, accumulated in
// float32.
void rows_baseline(const float* self, const int8_t* wr, int64_t K, int64_t rows, float* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = self + r * K;
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int64_t k = 0;
    for (; k + 4 <= K; k += 4)
      for (int j = 0; j < 4; ++j) s[j] += x[k + j] * static_cast<float>(wr[k + j]);
    for (; k < K; ++k) s[0] += x[k] * static_cast<float>(wr[k]);
    acc[r] = (s[0] + s[1]) + (s[2] + s[3]);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) float hsum(__m256 v) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  float lanes[4];
  _mm_storeu_ps(lanes, h);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

// Each 8 weights are widened once for up to 4 rows.
__attribute__((target("avx2,fma"))) void rows_avx2(const float* self, const int8_t* wr,
                                                    int64_t K, int64_t rows, float* acc) {
  __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                 _mm256_setzero_ps()};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(wr + k));
    const __m256 w = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    for (int64_t r = 0; r < rows; ++r)
      s[r] = _mm256_fmadd_ps(_mm256_loadu_ps(self + r * K + k), w, s[r]);
  }
  for (int64_t r = 0; r < rows; ++r) {
    float total = hsum(s[r]);
    for (int64_t t = k; t < K; ++t) total += self[r * K + t] * static_cast<float>(wr[t]);
    acc[r] = total;
  }
}
#endif

using RowsKernel = void (*)(const float*, const int8_t*, int64_t, int64_t, float*);

RowsKernel pick_rows_kernel() {
#if defined(__x86_64__)
  if (cpu::host_vector_isa() != cpu::VectorIsa::kBaseline) return rows_avx2;
#endif
  return rows_baseline;
}

// out (M x N, packed) = self (M x K floats, packed) @ w^T, w's rows packed.
void direct(const std::vector<float>& self, const int8_t* w, int64_t row_stride, int64_t M,
            int64_t N, int64_t K, float* out) {
  static const RowsKernel kernel = pick_rows_kernel();
  cpu::parallel_for(N, std::max<int64_t>(1, 65536 / std::max<int64_t>(K * M, 1)),
                    [&](int64_t begin, int64_t end) {
    float acc[4];
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t m0 = 0; m0 < M; m0 += 4) {
        const int64_t rows = std::min<int64_t>(4, M - m0);
        kernel(self.data() + m0 * K, w + n * row_stride, K, rows, acc);
        for (int64_t r = 0; r < rows; ++r) out[(m0 + r) * N + n] = acc[r];
      }
    }
  });
}

void host_weight_int8pack_mm(const WeightInt8PackMmArgs& a) {
  const int64_t M = a.self.sizes[0], K = a.self.sizes[1], N = a.mat2.sizes[0];
  AOTISHIM_CHECK(M <= blas::kMaxInt && N <= blas::kMaxInt && K <= blas::kMaxInt,
                 "_weight_int8pack_mm: sizes too large for BLAS");
  const std::vector<float> self = cpu::packed_floats(a.self);
  std::vector<float> out(static_cast<size_t>(M * N), 0.0f);
  const std::vector<float> scales = cpu::packed_floats(a.scales);
  const auto scale_and_store = [&] {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) out[m * N + n] *= scales[n];
    cpu::store_floats(a.out, out.data());
  };
  if (M <= kDirectRows && (K <= 1 || a.mat2.strides[1] == 1)) {  // packed weight rows
    direct(self, cpu::typed<int8_t>(a.mat2), a.mat2.strides[0], M, N, K, out.data());
    scale_and_store();
    return;
  }
  const std::vector<float> weight = cpu::packed_floats(a.mat2);
  if (K > 0) {
    const int k = static_cast<int>(K);
    blas::gemm(false, true, static_cast<int>(M), static_cast<int>(N), k, 1.0f, self.data(), k,
               weight.data(), k, 0.0f, out.data(), static_cast<int>(N));
  }
  scale_and_store();
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::weight_int8pack_mm_kernel, DeviceType::CPU, host_weight_int8pack_mm);

}  // namespace aotishim
