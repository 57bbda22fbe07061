// GEMM on host memory through BLAS. A view that BLAS can describe (a unit
// stride in one matrix dimension and a leading dimension that fits) is handed
// over where it lies, so float32/float64 views at offsets and with padded rows
// cost nothing extra; only views BLAS cannot describe are packed into a
// temporary. bfloat16 has no BLAS GEMM here and is widened to float32.
#include "devices/cpu/host_gemm.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/strided.h"
#include "devices/cpu/blas.h"

namespace aotishim {
namespace {

// One matrix of a batch: element pointer, shape and element strides.
template <typename T>
struct Mat {
  T* data;
  int64_t rows, cols;
  int64_t rs, cs;  // row stride, column stride (elements)

  T& at(int64_t i, int64_t j) const { return data[i * rs + j * cs]; }
  Mat transposed() const { return {data, cols, rows, cs, rs}; }
};

// How a row-major CBLAS call sees a matrix: op = transpose or not, and lda.
struct BlasLayout {
  bool ok = false;
  bool trans = false;
  int ld = 0;
};

BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const MatrixView v = row_major_view(rows, cols, rs, cs);
  if (!v.ok || v.ld > blas::kMaxInt) return {};
  return {true, v.transposed, static_cast<int>(v.ld)};
}

struct Identity {
  template <typename T>
  T operator()(T v) const { return v; }
};
// 16-bit floats as float32 and back (rounded to nearest even).
struct BF16 {
  static float widen(uint16_t v) { return bf16_to_float(v); }
  static uint16_t narrow(float v) { return float_to_bf16(v); }
};
struct F16 {
  static float widen(uint16_t v) { return f16_to_float(v); }
  static uint16_t narrow(float v) { return float_to_f16(v); }
};
template <typename Format>
struct Widen {
  float operator()(uint16_t v) const { return Format::widen(v); }
};
template <typename Format>
struct Narrow {
  uint16_t operator()(float v) const { return Format::narrow(v); }
};

// dst (packed rows x cols, row-major) = conv(src view)
template <typename D, typename S, typename Conv>
void gather(D* dst, const Mat<S>& src, Conv conv) {
  for (int64_t i = 0; i < src.rows; ++i)
    for (int64_t j = 0; j < src.cols; ++j) dst[i * src.cols + j] = conv(src.at(i, j));
}

// dst view = conv(src packed rows x cols)
template <typename D, typename S, typename Conv>
void scatter(const Mat<D>& dst, const S* src, Conv conv) {
  for (int64_t i = 0; i < dst.rows; ++i)
    for (int64_t j = 0; j < dst.cols; ++j) dst.at(i, j) = conv(src[i * dst.cols + j]);
}

// An input operand as BLAS will read it: the view itself, or a packed copy in
// `scratch` when BLAS cannot describe the view.
template <typename T>
struct Operand {
  const T* data;
  bool trans;
  int ld;
};

template <typename T>
Operand<T> operand(const Mat<T>& m, std::vector<T>& scratch) {
  BlasLayout layout = blas_layout(m.rows, m.cols, m.rs, m.cs);
  if (layout.ok) return {m.data, layout.trans, layout.ld};
  scratch.resize(static_cast<size_t>(m.rows * m.cols));
  gather(scratch.data(), m, Identity{});
  return {scratch.data(), false, static_cast<int>(std::max<int64_t>(m.cols, 1))};
}

// c = beta * c + alpha * a @ b for one matrix, T in {float, double}.
// a: (M, K), b: (K, N), c: (M, N); c does not overlap a or b.
template <typename T>
void gemm_one(Mat<T> c, Mat<T> a, Mat<T> b, T alpha, T beta, std::vector<T>& scratch_a,
              std::vector<T>& scratch_b, std::vector<T>& scratch_c) {
  const int64_t M = c.rows, N = c.cols, K = a.cols;
  if (M == 0 || N == 0) return;
  if (K == 0) {  // an empty sum: only the beta term remains (beta == 0 writes zeros)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) c.at(i, j) = beta == T(0) ? T(0) : beta * c.at(i, j);
    return;
  }
  // A column-major c is a row-major c^T = b^T @ a^T: swap roles, no copies.
  BlasLayout c_layout = blas_layout(M, N, c.rs, c.cs);
  if (c_layout.ok && c_layout.trans) {
    gemm_one(c.transposed(), b.transposed(), a.transposed(), alpha, beta, scratch_b, scratch_a,
             scratch_c);
    return;
  }
  Operand<T> oa = operand(a, scratch_a);
  Operand<T> ob = operand(b, scratch_b);
  if (c_layout.ok) {
    blas::gemm(oa.trans, ob.trans, static_cast<int>(M), static_cast<int>(N),
               static_cast<int>(K), alpha, oa.data, oa.ld, ob.data, ob.ld, beta, c.data,
               c_layout.ld);
    return;
  }
  // No unit stride in c: compute packed, then scatter into the view.
  scratch_c.resize(static_cast<size_t>(M * N));
  if (beta != T(0)) gather(scratch_c.data(), c, Identity{});
  blas::gemm(oa.trans, ob.trans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
             alpha, oa.data, oa.ld, ob.data, ob.ld, beta, scratch_c.data(),
             static_cast<int>(N));
  scatter(c, scratch_c.data(), Identity{});
}

template <typename T>
Mat<T> batch_matrix(const Tensor& t, int64_t batch) {
  T* base = reinterpret_cast<T*>(t.data()) + batch * t.strides[0];
  return {base, t.sizes[1], t.sizes[2], t.strides[1], t.strides[2]};
}

template <typename T>
void gemm_native(const GemmArgs& args) {
  std::vector<T> scratch_a, scratch_b, scratch_c;
  const T alpha = static_cast<T>(args.alpha), beta = static_cast<T>(args.beta);
  for (int64_t batch = 0; batch < args.out.sizes[0]; ++batch) {
    gemm_one(batch_matrix<T>(args.out, batch), batch_matrix<T>(args.a, batch),
             batch_matrix<T>(args.b, batch), alpha, beta, scratch_a, scratch_b, scratch_c);
  }
}

// bfloat16 and float16: widen the operands to float32, run sgemm (so the
// products, the sum and the beta term are all float32), round once on the way
// back.
template <typename Format>
void gemm_widened(const GemmArgs& args) {
  const int64_t M = args.out.sizes[1], N = args.out.sizes[2], K = args.a.sizes[2];
  std::vector<float> fa(static_cast<size_t>(M * K)), fb(static_cast<size_t>(K * N)),
      fc(static_cast<size_t>(M * N));
  std::vector<float> scratch_a, scratch_b, scratch_c;
  const float alpha = static_cast<float>(args.alpha), beta = static_cast<float>(args.beta);
  for (int64_t batch = 0; batch < args.out.sizes[0]; ++batch) {
    Mat<uint16_t> c = batch_matrix<uint16_t>(args.out, batch);
    gather(fa.data(), batch_matrix<uint16_t>(args.a, batch), Widen<Format>{});
    gather(fb.data(), batch_matrix<uint16_t>(args.b, batch), Widen<Format>{});
    if (beta != 0.0f) gather(fc.data(), c, Widen<Format>{});
    gemm_one(Mat<float>{fc.data(), M, N, N, 1}, Mat<float>{fa.data(), M, K, K, 1},
             Mat<float>{fb.data(), K, N, N, 1}, alpha, beta, scratch_a, scratch_b, scratch_c);
    scatter(c, fc.data(), Narrow<Format>{});
  }
}

void check_blas_dim(int64_t value, const char* name) {
  AOTISHIM_CHECK(value <= blas::kMaxInt, "matrix dimension ", name, " = ", value,
                 " exceeds the BLAS integer limit (", blas::kMaxInt, ")");
}

}  // namespace

