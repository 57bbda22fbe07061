// LAPACK-backed linear algebra (ops/linalg.cpp): cholesky_solve,
// cholesky_inverse, triangular_solve, geqrf, ormqr, and lu_unpack.
//
// Validation broadcasts the batch dimensions and copies every operand a
// routine overwrites or reads as a matrix into a fresh tensor in torch's
// batched column-major layout (each matrix Fortran-ordered, the matrices
// one after another: strides (..., rows * cols, 1, rows)), the layout torch's
// CPU kernels return. A kernel then walks the batch: matrix i of such a
// tensor starts i * rows * cols elements in, its leading dimension is
// max(1, rows). Every tensor has one dtype: float32, float64, complex64 or
// complex128.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// x := A^-1 x, A = U^H U (upper) or L L^H from its factor; both
// column-major batched with the same batch count. No singularity check (as
// torch).
struct CholeskySolveArgs {
  Tensor x, factor;
  bool upper = false;
};

// a := (U^H U)^-1 (or (L L^H)^-1) in place, both triangles written. A zero
// on the factor's diagonal fails with torch's message.
struct CholeskyInverseArgs {
  Tensor a;
  bool upper = false;
};

// x := op(A)^-1 x, A triangular (op: transpose when `transpose`), unit
// diagonal assumed when `unit_diagonal`; both column-major batched.
struct TriangularSolveArgs {
  Tensor x, a;
  bool upper = true, transpose = false, unit_diagonal = false;
};

// Householder QR of a (column-major batched, in place); tau contiguous
// (batch..., min(rows, cols)).
struct GeqrfArgs {
  Tensor a, tau;
};

// c := op(Q) c (left) or c op(Q), Q from geqrf's reflectors `a` (column-
// major batched) and `tau` (contiguous (batch..., k)); op is the conjugate
// transpose when `transpose`.
struct OrmqrArgs {
  Tensor c, a, tau;
  bool left = true, transpose = false;
};

// P, L, U from an LU factorization (LU: any strides; pivots int32, any
// strides, (batch..., k) with k <= min(m, n), values checked in [1, m]).
// p (batch..., m, m), l (batch..., m, min(m, n)), u (batch..., min(m, n), n)
// contiguous; a tensor not asked for is absent (numel 0) and not written.
struct LuUnpackArgs {
  Tensor lu, pivots, p, l, u;
  bool unpack_data = true, unpack_pivots = true;
};

namespace ops {
AOTISHIM_API extern Op<void(const CholeskySolveArgs&)> cholesky_solve_kernel;
AOTISHIM_API extern Op<void(const CholeskyInverseArgs&)> cholesky_inverse_kernel;
AOTISHIM_API extern Op<void(const TriangularSolveArgs&)> triangular_solve_kernel;
AOTISHIM_API extern Op<void(const GeqrfArgs&)> geqrf_kernel;
AOTISHIM_API extern Op<void(const OrmqrArgs&)> ormqr_kernel;
AOTISHIM_API extern Op<void(const LuUnpackArgs&)> lu_unpack_kernel;
}  // namespace ops

}  // namespace aotishim
