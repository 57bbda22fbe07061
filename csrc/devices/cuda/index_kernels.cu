// Indexing kernels: one thread per element with grid-stride loops. Index
// values are checked on the device and reported through an IndexProblem
// (the host reads it back before anything is written, as the cpu kernels
// check first); masks become output slots through CUB's inclusive sum.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/index_kernels.h"
#include "devices/cuda/launch_grid.h"

namespace aotishim {
namespace cuda {

namespace {

// complex128 moves as two 8-byte words: borrowed memory is only 8-aligned.
struct Bytes16 {
  uint64_t lo, hi;
};

__host__ __device__ __forceinline__ int64_t offset_of(int64_t i, const ShapedView& v) {
  int64_t off = 0;
  for (int d = v.ndim - 1; d >= 0; --d) {
    off += (i % v.sizes[d]) * v.strides[d];
    i /= v.sizes[d];
  }
  return off;
}

__device__ __forceinline__ int64_t load_index(const void* data, bool is32, int64_t off) {
  return is32 ? static_cast<const int32_t*>(data)[off] : static_cast<const int64_t*>(data)[off];
}

__device__ void report(IndexProblem* problem, int64_t where, int64_t value) {
  if (atomicCAS(reinterpret_cast<unsigned long long*>(&problem->found), 0ULL, 1ULL) == 0ULL) {
    problem->where = where;
    problem->value = value;
  }
}

// The offset in self of the element position p addresses; false (with the
// bad index reported when `problem` is given) if an index is out of range.
__device__ bool resolve(const IndexGeometry& g, int64_t p, int64_t* self_off,
                        IndexProblem* problem) {
  int64_t index_off[kMaxCopyDims] = {};
  int64_t off = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t c = p % g.sizes[d];
    p /= g.sizes[d];
    off += c * g.self_strides[d];
    for (int k = 0; k < g.count; ++k) index_off[k] += c * g.indices[k].strides[d];
  }
  for (int k = 0; k < g.count; ++k) {
    const IndexOperand& ix = g.indices[k];
    int64_t i = load_index(ix.data, ix.is32, index_off[k]);
    if (i < -ix.size || i >= ix.size) {
      if (problem != nullptr) report(problem, ix.dim, i);
      return false;
    }
    if (i < 0) i += ix.size;
    off += i * ix.self_stride;
  }
  *self_off = off;
  return true;
}

__global__ void index_check_kernel(IndexGeometry g, int64_t numel, IndexProblem* problem) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < numel;
       p += step) {
    int64_t off;
    resolve(g, p, &off, problem);
  }
}

template <typename Unit>
__global__ void index_gather_kernel(IndexGeometry g, int64_t numel, const Unit* self,
                                    ShapedView out) {
  Unit* dst = static_cast<Unit*>(const_cast<void*>(out.data));
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < numel;
       p += step) {
    int64_t off;
    if (resolve(g, p, &off, nullptr)) dst[offset_of(p, out)] = self[off];
  }
}

__global__ void index_targets_kernel(IndexGeometry g, int64_t numel, uint64_t* keys,
                                     int64_t* positions, IndexProblem* problem) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < numel;
       p += step) {
    int64_t off = 0;
    if (!resolve(g, p, &off, problem)) off = 0;
    keys[p] = static_cast<uint64_t>(off);
    positions[p] = p;
  }
}

// 1 where mask's element e (row-major) is true.
struct MaskFlag {
  ShapedView mask;
  __host__ __device__ int64_t operator()(int64_t e) const {
    return static_cast<const uint8_t*>(mask.data)[offset_of(e, mask)] != 0 ? 1 : 0;
  }
};

template <typename Unit>
__global__ void masked_select_kernel(ShapedView self, ShapedView mask, int64_t numel,
                                     const int64_t* positions, Unit* out) {
  const Unit* src = static_cast<const Unit*>(self.data);
  const uint8_t* m = static_cast<const uint8_t*>(mask.data);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < numel;
       e += step) {
    if (m[offset_of(e, mask)] != 0) out[positions[e]] = src[offset_of(e, self)];
  }
}

template <typename Unit>
__global__ void masked_scatter_kernel(ShapedView self, ShapedView mask, ShapedView source,
                                      ShapedView out, int64_t numel, const int64_t* positions) {
  const Unit* from_self = static_cast<const Unit*>(self.data);
  const Unit* from_source = static_cast<const Unit*>(source.data);
  const uint8_t* m = static_cast<const uint8_t*>(mask.data);
  Unit* dst = static_cast<Unit*>(const_cast<void*>(out.data));
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < numel;
       e += step) {
    dst[offset_of(e, out)] = m[offset_of(e, mask)] != 0
                                 ? from_source[offset_of(positions[e], source)]
                                 : from_self[offset_of(e, self)];
  }
}

// repeats[i] as int64.
struct RepeatAt {
  const void* data;
  bool is32;
  int64_t stride;
  __host__ __device__ int64_t operator()(int64_t i) const {
    return is32 ? static_cast<const int32_t*>(data)[i * stride]
                : static_cast<const int64_t*>(data)[i * stride];
  }
};

