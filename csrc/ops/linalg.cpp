// cholesky_solve, cholesky_inverse, triangular_solve, geqrf, ormqr and
// lu_unpack: torch's argument checks and messages, batch broadcasting, the
// outputs in torch's layouts, then the device's kernel on column-major
// copies (see ops/linalg.h).
#include "ops/linalg.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

bool linalg_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Complex64 ||
         d == DType::Complex128;
}

void check_dtype(const char* op, const Tensor& t) {
  AOTISHIM_CHECK(linalg_dtype(t.dtype), op, ": unsupported dtype ", dtype_name(t.dtype),
                 " (float32, float64, complex64 and complex128)");
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  AOTISHIM_CHECK(&a.device() == &b.device(), op, ": tensors are on different devices (",
                 a.device().name(), " and ", b.device().name(), ")");
}

std::vector<int64_t> batch_of(const Tensor& t) {
  return std::vector<int64_t>(t.sizes.begin(), t.sizes.end() - 2);
}

// torch's broadcast of two batch shapes, with its message.
std::vector<int64_t> broadcast_batch(const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    AOTISHIM_CHECK(da == db || da == 1 || db == 1, "The size of tensor a (", da,
                   ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> with_matrix(std::vector<int64_t> batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// torch's batched column-major strides: contiguous strides of the sizes
// with the last two swapped (sizes of 0 counted as 1), swapped back.
std::vector<int64_t> column_major_strides(std::vector<int64_t> sizes) {
  const size_t n = sizes.size();
  std::swap(sizes[n - 1], sizes[n - 2]);
  std::vector<int64_t> strides = contiguous_strides(sizes);
  std::swap(strides[n - 1], strides[n - 2]);
  return strides;
}

// A fresh column-major batched tensor of `sizes` holding src broadcast to them.
Tensor column_major_copy(const Tensor& src, const std::vector<int64_t>& sizes) {
  Tensor dst = make_empty(src.device(), src.dtype, sizes, column_major_strides(sizes));
  copy_tensor(dst, src);
  return dst;
}

// torch's linearSolveCheckInputs: b and A of one dtype, A square, the
// matrices' sizes compatible.
void check_solve_inputs(const char* name, const Tensor& b, const Tensor& a) {
  AOTISHIM_CHECK(b.dtype == a.dtype, "Expected b and A to have the same dtype, but found b of type ",
                 dtype_name(b.dtype), " and A of type ", dtype_name(a.dtype), " instead.");
  const int64_t n = a.sizes[a.dim() - 1];
  AOTISHIM_CHECK(a.sizes[a.dim() - 2] == n, "A must be batches of square matrices, but they are ",
                 a.sizes[a.dim() - 2], " by ", n, " matrices");
  AOTISHIM_CHECK(b.sizes[b.dim() - 2] == n, "Incompatible matrix sizes for ", name,
                 ": each A matrix is ", n, " by ", n, " but each b matrix is ",
                 b.sizes[b.dim() - 2], " by ", b.sizes[b.dim() - 1]);
}

}  // namespace

namespace ops {

Op<void(const CholeskySolveArgs&)> cholesky_solve_kernel("cholesky_solve");
Op<void(const CholeskyInverseArgs&)> cholesky_inverse_kernel("cholesky_inverse");
Op<void(const TriangularSolveArgs&)> triangular_solve_kernel("triangular_solve");
Op<void(const GeqrfArgs&)> geqrf_kernel("geqrf");
Op<void(const OrmqrArgs&)> ormqr_kernel("ormqr");
Op<void(const LuUnpackArgs&)> lu_unpack_kernel("lu_unpack");

void cholesky_solve(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle input2_h,
                    int32_t upper, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto b_p = call.tensor(self_h, "self"), a_p = call.tensor(input2_h, "input2");
  const Tensor &b = *b_p, &a = *a_p;
  check_same_device(call.op, b, a);
  AOTISHIM_CHECK(b.dim() >= 2, "b should have at least 2 dimensions, but has ", b.dim(),
                 " dimensions instead");
  AOTISHIM_CHECK(a.dim() >= 2, "u should have at least 2 dimensions, but has ", a.dim(),
                 " dimensions instead");
  check_solve_inputs("cholesky_solve", b, a);
  check_dtype(call.op, b);
  const std::vector<int64_t> batch = broadcast_batch(batch_of(b), batch_of(a));
  const int64_t n = a.sizes[a.dim() - 1];
  CholeskySolveArgs args;
  args.x = column_major_copy(b, with_matrix(batch, n, b.sizes[b.dim() - 1]));
  args.factor = column_major_copy(a, with_matrix(batch, n, n));
  args.upper = upper != 0;
  if (args.x.numel() > 0) cholesky_solve_kernel.run(b.device(), args);
  *ret0 = register_tensor(args.x);
}

void cholesky_inverse(const OpCall& call, AtenTensorHandle self_h, int32_t upper,
                      AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto a_p = call.tensor(self_h, "self");
  const Tensor& a = *a_p;
  AOTISHIM_CHECK(a.dim() >= 2,
                 "cholesky_inverse: The input tensor A must have at least 2 dimensions.");
  const int64_t n = a.sizes[a.dim() - 1];
  AOTISHIM_CHECK(a.sizes[a.dim() - 2] == n,
                 "cholesky_inverse: A must be batches of square matrices, but they are ",
                 a.sizes[a.dim() - 2], " by ", n, " matrices");
  check_dtype(call.op, a);
  CholeskyInverseArgs args;
  args.a = column_major_copy(a, a.sizes);
  args.upper = upper != 0;
  if (args.a.numel() > 0) cholesky_inverse_kernel.run(a.device(), args);
  *ret0 = register_tensor(args.a);
}

void triangular_solve(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle a_h,
                      int32_t upper, int32_t transpose, int32_t unitriangular,
                      AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  auto b_p = call.tensor(self_h, "self"), a_p = call.tensor(a_h, "A");
  const Tensor &b = *b_p, &a = *a_p;
  check_same_device(call.op, b, a);
  AOTISHIM_CHECK(b.dim() >= 2,
                 "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has ",
                 b.dim(), " dimensions instead");
  AOTISHIM_CHECK(a.dim() >= 2,
                 "torch.triangular_solve: Expected A to have at least 2 dimensions, but it has ",
                 a.dim(), " dimensions instead");
  check_solve_inputs("triangular_solve", b, a);
  check_dtype(call.op, b);
  const std::vector<int64_t> batch = broadcast_batch(batch_of(b), batch_of(a));
  const int64_t n = a.sizes[a.dim() - 1];
  TriangularSolveArgs args;
  args.x = column_major_copy(b, with_matrix(batch, n, b.sizes[b.dim() - 1]));
  args.a = column_major_copy(a, with_matrix(batch, n, n));  // also the second output
  args.upper = upper != 0;
  args.transpose = transpose != 0;
  args.unit_diagonal = unitriangular != 0;
  if (args.x.numel() > 0) triangular_solve_kernel.run(b.device(), args);
  *ret0 = register_tensor(args.x);
  *ret1 = register_tensor(args.a);
}

void geqrf(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle* ret0,
           AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  auto a_p = call.tensor(self_h, "self");
  const Tensor& a = *a_p;
  AOTISHIM_CHECK(a.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  check_dtype(call.op, a);
  const int64_t m = a.sizes[a.dim() - 2], n = a.sizes[a.dim() - 1];
  GeqrfArgs args;
  args.a = column_major_copy(a, a.sizes);
  std::vector<int64_t> tau_sizes = batch_of(a);
  tau_sizes.push_back(std::min(m, n));
  args.tau = make_empty(a.device(), a.dtype, tau_sizes);
  if (args.a.numel() > 0) geqrf_kernel.run(a.device(), args);
  *ret0 = register_tensor(args.a);
  *ret1 = register_tensor(args.tau);
}

void ormqr(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle input2_h,
           AtenTensorHandle input3_h, int32_t left, int32_t transpose, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto a_p = call.tensor(self_h, "self"), tau_p = call.tensor(input2_h, "input2");
  auto c_p = call.tensor(input3_h, "input3");
  const Tensor &a = *a_p, &tau = *tau_p, &c = *c_p;
  check_same_device(call.op, a, tau);
  check_same_device(call.op, a, c);
  AOTISHIM_CHECK(a.dim() >= 2, "torch.ormqr: input must have at least 2 dimensions.");
  AOTISHIM_CHECK(c.dim() >= 2, "torch.ormqr: other must have at least 2 dimensions.");
  const int64_t side_dim = left ? c.dim() - 2 : c.dim() - 1;
  const char* side_name = left ? "-2" : "-1";
  const int64_t k = tau.dim() > 0 ? tau.sizes[tau.dim() - 1] : -1;
  AOTISHIM_CHECK(tau.dim() == a.dim() - 1,
                 "torch.ormqr: input.dim() must be greater than tau.dim() by 1");
  AOTISHIM_CHECK(c.dim() == a.dim(), "torch.ormqr: input.dim() must be equal to other.dim()");
  AOTISHIM_CHECK(c.sizes[side_dim] == a.sizes[a.dim() - 2], "torch.ormqr: other.shape[",
                 side_name, "] must be equal to input.shape[-2]");
  AOTISHIM_CHECK(k == std::min(c.sizes[side_dim], a.sizes[a.dim() - 1]),
                 "torch.ormqr: tau.shape[-1] must be equal to min(other.shape[", side_name,
                 "], input.shape[-1])");
  const std::vector<int64_t> batch = batch_of(a);
  AOTISHIM_CHECK(std::vector<int64_t>(tau.sizes.begin(), tau.sizes.end() - 1) == batch,
                 "torch.ormqr: Expected batch dimensions of tau to be equal to input.shape[:-2], "
                 "but got ", shape_string(std::vector<int64_t>(tau.sizes.begin(), tau.sizes.end() - 1)));
  AOTISHIM_CHECK(batch_of(c) == batch,
                 "torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], "
                 "but got ", shape_string(batch_of(c)));
  AOTISHIM_CHECK(tau.dtype == a.dtype, "torch.ormqr: Expected input and tau to have the same "
                 "dtype, but input has dtype ", dtype_name(a.dtype), " and tau has dtype ",
                 dtype_name(tau.dtype));
  AOTISHIM_CHECK(c.dtype == a.dtype, "torch.ormqr: Expected input and other to have the same "
                 "dtype, but input has dtype ", dtype_name(a.dtype), " and other has dtype ",
                 dtype_name(c.dtype));
  check_dtype(call.op, a);
  OrmqrArgs args;
  args.c = column_major_copy(c, c.sizes);
  // Only the first k columns hold reflectors.
  std::vector<int64_t> a_sizes = a.sizes;
  a_sizes.back() = k;
  args.a = column_major_copy(make_view(a, a_sizes, a.strides, a.storage_offset), a_sizes);
  args.tau = make_empty(tau.device(), tau.dtype, tau.sizes);
  copy_tensor(args.tau, tau);
  args.left = left != 0;
  args.transpose = transpose != 0;
  if (args.c.numel() > 0 && k > 0) ormqr_kernel.run(c.device(), args);
  *ret0 = register_tensor(args.c);
}

void lu_unpack(const OpCall& call, AtenTensorHandle lu_h, AtenTensorHandle pivots_h,
               int32_t unpack_data, int32_t unpack_pivots, AtenTensorHandle* ret0,
               AtenTensorHandle* ret1, AtenTensorHandle* ret2) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  require_out(ret2, "ret2");
  auto lu_p = call.tensor(lu_h, "LU_data"), piv_p = call.tensor(pivots_h, "LU_pivots");
  const Tensor &lu = *lu_p, &piv = *piv_p;
  check_same_device(call.op, lu, piv);
  AOTISHIM_CHECK(lu.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. "
                 "Got size: ", shape_string(lu.sizes), " instead");
  check_dtype(call.op, lu);
  AOTISHIM_CHECK(piv.dtype == DType::Int32,
                 "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                 "torch.int32 dtype.");
  const int64_t m = lu.sizes[lu.dim() - 2], n = lu.sizes[lu.dim() - 1], k = std::min(m, n);
  const std::vector<int64_t> batch = batch_of(lu);
  AOTISHIM_CHECK(piv.dim() == lu.dim() - 1 &&
                     std::vector<int64_t>(piv.sizes.begin(), piv.sizes.end() - 1) == batch &&
                     piv.sizes.back() <= k,
                 "torch.lu_unpack: LU_pivots of sizes ", shape_string(piv.sizes),
                 " do not fit LU_data of sizes ", shape_string(lu.sizes),
                 " (expected LU_data.shape[:-2] + (at most min(m, n) = ", k, ",))");
  LuUnpackArgs args;
  args.lu = lu;
  args.pivots = piv;
  args.unpack_data = unpack_data != 0;
  args.unpack_pivots = unpack_pivots != 0;
  Device& device = lu.device();
  args.p = make_empty(device, lu.dtype, args.unpack_pivots ? with_matrix(batch, m, m)
                                                           : std::vector<int64_t>{0});
  args.l = make_empty(device, lu.dtype, args.unpack_data ? with_matrix(batch, m, k)
                                                         : std::vector<int64_t>{0});
  args.u = make_empty(device, lu.dtype, args.unpack_data ? with_matrix(batch, k, n)
                                                         : std::vector<int64_t>{0});
  if (args.p.numel() > 0 || args.l.numel() > 0 || args.u.numel() > 0)
    lu_unpack_kernel.run(device, args);
  *ret0 = register_tensor(args.p);
  *ret1 = register_tensor(args.l);
  *ret2 = register_tensor(args.u);
}

}  // namespace ops
}  // namespace aotishim
