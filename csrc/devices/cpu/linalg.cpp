// The cpu linalg kernels: one LAPACK (or BLAS trsm) call per matrix of the
// column-major batched tensors validation prepared (ops/linalg.h), and
// lu_unpack's element shuffle.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "devices/cpu/lapack.h"
#include "ops/linalg.h"

namespace aotishim {
namespace {

// Calls f(T{}) with the element type of a linalg dtype.
template <typename F>
void visit_linalg(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Complex64: return f(std::complex<float>{});
    case DType::Complex128: return f(std::complex<double>{});
    default: break;
  }
  fail(str("unsupported dtype ", dtype_name(dtype), " for the cpu linalg kernels"));
}

template <typename T>
T conj_of(T v) {
  return v;
}
template <typename R>
std::complex<R> conj_of(std::complex<R> v) {
  return std::conj(v);
}

// A column-major batched tensor as LAPACK sees it.
struct Batch {
  int64_t rows, cols, count;
  int ld;
  int64_t step;  // elements from one matrix to the next
};

Batch batch_of(const Tensor& t) {
  Batch b;
  b.rows = t.sizes[t.dim() - 2];
  b.cols = t.sizes[t.dim() - 1];
  b.step = b.rows * b.cols;
  b.count = b.step == 0 ? 0 : t.numel() / b.step;
  AOTISHIM_CHECK(b.rows <= INT32_MAX && b.cols <= INT32_MAX,
                 "matrix of ", b.rows, " x ", b.cols, " too large for LAPACK");
  b.ld = static_cast<int>(std::max<int64_t>(1, b.rows));
  return b;
}

int as_int(int64_t v) { return static_cast<int>(v); }

void host_cholesky_solve(const CholeskySolveArgs& a) {
  visit_linalg(a.x.dtype, [&](auto zero) {
    using T = decltype(zero);
    const Batch x = batch_of(a.x), f = batch_of(a.factor);
    T* xd = reinterpret_cast<T*>(a.x.data());
    const T* fd = reinterpret_cast<const T*>(a.factor.data());
    for (int64_t i = 0; i < x.count; ++i)
      lapack::potrs(a.upper, as_int(f.rows), as_int(x.cols), fd + i * f.step, f.ld,
                    xd + i * x.step, x.ld);
  });
}

std::string batch_prefix(const char* op, const Tensor& t, int64_t i) {
  return t.dim() > 2 ? str(op, ": (Batch element ", i, "): ") : str(op, ": ");
}

void host_cholesky_inverse(const CholeskyInverseArgs& a) {
  visit_linalg(a.a.dtype, [&](auto zero) {
    using T = decltype(zero);
    const Batch b = batch_of(a.a);
    T* data = reinterpret_cast<T*>(a.a.data());
    for (int64_t i = 0; i < b.count; ++i) {
      T* m = data + i * b.step;
      const int info = lapack::potri(a.upper, as_int(b.rows), m, b.ld);
      AOTISHIM_CHECK(info == 0, batch_prefix("cholesky_inverse", a.a, i),
                     "The diagonal element ", info,
                     " is zero, the inversion could not be completed because the input matrix "
                     "is singular.");
      // potri wrote the factor's triangle; the other one is its conjugate mirror.
      for (int64_t c = 0; c < b.cols; ++c)
        for (int64_t r = c + 1; r < b.rows; ++r) {
          T& lower = m[r + c * b.ld];
          T& upper = m[c + r * b.ld];
          if (a.upper)
            lower = conj_of(upper);
          else
            upper = conj_of(lower);
        }
    }
  });
}

void host_triangular_solve(const TriangularSolveArgs& a) {
  visit_linalg(a.x.dtype, [&](auto zero) {
    using T = decltype(zero);
    const Batch x = batch_of(a.x), f = batch_of(a.a);
    T* xd = reinterpret_cast<T*>(a.x.data());
    const T* fd = reinterpret_cast<const T*>(a.a.data());
    for (int64_t i = 0; i < x.count; ++i)
      lapack::trsm_left(a.upper, a.transpose, a.unit_diagonal, as_int(x.rows), as_int(x.cols),
                        fd + i * f.step, f.ld, xd + i * x.step, x.ld);
  });
}

void host_geqrf(const GeqrfArgs& a) {
  visit_linalg(a.a.dtype, [&](auto zero) {
    using T = decltype(zero);
    const Batch b = batch_of(a.a);
    const int64_t k = std::min(b.rows, b.cols);
    T* data = reinterpret_cast<T*>(a.a.data());
    T* tau = reinterpret_cast<T*>(a.tau.data());
    for (int64_t i = 0; i < b.count; ++i) {
      const int info = lapack::geqrf(as_int(b.rows), as_int(b.cols), data + i * b.step, b.ld,
                                     tau + i * k);
      AOTISHIM_CHECK(info == 0, "geqrf: LAPACK geqrf failed (info ", info, ")");
    }
  });
}

void host_ormqr(const OrmqrArgs& a) {
  visit_linalg(a.c.dtype, [&](auto zero) {
    using T = decltype(zero);
    const Batch c = batch_of(a.c), r = batch_of(a.a);
    const int64_t k = r.cols;
    T* cd = reinterpret_cast<T*>(a.c.data());
    const T* rd = reinterpret_cast<const T*>(a.a.data());
    const T* tau = reinterpret_cast<const T*>(a.tau.data());
    for (int64_t i = 0; i < c.count; ++i) {
      const int info = lapack::ormqr(a.left, a.transpose, as_int(c.rows), as_int(c.cols),
                                     as_int(k), rd + i * r.step, r.ld, tau + i * k,
                                     cd + i * c.step, c.ld);
      AOTISHIM_CHECK(info == 0, "ormqr: LAPACK ormqr failed (info ", info, ")");
    }
  });
}

// Element offsets of the first element of every matrix of t (any strides),
// the batch in row-major order.
std::vector<int64_t> matrix_offsets(const Tensor& t) {
  const int64_t nb = t.dim() - 2;
  int64_t count = 1;
  for (int64_t d = 0; d < nb; ++d) count *= t.sizes[d];
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, off = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      off += (rest % t.sizes[d]) * t.strides[d];
      rest /= t.sizes[d];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  return offsets;
}

void host_lu_unpack(const LuUnpackArgs& a) {
  visit_linalg(a.lu.dtype, [&](auto zero) {
    using T = decltype(zero);
    const int64_t d = a.lu.dim();
    const int64_t m = a.lu.sizes[d - 2], n = a.lu.sizes[d - 1], k = std::min(m, n);
    const int64_t rs = a.lu.strides[d - 2], cs = a.lu.strides[d - 1];
    const T* lu = reinterpret_cast<const T*>(a.lu.data());
    const std::vector<int64_t> mats = matrix_offsets(a.lu);
    const int64_t np = a.pivots.sizes.back(), ps = a.pivots.strides.back();
    const int32_t* piv = reinterpret_cast<const int32_t*>(a.pivots.data());
    const std::vector<int64_t> pivs = matrix_offsets(make_view(
        a.pivots, [&] { auto s = a.pivots.sizes; s.push_back(1); return s; }(),
        [&] { auto s = a.pivots.strides; s.push_back(1); return s; }(), a.pivots.storage_offset));
    for (size_t b = 0; b < mats.size(); ++b) {
      const T* src = lu + mats[b];
      if (a.unpack_data) {
        T* l = reinterpret_cast<T*>(a.l.data()) + static_cast<int64_t>(b) * m * k;
        T* u = reinterpret_cast<T*>(a.u.data()) + static_cast<int64_t>(b) * k * n;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < k; ++j)
            l[i * k + j] = i > j ? src[i * rs + j * cs] : T(i == j ? 1 : 0);
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < n; ++j) u[i * n + j] = i <= j ? src[i * rs + j * cs] : T(0);
      }
      if (a.unpack_pivots) {
        // Row i of L U is row perm[i] of the factored matrix: P[perm[i], i] = 1.
        std::vector<int64_t> perm(static_cast<size_t>(m));
        std::iota(perm.begin(), perm.end(), int64_t{0});
        const int32_t* pv = piv + pivs[b];
        for (int64_t i = 0; i < np; ++i) {
          const int64_t to = pv[i * ps];
          AOTISHIM_CHECK(to >= 1 && to <= m,
                         "pivots passed to lu_unpack must be between 1 and LU.size(-2) "
                         "inclusive.Did you properly pass the result of lu_factor?");
          std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(to - 1)]);
        }
        T* p = reinterpret_cast<T*>(a.p.data()) + static_cast<int64_t>(b) * m * m;
        std::fill(p, p + m * m, T(0));
        for (int64_t i = 0; i < m; ++i) p[perm[static_cast<size_t>(i)] * m + i] = T(1);
      }
    }
  });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::cholesky_solve_kernel, DeviceType::CPU, host_cholesky_solve);
AOTISHIM_REGISTER_KERNEL(ops::cholesky_inverse_kernel, DeviceType::CPU, host_cholesky_inverse);
AOTISHIM_REGISTER_KERNEL(ops::triangular_solve_kernel, DeviceType::CPU, host_triangular_solve);
AOTISHIM_REGISTER_KERNEL(ops::geqrf_kernel, DeviceType::CPU, host_geqrf);
AOTISHIM_REGISTER_KERNEL(ops::ormqr_kernel, DeviceType::CPU, host_ormqr);
AOTISHIM_REGISTER_KERNEL(ops::lu_unpack_kernel, DeviceType::CPU, host_lu_unpack);

}  // namespace aotishim
