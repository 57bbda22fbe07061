// lapack:: over the Fortran entry points of the configured library. The
// prototypes are declared here (LAPACK's Fortran calling convention: every
// argument by address; gfortran-built OpenBLAS also takes each character
// argument's length, after the others). On macOS these are Accelerate's
// classic LAPACK/BLAS symbols (`spotrs_`, ...), which take no lengths.
#include "devices/cpu/lapack.h"

#include <algorithm>
#include <cstddef>
#include <vector>


#if defined(AOTISHIM_BLAS_SCIPY_OPENBLAS)
#define AOTISHIM_F77(name) scipy_##name##_
#define AOTISHIM_CHARLENS(n) AOTISHIM_CHARLENS_##n
#define AOTISHIM_CHARLENS_1 , std::size_t
#define AOTISHIM_CHARLENS_2 , std::size_t, std::size_t
#define AOTISHIM_CHARLENS_4 , std::size_t, std::size_t, std::size_t, std::size_t
#define AOTISHIM_PASS_LENS(n) AOTISHIM_PASS_LENS_##n
#define AOTISHIM_PASS_LENS_1 , std::size_t{1}
#define AOTISHIM_PASS_LENS_2 , std::size_t{1}, std::size_t{1}
#define AOTISHIM_PASS_LENS_4 , std::size_t{1}, std::size_t{1}, std::size_t{1}, std::size_t{1}
#elif defined(AOTISHIM_BLAS_ACCELERATE)
#define AOTISHIM_F77(name) name##_
#define AOTISHIM_CHARLENS(n)
#define AOTISHIM_PASS_LENS(n)
#else
#error "no LAPACK configured: expected AOTISHIM_BLAS_ACCELERATE or AOTISHIM_BLAS_SCIPY_OPENBLAS"
#endif

using c32 = std::complex<float>;
using c64 = std::complex<double>;

// One prototype per element type: prefix letter and element type.
#define AOTISHIM_FOR_EACH_TYPE(X) X(s, float) X(d, double) X(c, c32) X(z, c64)

