// Reductions by target on cuda (reduce_kernels.cu): index_put and the
// scatter family group every contribution with the element it lands on
// (a stable sort of (target, position) pairs), then one thread per target
// reduces its contributions serially in index order, so results do not
// depend on scheduling; and segment_reduce.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/dtype.h"
#include "core/tensor.h"
#include "devices/cuda/index_kernels.h"

namespace aotishim {
namespace cuda {

using ReduceScratch = std::function<void*(size_t bytes)>;

// The bits that hold every element offset of t (the keys of its elements).
inline int target_key_bits(const Tensor& t) {
  uint64_t largest = 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes[d] > 0) largest += static_cast<uint64_t>((t.sizes[d] - 1) * t.strides[d]);
  int bits = 1;
  while (bits < 64 && (largest >> bits) != 0) ++bits;
  return bits;
}

// keys_out/positions_out = (keys, positions) sorted by key, stably (equal
// keys keep their positions' order); every key is below 2^key_bits.
void launch_sort_by_target(const uint64_t* keys, const int64_t* positions, uint64_t* keys_out,
                           int64_t* positions_out, int64_t n, int key_bits,
                           const ReduceScratch& scratch, cudaStream_t stream);

// For every run of equal sorted keys: target[key] = source[the run's last
// position] (positions row-major over source's sizes), elements of `item`
// bytes: the last write in index order wins.
void launch_assign_last(const uint64_t* keys, const int64_t* positions, int64_t n, void* target,
                        const ShapedView& source, size_t item, cudaStream_t stream);

// How torch cuda's index_put accumulates the values one element receives
// (its sorted-index kernels, chosen by the size of the slice each index
// moves): kSerial rounds to the dtype after every addition (slices longer
// than a warp); kSumThenAdd sums the values from zero in the compute type,
// then adds the sum to the element (slices of 2 to 32 elements);
// kWarpSum as kSumThenAdd, but 32 lanes sum every 32nd value, combined by a
// shuffle-down tree, before the rest is added in order (slices of one
// element).
enum class IndexPutSum { kSerial, kSumThenAdd, kWarpSum };

// index_put's accumulation into target[key] for every run of equal sorted
// keys (values row-major over `values`' sizes); bool accumulates as or.
void launch_index_put_accumulate(DType dtype, IndexPutSum how, const uint64_t* keys,
                                 const int64_t* positions, int64_t n, void* target,
                                 const ShapedView& values, cudaStream_t stream);

// Where scatter's index sends every position: the index (int32 or int64)
// with its sizes and strides, the target's strides, the dim and its size.
struct ScatterGeometry {
  ShapedView index;
  bool is32 = false;
  int64_t target_strides[kMaxCopyDims] = {};
  int dim = 0;
  int64_t limit = 0;
};

// keys[p] = the offset in the target of the element index position p
// (row-major) lands on, positions[p] = p; an index outside [0, limit) is
// reported (where = dim) and its key is 0.
void launch_scatter_targets(const ScatterGeometry& g, int64_t numel, uint64_t* keys,
                            int64_t* positions, IndexProblem* problem, cudaStream_t stream);

enum class ScatterKind { kSum, kProd, kMean, kAmax, kAmin };

// scatter_reduce into target[key] for every run of equal sorted keys: from
// the element (include_self) or the reduction's identity, the run's source
// values combined in order in the compute type (float for the half types),
// rounded once; mean divides by the count (self included), integers
// flooring; amax/amin propagate NaN.
void launch_scatter_reduce(DType dtype, ScatterKind kind, bool include_self,
                           const uint64_t* keys, const int64_t* positions, int64_t n, void* target,
                           const ShapedView& source, cudaStream_t stream);

enum class SegmentKind { kMax, kMean, kMin, kSum, kProd };

// What the segment check found: code 0 (all well), 1 a negative length, 2 a
// segment outside the axis, 3 lengths not covering the axis; the segment
// and its bounds.
struct SegmentProblem {
  int64_t code, segment, start, end;
};

// starts/ends (outer, count) = every segment's bounds along the axis, from
// packed lengths (outer, count) or offsets (outer, count + 1), int32 or
// int64; *problem as above (lengths must cover the axis unless unsafe).
void launch_segment_bounds(const void* segments, bool is32, bool offsets, bool unsafe,
                           int64_t outer, int64_t count, int64_t axis_size, int64_t* starts,
                           int64_t* ends, SegmentProblem* problem, cudaStream_t stream);

// out (outer, count, inner) packed = data (outer, axis_size, inner) packed
// reduced over each segment, as torch cuda computes it: in data's dtype
// (rounded after every step) from the initial value (else the identity);
// mean divides by the length (NaN for an empty segment without an initial
// value). Data of one dimension (outer == inner == 1) is reduced by CUB's
// segmented reduce, as torch cuda reduces it.
void launch_segment_reduce(DType dtype, SegmentKind kind, const void* data, void* out,
                           const int64_t* starts, const int64_t* ends, int64_t outer,
                           int64_t count, int64_t inner, int64_t axis_size, bool one_dim,
                           bool has_initial, double initial, const ReduceScratch& scratch,
                           cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