void host_gemm(const GemmArgs& args) {
  const Tensor &out = args.out, &a = args.a, &b = args.b;
  AOTISHIM_CHECK(out.dim() == 3 && a.dim() == 3 && b.dim() == 3,
                 "host_gemm expects 3-D (batch, rows, cols) views");
  const int64_t B = out.sizes[0], M = out.sizes[1], N = out.sizes[2], K = a.sizes[2];
  AOTISHIM_CHECK(a.sizes[0] == B && b.sizes[0] == B && a.sizes[1] == M && b.sizes[1] == K &&
                     b.sizes[2] == N,
                 "host_gemm: inconsistent shapes out ", shape_string(out.sizes), ", a ",
                 shape_string(a.sizes), ", b ", shape_string(b.sizes));
  AOTISHIM_CHECK(a.dtype == out.dtype && b.dtype == out.dtype,
                 "host_gemm: operands must share one dtype");
  check_blas_dim(M, "M");
  check_blas_dim(N, "N");
  check_blas_dim(K, "K");
  if (B == 0 || M == 0 || N == 0) return;

  switch (out.dtype) {
    case DType::Float32:
      gemm_native<float>(args);
      break;
    case DType::Float64:
      gemm_native<double>(args);
      break;
    case DType::BFloat16:
      gemm_widened<BF16>(args);
      break;
    case DType::Float16:
      gemm_widened<F16>(args);
      break;
    default:
      fail(str("unsupported dtype ", dtype_name(out.dtype),
               " for gemm on the CPU (supported: float32, float64, bfloat16, float16)"));
  }
}

}  // namespace aotishim
