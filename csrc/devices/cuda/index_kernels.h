// Indexing kernels on cuda (index_kernels.cu): index.Tensor's checks and
// gather, the elements index_put writes, masked_select and masked_scatter
// over a prefix sum of the mask, and repeat_interleave. Elements move as
// bytes of their width, so every dtype is handled alike.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/error.h"
#include "core/tensor.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

using IndexScratch = std::function<void*(size_t bytes)>;

// A tensor as the kernels walk it: element i (row-major over `sizes`) lies
// at data + offset(i, sizes, strides) elements.
struct ShapedView {
  const void* data = nullptr;
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
};

inline ShapedView shaped_view(const Tensor& t) {
  AOTISHIM_CHECK(t.dim() <= kMaxCopyDims, "cuda tensors support up to ", kMaxCopyDims,
                 " dimensions, got ", t.dim());
  ShapedView v;
  v.data = t.data();
  v.ndim = static_cast<int>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    v.sizes[d] = t.sizes[d];
    v.strides[d] = t.strides[d];
  }
  return v;
}

// What a device-side check found (device memory, zeroed by the launch that
// fills it): found != 0 when something was out of range; `where` says which
// dim (or element) and `value` what was found there. When several are bad,
// any one of them.
struct IndexProblem {
  int64_t found, where, value;
};

// One integer index of index.Tensor or index_put (int32 or int64), seen at
// the result's sizes.
struct IndexOperand {
  const void* data = nullptr;
  bool is32 = false;
  int64_t strides[kMaxCopyDims] = {};  // over the result's dims
  int64_t dim = 0;                     // the self dim it indexes
  int64_t size = 0;                    // that dim's size
  int64_t self_stride = 0;             // that dim's stride in self
};

// How each position of the result (row-major over `sizes`) addresses self:
// self_strides per result dim (0 in the dims the indices span) plus, for
// every index, its value (negative counts from the end) times its dim's
// stride.
struct IndexGeometry {
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t self_strides[kMaxCopyDims] = {};
  int count = 0;
  IndexOperand indices[kMaxCopyDims];
};

// *problem = an index outside [-size, size) of its dim (where = that dim),
// over the `numel` positions of g.
void launch_index_check(const IndexGeometry& g, int64_t numel, IndexProblem* problem,
                        cudaStream_t stream);

// out[p] = self[the element position p addresses] for every position
// (indices already checked); elements of `item` bytes, out seen at g.sizes.
void launch_index_gather(const IndexGeometry& g, int64_t numel, const void* self,
                         const ShapedView& out, size_t item, cudaStream_t stream);

// keys[p] = the offset (elements from self's data) of the element position
// p addresses, positions[p] = p; indices checked as launch_index_check does
// (a bad one's key is 0).
void launch_index_targets(const IndexGeometry& g, int64_t numel, uint64_t* keys,
                          int64_t* positions, IndexProblem* problem, cudaStream_t stream);

// positions[0] = 0 and positions[e + 1] = how many of the first e + 1
// elements of `mask` (bool, row-major over its sizes, any strides) are true.
void launch_mask_prefix(const ShapedView& mask, int64_t numel, int64_t* positions,
                        const IndexScratch& scratch, cudaStream_t stream);

// out[positions[e]] = self[e] for every element e where mask[e] (self and
// mask of one shape); out packed, elements of `item` bytes.
void launch_masked_select(const ShapedView& self, const ShapedView& mask, int64_t numel,
                          const int64_t* positions, void* out, size_t item, cudaStream_t stream);

// out[e] = mask[e] ? source[positions[e]] (source read row-major over its own
// sizes) : self[e], over the shape self, mask and out share.
void launch_masked_scatter(const ShapedView& self, const ShapedView& mask,
                           const ShapedView& source, const ShapedView& out, int64_t numel,
                           const int64_t* positions, size_t item, cudaStream_t stream);

// What repeat_interleave's read-back needs: whether a repeat is negative
// (and one such), and the total of the repeats.
struct RepeatSummary {
  int64_t negative, value, total;
};

// cumsum[i] = repeats[0] + ... + repeats[i] (n > 0 int32 or int64 repeats at
// `stride`), and *summary filled.
void launch_repeat_prefix(const void* repeats, bool is32, int64_t stride, int64_t n,
                          int64_t* cumsum, RepeatSummary* summary, const IndexScratch& scratch,
                          cudaStream_t stream);

// out[j] (int32 when is32, else int64) = the i with cumsum[i - 1] <= j <
// cumsum[i], for j < total.
void launch_repeat_fill(const int64_t* cumsum, int64_t n, int64_t total, void* out, bool is32,
                        cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