__global__ void repeat_summary_kernel(RepeatAt repeats, int64_t n, const int64_t* cumsum,
                                      RepeatSummary* summary) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (start == 0) summary->total = cumsum[n - 1];
  for (int64_t i = start; i < n; i += step) {
    const int64_t r = repeats(i);
    if (r < 0 && atomicCAS(reinterpret_cast<unsigned long long*>(&summary->negative), 0ULL,
                           1ULL) == 0ULL)
      summary->value = r;
  }
}

template <typename T>
__global__ void repeat_fill_kernel(const int64_t* cumsum, int64_t n, int64_t total, T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    // The first i whose running total passes j (cumsum never decreases).
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (cumsum[mid] > j) hi = mid;
      else lo = mid + 1;
    }
    out[j] = static_cast<T>(lo);
  }
}

template <typename Fn>
void by_width(size_t item, const char* what, Fn&& fn) {
  switch (item) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    case 16: return fn(Bytes16{});
    default: break;
  }
  fail(str("cuda ", what, ": unsupported element size ", item));
}

}  // namespace

void launch_index_check(const IndexGeometry& g, int64_t numel, IndexProblem* problem,
                        cudaStream_t stream) {
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(problem, 0, sizeof(IndexProblem), stream));
  if (numel > 0) index_check_kernel<<<blocks_for(numel), kThreads, 0, stream>>>(g, numel, problem);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_index_gather(const IndexGeometry& g, int64_t numel, const void* self,
                         const ShapedView& out, size_t item, cudaStream_t stream) {
  if (numel == 0) return;
  discard_earlier_error();
  by_width(item, "index", [&](auto unit) {
    using Unit = decltype(unit);
    index_gather_kernel<Unit><<<blocks_for(numel), kThreads, 0, stream>>>(
        g, numel, static_cast<const Unit*>(self), out);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_index_targets(const IndexGeometry& g, int64_t numel, uint64_t* keys,
                          int64_t* positions, IndexProblem* problem, cudaStream_t stream) {
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(problem, 0, sizeof(IndexProblem), stream));
  if (numel > 0)
    index_targets_kernel<<<blocks_for(numel), kThreads, 0, stream>>>(g, numel, keys, positions,
                                                                     problem);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_mask_prefix(const ShapedView& mask, int64_t numel, int64_t* positions,
                        const IndexScratch& scratch, cudaStream_t stream) {
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(positions, 0, sizeof(int64_t), stream));
  if (numel == 0) return;
  auto flags = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                               MaskFlag{mask});
  size_t bytes = 0;
  AOTISHIM_CUDA_CHECK(
      cub::DeviceScan::InclusiveSum(nullptr, bytes, flags, positions + 1, numel, stream));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(
      cub::DeviceScan::InclusiveSum(temp, bytes, flags, positions + 1, numel, stream));
}

void launch_masked_select(const ShapedView& self, const ShapedView& mask, int64_t numel,
                          const int64_t* positions, void* out, size_t item, cudaStream_t stream) {
  if (numel == 0) return;
  discard_earlier_error();
  by_width(item, "masked_select", [&](auto unit) {
    using Unit = decltype(unit);
    masked_select_kernel<Unit><<<blocks_for(numel), kThreads, 0, stream>>>(
        self, mask, numel, positions, static_cast<Unit*>(out));
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_masked_scatter(const ShapedView& self, const ShapedView& mask,
                           const ShapedView& source, const ShapedView& out, int64_t numel,
                           const int64_t* positions, size_t item, cudaStream_t stream) {
  if (numel == 0) return;
  discard_earlier_error();
  by_width(item, "masked_scatter", [&](auto unit) {
    using Unit = decltype(unit);
    masked_scatter_kernel<Unit><<<blocks_for(numel), kThreads, 0, stream>>>(
        self, mask, source, out, numel, positions);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_repeat_prefix(const void* repeats, bool is32, int64_t stride, int64_t n,
                          int64_t* cumsum, RepeatSummary* summary, const IndexScratch& scratch,
                          cudaStream_t stream) {
  AOTISHIM_CHECK(n > 0, "cuda repeat_interleave: no repeats to sum");
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(summary, 0, sizeof(RepeatSummary), stream));
  const RepeatAt at{repeats, is32, stride};
  auto values = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), at);
  size_t bytes = 0;
  AOTISHIM_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, values, cumsum, n, stream));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, values, cumsum, n, stream));
  repeat_summary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(at, n, cumsum, summary);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_repeat_fill(const int64_t* cumsum, int64_t n, int64_t total, void* out, bool is32,
                        cudaStream_t stream) {
  if (total == 0) return;
  discard_earlier_error();
  if (is32) {
    repeat_fill_kernel<int32_t><<<blocks_for(total), kThreads, 0, stream>>>(
        cumsum, n, total, static_cast<int32_t*>(out));
  } else {
    repeat_fill_kernel<int64_t><<<blocks_for(total), kThreads, 0, stream>>>(
        cumsum, n, total, static_cast<int64_t*>(out));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