extern "C" {
#define AOTISHIM_DECLARE(p, T)                                                                  \
  void AOTISHIM_F77(p##potrs)(const char*, const int*, const int*, const T*, const int*, T*,    \
                              const int*, int* AOTISHIM_CHARLENS(1));                           \
  void AOTISHIM_F77(p##potri)(const char*, const int*, T*, const int*, int* AOTISHIM_CHARLENS(1)); \
  void AOTISHIM_F77(p##trsm)(const char*, const char*, const char*, const char*, const int*,    \
                             const int*, const T*, const T*, const int*, T*,                    \
                             const int* AOTISHIM_CHARLENS(4));                                  \
  void AOTISHIM_F77(p##geqrf)(const int*, const int*, T*, const int*, T*, T*, const int*, int*);
AOTISHIM_FOR_EACH_TYPE(AOTISHIM_DECLARE)
#undef AOTISHIM_DECLARE
void AOTISHIM_F77(sormqr)(const char*, const char*, const int*, const int*, const int*,
                          const float*, const int*, const float*, float*, const int*, float*,
                          const int*, int* AOTISHIM_CHARLENS(2));
void AOTISHIM_F77(dormqr)(const char*, const char*, const int*, const int*, const int*,
                          const double*, const int*, const double*, double*, const int*, double*,
                          const int*, int* AOTISHIM_CHARLENS(2));
void AOTISHIM_F77(cunmqr)(const char*, const char*, const int*, const int*, const int*,
                          const c32*, const int*, const c32*, c32*, const int*, c32*, const int*,
                          int* AOTISHIM_CHARLENS(2));
void AOTISHIM_F77(zunmqr)(const char*, const char*, const int*, const int*, const int*,
                          const c64*, const int*, const c64*, c64*, const int*, c64*, const int*,
                          int* AOTISHIM_CHARLENS(2));
}

namespace aotishim::lapack {
namespace {

char uplo(bool upper) { return upper ? 'U' : 'L'; }

// A workspace query's answer (in work[0]) as a count of elements.
template <typename T>
int workspace_size(const T& answer) {
  return std::max(1, static_cast<int>(std::real(answer)));
}

}  // namespace

#define AOTISHIM_DEFINE(p, T)                                                                  \
  int potrs(bool upper, int n, int nrhs, const T* a, int lda, T* b, int ldb) {                 \
    const char u = uplo(upper);                                                                \
    int info = 0;                                                                              \
    AOTISHIM_F77(p##potrs)(&u, &n, &nrhs, a, &lda, b, &ldb, &info AOTISHIM_PASS_LENS(1));      \
    return info;                                                                               \
  }                                                                                            \
  int potri(bool upper, int n, T* a, int lda) {                                                \
    const char u = uplo(upper);                                                                \
    int info = 0;                                                                              \
    AOTISHIM_F77(p##potri)(&u, &n, a, &lda, &info AOTISHIM_PASS_LENS(1));                      \
    return info;                                                                               \
  }                                                                                            \
  void trsm_left(bool upper, bool transpose, bool unit_diagonal, int m, int n, const T* a,     \
                 int lda, T* b, int ldb) {                                                     \
    const char side = 'L', u = uplo(upper), trans = transpose ? 'T' : 'N',                     \
               diag = unit_diagonal ? 'U' : 'N';                                               \
    const T one(1);                                                                            \
    AOTISHIM_F77(p##trsm)(&side, &u, &trans, &diag, &m, &n, &one, a, &lda, b,                  \
                          &ldb AOTISHIM_PASS_LENS(4));                                         \
  }                                                                                            \
  int geqrf(int m, int n, T* a, int lda, T* tau) {                                             \
    int info = 0, query = -1;                                                                  \
    T answer(0);                                                                               \
    AOTISHIM_F77(p##geqrf)(&m, &n, a, &lda, tau, &answer, &query, &info);                      \
    if (info != 0) return info;                                                                \
    int lwork = workspace_size(answer);                                                        \
    std::vector<T> work(static_cast<size_t>(lwork));                                           \
    AOTISHIM_F77(p##geqrf)(&m, &n, a, &lda, tau, work.data(), &lwork, &info);                  \
    return info;                                                                               \
  }
AOTISHIM_FOR_EACH_TYPE(AOTISHIM_DEFINE)
#undef AOTISHIM_DEFINE

// ormqr for real types, unmqr (op: the conjugate transpose) for complex.
#define AOTISHIM_DEFINE_ORMQR(fn, T, trans_char)                                               \
  int ormqr(bool left, bool transpose, int m, int n, int k, const T* a, int lda, const T* tau, \
            T* c, int ldc) {                                                                   \
    const char side = left ? 'L' : 'R', trans = transpose ? trans_char : 'N';                  \
    int info = 0, query = -1;                                                                  \
    T answer(0);                                                                               \
    AOTISHIM_F77(fn)(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, &answer, &query,        \
                     &info AOTISHIM_PASS_LENS(2));                                             \
    if (info != 0) return info;                                                                \
    int lwork = workspace_size(answer);                                                        \
    std::vector<T> work(static_cast<size_t>(lwork));                                           \
    AOTISHIM_F77(fn)(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work.data(), &lwork,    \
                     &info AOTISHIM_PASS_LENS(2));                                             \
    return info;                                                                               \
  }
AOTISHIM_DEFINE_ORMQR(sormqr, float, 'T')
AOTISHIM_DEFINE_ORMQR(dormqr, double, 'T')
AOTISHIM_DEFINE_ORMQR(cunmqr, c32, 'C')
AOTISHIM_DEFINE_ORMQR(zunmqr, c64, 'C')
#undef AOTISHIM_DEFINE_ORMQR

}  // namespace aotishim::lapack
