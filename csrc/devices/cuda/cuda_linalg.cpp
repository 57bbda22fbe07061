// The linalg ops on cuda, run as torch cuda runs them, on the current
// stream, over the column-major batched tensors validation prepared
// (ops/linalg.h):
//   cholesky_solve   cuSOLVER potrs for one matrix; a batch as two
//                    triangular solves (L Y = B, then L^H X = Y), as torch
//                    cuda solves batches;
//   cholesky_inverse the same solve against identity matrices (torch cuda's
//                    way, see below);
//   triangular_solve cuBLAS trsm, looped or batched as torch cuda chooses;
//   geqrf            cuBLAS's batched QR for batches of small matrices, else
//                    cuSOLVER geqrf per matrix, as torch cuda chooses;
//   ormqr            cuSOLVER ormqr/unmqr per matrix;
//   lu_unpack        kernels of our own (linalg_kernels.cu).
// cuSOLVER's workspaces come from its size queries, one shared by a batch
// (its calls run in stream order). The info outputs of cuSOLVER and cuBLAS
// report only bad arguments, which validation rules out, so they are never
// read back (nor are they by torch).
#include <climits>
#include <map>
#include <mutex>
#include <utility>

#include "core/error.h"
#include "devices/cuda/cublas_linalg_api.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/cusolver_api.h"
#include "devices/cuda/linalg_kernels.h"
#include "ops/linalg.h"

