// Strided-layout helpers every backend shares: how a matrix routine (BLAS,
// cuBLAS, MPSMatrix) can read a view as it lies, and dimension coalescing for
// strided elementwise kernels. Derived once here so the backends agree.
#pragma once

#include <cstdint>
#include <vector>

#include "aotishim/export.h"

namespace aotishim {

// A (rows x cols) view with element strides (rs, cs), as a row-major matrix
// routine reads it: either rows of unit-stride elements `ld` apart
// (transposed == false), or the transpose of such a matrix stored row-major
// (transposed == true, its rows are the view's columns). Strides of size-1
// dimensions never decide anything. ok == false: the view has no unit stride
// (or its leading dimension is too small) and must be packed first.
struct MatrixView {
  bool ok = false;
  bool transposed = false;
  int64_t ld = 1;
};
AOTISHIM_API MatrixView row_major_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs);

// The same for a column-major routine (cuBLAS): a column-major matrix is the
// row-major view of the transpose. transposed == false is op N.
inline MatrixView column_major_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return row_major_view(cols, rows, cs, rs);
}

// One dimension of an elementwise walk over several operands of one shape.
struct WalkDim {
  int64_t size;
  std::vector<int64_t> strides;  // one per operand
};

// Drops size-1 dimensions and merges a dimension into the next outer one when
// every operand steps evenly across both, outermost first. A fully dense walk
// ends as one dimension; an empty result means a single element.
AOTISHIM_API std::vector<WalkDim> coalesce_dims(const std::vector<int64_t>& sizes,
                                                const std::vector<const std::vector<int64_t>*>& strides);

// The strides of a new tensor laid out like a view that is not dense, as
// torch's empty_like / clone (preserve_format) give them: dense, with the
// dimensions in the order of the view's strides (innermost: the smallest);
// a stride-0 dimension keeps its place, equal strides put the larger size
// outside. Generated code assumes these strides for what a fallback op or a
// clone returns.
AOTISHIM_API std::vector<int64_t> dense_strides_like(const std::vector<int64_t>& sizes,
                                                     const std::vector<int64_t>& strides);

// torch's implicit memory format (suggest_memory_format): are these strides
// "like channels-last" (NHWC / NDHWC, dims ordered by stride C < W < H (< D)
// < N)? Only 4-D and 5-D sizes can be. Ambiguous layouts (a size-1 or
// stride-0 channel dim) count as contiguous, so that a contiguous
// (N, 1, 1, 1) tensor is not taken for channels-last. Ops whose outputs
// follow their input's memory format (convolution, pooling) decide by it.
AOTISHIM_API bool strides_like_channels_last(const std::vector<int64_t>& sizes,
                                             const std::vector<int64_t>& strides);

// Channels-last strides for sizes (N, C, *spatial): C innermost, N outermost.
AOTISHIM_API std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& sizes);

}  // namespace aotishim