namespace aotishim {
namespace cuda {

namespace {

CudaDevice& device_of(const Tensor& t) { return static_cast<CudaDevice&>(t.device()); }

// The routines' precision index (S, D, C, Z), the same in cuSOLVER's and
// cuBLAS's tables.
int precision_of(DType dtype) {
  switch (dtype) {
    case DType::Float32: return cusolver::kS;
    case DType::Float64: return cusolver::kD;
    case DType::Complex64: return cusolver::kC;
    case DType::Complex128: return cusolver::kZ;
    default: break;
  }
  fail(str("cuda linalg: unsupported dtype ", dtype_name(dtype),
           " (float32, float64, complex64 and complex128)"));
}

bool is_complex(int precision) { return precision == cusolver::kC || precision == cusolver::kZ; }

int to_int(int64_t v, const char* what) {
  AOTISHIM_CHECK(v >= 0 && v <= INT_MAX, "cuda linalg: ", what, " ", v,
                 " exceeds cuSOLVER's and cuBLAS's 32-bit limit");
  return static_cast<int>(v);
}

// A column-major batched tensor as the libraries see it.
struct Batch {
  int rows = 0, cols = 0, ld = 1;
  int64_t count = 0;
  size_t step_bytes = 0;  // from one matrix to the next
};

Batch batch_of(const Tensor& t) {
  Batch b;
  const int64_t rows = t.sizes[t.dim() - 2], cols = t.sizes[t.dim() - 1];
  b.rows = to_int(rows, "matrix size");
  b.cols = to_int(cols, "matrix size");
  b.ld = b.rows > 1 ? b.rows : 1;
  b.count = rows * cols == 0 ? 0 : t.numel() / (rows * cols);
  b.step_bytes = static_cast<size_t>(rows * cols) * t.itemsize();
  return b;
}

char* matrix(const Tensor& t, const Batch& b, int64_t i) {
  return t.data() + static_cast<size_t>(i) * b.step_bytes;
}

// --- cuSOLVER handles

// cuSOLVER handles are not thread-safe: every use holds this.
std::mutex& solver_mutex() {
  static std::mutex m;
  return m;
}

// The handle bound to `stream` on `device`, one per stream as cuBLAS's are
// (a handle's internal scratch must not be shared by streams that may run
// at once). Callers hold solver_mutex(). Never destroyed: recorded graphs
// may use them.
cusolver::Handle solver_handle(CudaDevice& device, cudaStream_t stream) {
  static auto* handles = new std::map<std::pair<int32_t, cudaStream_t>, cusolver::Handle>();
  const auto key = std::make_pair(device.index(), stream);
  auto found = handles->find(key);
  if (found != handles->end()) return found->second;
  const cusolver::Api& api = cusolver::api();
  cusolver::Handle h = nullptr;
  cusolver::Status st = api.create(&h);  // belongs to the current device
  AOTISHIM_CHECK(st == cusolver::kSuccess, "cusolverDnCreate failed on ", device.name(), ": ",
                 cusolver::status_text(st));
  st = api.set_stream(h, stream);
  if (st != cusolver::kSuccess) {
    api.destroy(h);
    fail(str("cusolverDnSetStream failed on ", device.name(), ": ", cusolver::status_text(st)));
  }
  handles->emplace(key, h);
  return h;
}

void check_solver(cusolver::Status st, const char* routine, CudaDevice& device, DType dtype) {
  if (st != cusolver::kSuccess)
    fail(str("cuSOLVER ", routine, " failed on ", device.name(), ": ",
             cusolver::status_text(st), " (", dtype_name(dtype), ")"));
}

// cuBLAS's alpha = 1 in host memory: (1, 0) read as a float or double, or as
// a complex pair of them.
const void* one_for(int precision) {
  static const float one_f[2] = {1.0f, 0.0f};
  static const double one_d[2] = {1.0, 0.0};
  return precision == cusolver::kS || precision == cusolver::kC ? static_cast<const void*>(one_f)
                                                                 : static_cast<const void*>(one_d);
}

void check_blas(cublas::Status st, const char* routine, CudaDevice& device, DType dtype) {
  AOTISHIM_CHECK(st == cublas::kStatusSuccess, "cuBLAS ", routine, " failed on ", device.name(),
                 ": ", cublas::status_text(st), " (", dtype_name(dtype), ")");
}

// A device array of the addresses of t's matrices (count of them).
void matrix_pointers(CudaDevice& device, const Tensor& t, size_t step_bytes, int64_t count,
                     void** out) {
  device.count_command();
  launch_pointer_array(out, t.data(), static_cast<int64_t>(step_bytes), count, device.stream());
}

// x := op(A)^-1 x for every matrix, A triangular (uplo, diag as cuBLAS takes
// them). torch cuda's choice between its two cuBLAS paths (a loop of trsm
// for at most 8 matrices of at least 64 rows, else trsmBatched), so the
// rounding is its own.
void trsm_each(CudaDevice& device, const Tensor& a, const Tensor& x, int uplo, int trans,
               int diag) {
  const cudaStream_t stream = device.stream();
  const int p = precision_of(x.dtype);
  const Batch xb = batch_of(x), ab = batch_of(a);
  const cublas::LinalgApi& api = cublas::linalg_api();
  const void* one = one_for(p);
  const bool looped = xb.count <= 8 && ab.rows >= 64;
  Tensor pointers;
  if (!looped) {
    pointers = make_empty(device, DType::Int64, {2 * xb.count});
    void** ptrs = reinterpret_cast<void**>(pointers.data());
    matrix_pointers(device, a, ab.step_bytes, xb.count, ptrs);
    matrix_pointers(device, x, xb.step_bytes, xb.count, ptrs + xb.count);
  }
  std::lock_guard<std::mutex> lock(device.cublas_mutex());
  cublas::Handle h = device.cublas_handle(stream);
  if (looped) {
    for (int64_t i = 0; i < xb.count; ++i) {
      device.count_command();
      check_blas(api.trsm[p](h, cublas::kSideLeft, uplo, trans, diag, xb.rows, xb.cols, one,
                             matrix(a, ab, i), ab.ld, matrix(x, xb, i), xb.ld),
                 "trsm", device, x.dtype);
    }
    return;
  }
  void** ptrs = reinterpret_cast<void**>(pointers.data());
  device.count_command();
  check_blas(api.trsm_batched[p](h, cublas::kSideLeft, uplo, trans, diag, xb.rows, xb.cols, one,
                                 ptrs, ab.ld, ptrs + xb.count, xb.ld, to_int(xb.count, "batch")),
             "trsmBatched", device, x.dtype);
}

// x := A^-1 x for every matrix, A = U^H U or L L^H from its factor: potrs
// for one matrix, two triangular solves for a batch (torch cuda's choice).
void cholesky_solve_each(CudaDevice& device, const Tensor& factor, const Tensor& x, bool upper) {
  const Batch f = batch_of(factor), b = batch_of(x);
  if (b.count > 1) {
    // U^H Y = B then U X = Y; or L Y = B then L^H X = Y. The conjugate
    // transpose op is also the transpose for real types.
    const int uplo = upper ? cublas::kFillUpper : cublas::kFillLower;
    trsm_each(device, factor, x, uplo, upper ? cublas::kOpC : cublas::kOpN, cublas::kDiagNonUnit);
    trsm_each(device, factor, x, uplo, upper ? cublas::kOpN : cublas::kOpC, cublas::kDiagNonUnit);
    return;
  }
  const int p = precision_of(x.dtype);
  const cusolver::Api& api = cusolver::api();
  Tensor info = make_empty(device, DType::Int32, {1});
  std::lock_guard<std::mutex> lock(solver_mutex());
  cusolver::Handle h = solver_handle(device, device.stream());
  device.count_command();
  check_solver(api.potrs[p](h, upper ? cusolver::kFillUpper : cusolver::kFillLower, f.rows,
                            b.cols, factor.data(), f.ld, x.data(), b.ld,
                            reinterpret_cast<int*>(info.data())),
               "potrs", device, x.dtype);
}

void cholesky_solve(const CholeskySolveArgs& a) {
  CudaDevice& device = device_of(a.x);
  DeviceScope on(device.index());
  cholesky_solve_each(device, a.factor, a.x, a.upper);
}

// torch cuda computes the inverse as the solve of A X = I (torch cpu runs
// LAPACK's potri): a zero on the factor's diagonal gives inf/NaN there
// instead of torch cpu's error, and the two triangles are the solve's own,
// not one mirrored onto the other.
void cholesky_inverse(const CholeskyInverseArgs& a) {
  CudaDevice& device = device_of(a.a);
  DeviceScope on(device.index());
  Tensor factor = make_empty(device, a.a.dtype, a.a.sizes, a.a.strides);
  device.copy(factor, a.a);
  const Batch b = batch_of(a.a);
  device.count_command();
  launch_identity(a.a.data(), a.a.dtype, b.rows, b.count, device.stream());
  cholesky_solve_each(device, factor, a.a, a.upper);
}

void triangular_solve(const TriangularSolveArgs& a) {
  CudaDevice& device = device_of(a.x);
  DeviceScope on(device.index());
  // The plain transpose, for complex too (torch's triangular_solve).
  trsm_each(device, a.a, a.x, a.upper ? cublas::kFillUpper : cublas::kFillLower,
            a.transpose ? cublas::kOpT : cublas::kOpN,
            a.unit_diagonal ? cublas::kDiagUnit : cublas::kDiagNonUnit);
}

// torch cuda's choice: cuBLAS's batched QR for batches of at least
// max(2, rows / 16) matrices of at most 256 rows, else cuSOLVER per matrix.
bool geqrf_batched(const Batch& b) {
  return b.rows <= 256 && b.count >= (b.rows / 16 > 2 ? b.rows / 16 : 2);
}

void geqrf(const GeqrfArgs& a) {
  CudaDevice& device = device_of(a.a);
  DeviceScope on(device.index());
  const int p = precision_of(a.a.dtype);
  const Batch b = batch_of(a.a);
  const size_t tau_step = static_cast<size_t>(b.rows < b.cols ? b.rows : b.cols) * a.a.itemsize();
  if (geqrf_batched(b)) {
    Tensor pointers = make_empty(device, DType::Int64, {2 * b.count});
    void** ptrs = reinterpret_cast<void**>(pointers.data());
    matrix_pointers(device, a.a, b.step_bytes, b.count, ptrs);
    matrix_pointers(device, a.tau, tau_step, b.count, ptrs + b.count);
    const cublas::LinalgApi& api = cublas::linalg_api();
    std::lock_guard<std::mutex> lock(device.cublas_mutex());
    cublas::Handle h = device.cublas_handle(device.stream());
    int info = 0;
    device.count_command();
    check_blas(api.geqrf_batched[p](h, b.rows, b.cols, ptrs, b.ld, ptrs + b.count, &info,
                                    to_int(b.count, "batch")),
               "geqrfBatched", device, a.a.dtype);
    AOTISHIM_CHECK(info == 0, "cuBLAS geqrfBatched: argument ", -info, " is invalid");
    return;
  }
  const cusolver::Api& api = cusolver::api();
  std::lock_guard<std::mutex> lock(solver_mutex());
  cusolver::Handle h = solver_handle(device, device.stream());
  int lwork = 0;
  check_solver(api.geqrf_buffer_size[p](h, b.rows, b.cols, a.a.data(), b.ld, &lwork),
               "geqrf_bufferSize", device, a.a.dtype);
  Tensor work = make_empty(device, a.a.dtype, {lwork > 1 ? lwork : 1});
  Tensor info = make_empty(device, DType::Int32, {1});
  for (int64_t i = 0; i < b.count; ++i) {
    device.count_command();
    check_solver(api.geqrf[p](h, b.rows, b.cols, matrix(a.a, b, i), b.ld,
                              a.tau.data() + static_cast<size_t>(i) * tau_step, work.data(),
                              lwork, reinterpret_cast<int*>(info.data())),
                 "geqrf", device, a.a.dtype);
  }
}

void ormqr(const OrmqrArgs& a) {
  CudaDevice& device = device_of(a.c);
  DeviceScope on(device.index());
  const int p = precision_of(a.c.dtype);
  const Batch c = batch_of(a.c), r = batch_of(a.a);
  const int k = r.cols;
  const size_t tau_step = static_cast<size_t>(k) * a.tau.itemsize();
  const int side = a.left ? cusolver::kSideLeft : cusolver::kSideRight;
  // The conjugate transpose for complex (unmqr), the transpose for real.
  const int trans = !a.transpose ? cusolver::kOpN : is_complex(p) ? cusolver::kOpC : cusolver::kOpT;
  const cusolver::Api& api = cusolver::api();
  std::lock_guard<std::mutex> lock(solver_mutex());
  cusolver::Handle h = solver_handle(device, device.stream());
  int lwork = 0;
  check_solver(api.ormqr_buffer_size[p](h, side, trans, c.rows, c.cols, k, a.a.data(), r.ld,
                                        a.tau.data(), a.c.data(), c.ld, &lwork),
               "ormqr_bufferSize", device, a.c.dtype);
  Tensor work = make_empty(device, a.c.dtype, {lwork > 1 ? lwork : 1});
  Tensor info = make_empty(device, DType::Int32, {1});
  for (int64_t i = 0; i < c.count; ++i) {
    device.count_command();
    check_solver(api.ormqr[p](h, side, trans, c.rows, c.cols, k, matrix(a.a, r, i), r.ld,
                              a.tau.data() + static_cast<size_t>(i) * tau_step,
                              matrix(a.c, c, i), c.ld, work.data(), lwork,
                              reinterpret_cast<int*>(info.data())),
                 is_complex(p) ? "unmqr" : "ormqr", device, a.c.dtype);
  }
}

// The first `ndim` dimensions of t, for batch offsets.
BatchLayout batch_layout(const Tensor& t, int64_t ndim) {
  AOTISHIM_CHECK(ndim <= kMaxCopyDims, "cuda lu_unpack: up to ", kMaxCopyDims,
                 " batch dimensions, got ", ndim);
  BatchLayout b;
  b.ndim = static_cast<int>(ndim);
  for (int64_t d = 0; d < ndim; ++d) {
    b.sizes[d] = t.sizes[d];
    b.strides[d] = t.strides[d];
  }
  return b;
}

void lu_unpack(const LuUnpackArgs& a) {
  CudaDevice& device = device_of(a.lu);
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const int64_t d = a.lu.dim();
  const int64_t m = a.lu.sizes[d - 2], n = a.lu.sizes[d - 1], k = m < n ? m : n;
  int64_t count = 1;
  for (int64_t i = 0; i < d - 2; ++i) count *= a.lu.sizes[i];
  if (a.unpack_pivots && a.p.numel() > 0) {
    // The swaps run on the device; a pivot outside [1, m] is read back and
    // reported with torch cpu's message before anything is written (torch
    // cuda's kernel asserts on the device instead).
    Tensor perm = make_empty(device, DType::Int32, {count, m});
    Tensor bad = make_empty(device, DType::Int32, {1});
    device.fill_zero(bad);
    const int64_t pd = a.pivots.dim();
    device.count_command();
    launch_lu_permutation(reinterpret_cast<const int32_t*>(a.pivots.data()),
                          batch_layout(a.pivots, pd - 1), a.pivots.strides[pd - 1],
                          a.pivots.sizes[pd - 1], m, count,
                          reinterpret_cast<int32_t*>(perm.data()),
                          reinterpret_cast<int32_t*>(bad.data()), stream);
    int32_t found_bad = 0;
    device.download(&found_bad, bad);
    AOTISHIM_CHECK(found_bad == 0,
                   "pivots passed to lu_unpack must be between 1 and LU.size(-2) "
                   "inclusive.Did you properly pass the result of lu_factor?");
    device.count_command();
    launch_permutation_matrix(reinterpret_cast<const int32_t*>(perm.data()), m, count,
                              a.p.data(), a.p.dtype, stream);
  }
  if (!a.unpack_data) return;
  LuSource source;
  source.data = a.lu.data();
  source.dtype = a.lu.dtype;
  source.batch = batch_layout(a.lu, d - 2);
  source.row_stride = a.lu.strides[d - 2];
  source.col_stride = a.lu.strides[d - 1];
  if (a.l.numel() > 0) {
    device.count_command();
    launch_lu_triangle(source, count, m, k, /*lower=*/true, a.l.data(), stream);
  }
  if (a.u.numel() > 0) {
    device.count_command();
    launch_lu_triangle(source, count, k, n, /*lower=*/false, a.u.data(), stream);
  }
}

AOTISHIM_REGISTER_KERNEL(ops::cholesky_solve_kernel, DeviceType::CUDA, cholesky_solve);
AOTISHIM_REGISTER_KERNEL(ops::cholesky_inverse_kernel, DeviceType::CUDA, cholesky_inverse);
AOTISHIM_REGISTER_KERNEL(ops::triangular_solve_kernel, DeviceType::CUDA, triangular_solve);
AOTISHIM_REGISTER_KERNEL(ops::geqrf_kernel, DeviceType::CUDA, geqrf);
AOTISHIM_REGISTER_KERNEL(ops::ormqr_kernel, DeviceType::CUDA, ormqr);
AOTISHIM_REGISTER_KERNEL(ops::lu_unpack_kernel, DeviceType::CUDA, lu_unpack);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
