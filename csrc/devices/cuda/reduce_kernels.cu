// Reductions by target and segment_reduce. Contributions are grouped by the
// element they land on with CUB's (stable) radix sort, so one thread owns
// each target and combines its contributions serially in index order: no
// atomics, and the same answer on every run. torch cuda's scatter_reduce
// combines with atomics in whatever order its threads run (float results
// differ by rounding from run to run); this order is the cpu kernel's.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/std/limits>
#include <type_traits>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/reduce_kernels.h"

namespace aotishim {
namespace cuda {

namespace {

struct Bytes16 {
  uint64_t lo, hi;
};

__device__ __forceinline__ int64_t offset_of(int64_t i, const ShapedView& v) {
  int64_t off = 0;
  for (int d = v.ndim - 1; d >= 0; --d) {
    off += (i % v.sizes[d]) * v.strides[d];
    i /= v.sizes[d];
  }
  return off;
}

// ---- how kernels compute with an element type: the half types in float,
// floats in themselves, integers in 64 bits (wrapping; narrowed when stored)
template <typename S, typename Enable = void> struct Num;

// S computed in Acc; the half types convert with their intrinsics.
template <typename S, typename A = S> struct FloatNum {
  using Acc = A;
  static constexpr bool floating = true;
  __host__ __device__ static Acc load(S v) {
    if constexpr (std::is_same_v<S, __half>) return __half2float(v);
    else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __bfloat162float(v);
    else return v;
  }
  __host__ __device__ static S store(Acc v) {
    if constexpr (std::is_same_v<S, __half>) return __float2half_rn(v);
    else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __float2bfloat16_rn(v);
    else return v;
  }
  __host__ __device__ static Acc add(Acc a, Acc b) { return a + b; }
  __host__ __device__ static Acc mul(Acc a, Acc b) { return a * b; }
  __host__ __device__ static bool is_nan(Acc v) { return v != v; }
  __host__ __device__ static Acc lowest() { return -::cuda::std::numeric_limits<Acc>::infinity(); }
  __host__ __device__ static Acc highest() { return ::cuda::std::numeric_limits<Acc>::infinity(); }
  __host__ __device__ static Acc nan() { return ::cuda::std::numeric_limits<Acc>::quiet_NaN(); }
};
template <> struct Num<float> : FloatNum<float> {};
template <> struct Num<double> : FloatNum<double> {};
template <> struct Num<__half> : FloatNum<__half, float> {};
template <> struct Num<__nv_bfloat16> : FloatNum<__nv_bfloat16, float> {};
template <typename S> struct Num<S, std::enable_if_t<std::is_integral<S>::value>> {
  using Acc = std::conditional_t<std::is_signed<S>::value, int64_t, uint64_t>;
  static constexpr bool floating = false;
  __host__ __device__ static Acc load(S v) { return static_cast<Acc>(v); }
  __host__ __device__ static S store(Acc v) { return static_cast<S>(v); }
  // In unsigned arithmetic: wrapping, as the dtype's own arithmetic wraps.
  __host__ __device__ static Acc add(Acc a, Acc b) {
    return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  __host__ __device__ static Acc mul(Acc a, Acc b) {
    return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  __host__ __device__ static bool is_nan(Acc) { return false; }
  __host__ __device__ static Acc lowest() { return static_cast<Acc>(::cuda::std::numeric_limits<S>::lowest()); }
  __host__ __device__ static Acc highest() { return static_cast<Acc>(::cuda::std::numeric_limits<S>::max()); }
  __host__ __device__ static Acc nan() { return 0; }
};

// Calls fn(S{}) with the storage type of dtype (bool as uint8_t 0/1).
template <typename Fn>
bool visit_numeric(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: fn(float{}); return true;
    case DType::Float64: fn(double{}); return true;
    case DType::Float16: fn(__half{}); return true;
    case DType::BFloat16: fn(__nv_bfloat16{}); return true;
    case DType::Int64: fn(int64_t{}); return true;
    case DType::Int32: fn(int32_t{}); return true;
    case DType::Int16: fn(int16_t{}); return true;
    case DType::Int8: fn(int8_t{}); return true;
    case DType::UInt8: fn(uint8_t{}); return true;
    case DType::UInt16: fn(uint16_t{}); return true;
    case DType::UInt32: fn(uint32_t{}); return true;
    case DType::UInt64: fn(uint64_t{}); return true;
    default: return false;
  }
}

// ---- runs of equal sorted keys
__device__ __forceinline__ bool run_starts_at(const uint64_t* keys, int64_t i) {
  return i == 0 || keys[i] != keys[i - 1];
}
__device__ __forceinline__ int64_t run_end(const uint64_t* keys, int64_t i, int64_t n) {
  int64_t j = i + 1;
  while (j < n && keys[j] == keys[i]) ++j;
  return j;
}

template <typename Unit>
__global__ void assign_last_kernel(const uint64_t* keys, const int64_t* positions, int64_t n,
                                   Unit* target, ShapedView source) {
  const Unit* src = static_cast<const Unit*>(source.data);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    if (!run_starts_at(keys, i)) continue;
    const int64_t last = run_end(keys, i, n) - 1;
    target[keys[i]] = src[offset_of(positions[last], source)];
  }
}

template <typename S>
__global__ void index_put_accumulate_kernel(IndexPutSum how, const uint64_t* keys,
                                            const int64_t* positions, int64_t n, S* target,
                                            ShapedView values) {
  using N = Num<S>;
  using Acc = typename N::Acc;
  const S* src = static_cast<const S*>(values.data);
  auto value = [&](int64_t j) { return N::load(src[offset_of(positions[j], values)]); };
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    if (!run_starts_at(keys, i)) continue;
    const int64_t end = run_end(keys, i, n);
    S* t = target + keys[i];
    if (how == IndexPutSum::kSerial) {
      for (int64_t j = i; j < end; ++j) *t = N::store(N::add(N::load(*t), value(j)));
      continue;
    }
    Acc sum = Acc(0);
    int64_t j = i;
    if (how == IndexPutSum::kWarpSum && end - i >= 32) {
      // Lane l sums values l, l + 32, ... of the whole warp passes; the
      // lanes then combine pairwise at distances 16, 8, 4, 2, 1.
      const int64_t passes = (end - i) / 32;
      Acc lane[32];
      for (int l = 0; l < 32; ++l) {
        lane[l] = Acc(0);
        for (int64_t q = 0; q < passes; ++q) lane[l] = N::add(lane[l], value(i + q * 32 + l));
      }
      for (int distance = 16; distance > 0; distance /= 2)
        for (int l = 0; l < distance; ++l) lane[l] = N::add(lane[l], lane[l + distance]);
      sum = lane[0];
      j = i + passes * 32;
    }
    for (; j < end; ++j) sum = N::add(sum, value(j));
    *t = N::store(N::add(N::load(*t), sum));
  }
}

__global__ void index_put_or_kernel(const uint64_t* keys, const int64_t* positions, int64_t n,
                                    uint8_t* target, ShapedView values) {
  const uint8_t* src = static_cast<const uint8_t*>(values.data);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    if (!run_starts_at(keys, i)) continue;
    const int64_t end = run_end(keys, i, n);
    bool any = target[keys[i]] != 0;
    for (int64_t j = i; j < end; ++j) any = any || src[offset_of(positions[j], values)] != 0;
    target[keys[i]] = any ? 1 : 0;
  }
}

__global__ void scatter_targets_kernel(ScatterGeometry g, int64_t numel, uint64_t* keys,
                                       int64_t* positions, IndexProblem* problem) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < numel;
       p += step) {
    int64_t rest = p, index_off = 0, key = 0;
    for (int d = g.index.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % g.index.sizes[d];
      rest /= g.index.sizes[d];
      index_off += c * g.index.strides[d];
      if (d != g.dim) key += c * g.target_strides[d];
    }
    const int64_t i = g.is32 ? static_cast<const int32_t*>(g.index.data)[index_off]
                             : static_cast<const int64_t*>(g.index.data)[index_off];
    if (i < 0 || i >= g.limit) {
      if (atomicCAS(reinterpret_cast<unsigned long long*>(&problem->found), 0ULL, 1ULL) == 0ULL) {
        problem->where = g.dim;
        problem->value = i;
      }
      key = 0;
    } else if (g.index.ndim > 0) {
      key += i * g.target_strides[g.dim];
    }
    keys[p] = static_cast<uint64_t>(key);
    positions[p] = p;
  }
}

template <typename S>
__global__ void scatter_reduce_kernel(ScatterKind kind, bool include_self, const uint64_t* keys,
                                      const int64_t* positions, int64_t n, S* target,
                                      ShapedView source) {
  using N = Num<S>;
  using Acc = typename N::Acc;
  const S* src = static_cast<const S*>(source.data);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    if (!run_starts_at(keys, i)) continue;
    const int64_t end = run_end(keys, i, n);
    S* t = target + keys[i];
    Acc acc;
    int64_t count = 0;
    if (include_self) {
      acc = N::load(*t);
      count = 1;
    } else {
      acc = kind == ScatterKind::kProd   ? Acc(1)
            : kind == ScatterKind::kAmax ? N::lowest()
            : kind == ScatterKind::kAmin ? N::highest()
                                         : Acc(0);
    }
    for (int64_t j = i; j < end; ++j, ++count) {
      const Acc v = N::load(src[offset_of(positions[j], source)]);
      switch (kind) {
        case ScatterKind::kSum:
        case ScatterKind::kMean: acc = N::add(acc, v); break;
        case ScatterKind::kProd: acc = N::mul(acc, v); break;
        case ScatterKind::kAmax:
          acc = N::is_nan(v) ? v : N::is_nan(acc) ? acc : (v > acc ? v : acc);
          break;
        case ScatterKind::kAmin:
          acc = N::is_nan(v) ? v : N::is_nan(acc) ? acc : (v < acc ? v : acc);
          break;
      }
    }
    S stored = N::store(acc);
    // Mean divides the stored sum, as torch divides out after the scatter.
    if (kind == ScatterKind::kMean && count > 1) {
      const Acc x = N::load(stored);
      if constexpr (N::floating) {
        stored = N::store(x / static_cast<Acc>(count));
      } else {
        const int64_t sx = static_cast<int64_t>(x);  // the stored value, sign-extended
        int64_t q = sx / count;
        if (sx % count != 0 && sx < 0) --q;  // floor division
        stored = N::store(static_cast<Acc>(q));
      }
    }
    *t = stored;
  }
}

// ---- segment_reduce

__global__ void segment_bounds_kernel(const void* segments, bool is32, bool offsets, bool unsafe,
                                      int64_t outer, int64_t count, int64_t axis_size,
                                      int64_t* starts, int64_t* ends, SegmentProblem* problem) {
  auto seg = [&](int64_t i) {
    return is32 ? static_cast<int64_t>(static_cast<const int32_t*>(segments)[i])
                : static_cast<const int64_t*>(segments)[i];
  };
  auto report = [&](int64_t code, int64_t s, int64_t start, int64_t end) {
    if (atomicCAS(reinterpret_cast<unsigned long long*>(&problem->code), 0ULL,
                  static_cast<unsigned long long>(code)) == 0ULL) {
      problem->segment = s;
      problem->start = start;
      problem->end = end;
    }
  };
  const int64_t per_outer = offsets ? count + 1 : count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outer;
       o += step) {
    int64_t at = 0;
    bool ok = true;
    for (int64_t s = 0; s < count && ok; ++s) {
      int64_t start = at, end = 0;
      if (offsets) {
        start = seg(o * per_outer + s);
        end = seg(o * per_outer + s + 1);
      } else {
        end = start + seg(o * per_outer + s);
      }
      if (end < start) {
        report(1, s, start, end);
        ok = false;
      } else if (start < 0 || end > axis_size) {
        report(2, s, start, end);
        ok = false;
      }
      starts[o * count + s] = ok ? start : 0;
      ends[o * count + s] = ok ? end : 0;
      at = end;
    }
    if (ok && !offsets && !unsafe && at != axis_size) report(3, count, 0, at);
  }
}

// x as torch's scalar_t holds it (through float, then the half types round).
template <typename S> S in_dtype(double x) {
  return Num<S>::store(static_cast<typename Num<S>::Acc>(static_cast<float>(x)));
}
template <> double in_dtype<double>(double x) { return x; }

template <typename S> S identity_of(SegmentKind kind) {
  using N = Num<S>;
  switch (kind) {
    case SegmentKind::kMax: return N::store(N::lowest());
    case SegmentKind::kMin: return N::store(N::highest());
    case SegmentKind::kProd: return N::store(1);
    default: return N::store(0);
  }
}

// One step of the reduction in S, as torch's scalar_t arithmetic rounds it.
template <typename S> __device__ S combine(SegmentKind kind, S acc, S x) {
  using N = Num<S>;
  const auto a = N::load(acc), b = N::load(x);
  switch (kind) {
    case SegmentKind::kMax: return N::is_nan(b) ? x : (a < b ? x : acc);
    case SegmentKind::kMin: return N::is_nan(b) ? x : (b < a ? x : acc);
    case SegmentKind::kProd: return N::store(a * b);
    default: return N::store(a + b);
  }
}

// mean's last step: the sum over the length (converted to S first, as
// torch's scalar_t / int64 converts it), NaN for an empty segment without
// an initial value, NaN sums left as they are.
template <typename S> __device__ S finish_mean(S acc, int64_t length, bool has_initial) {
  using N = Num<S>;
  if (length == 0) return has_initial ? acc : N::store(N::nan());
  if (N::is_nan(N::load(acc))) return acc;
  const S len = N::store(static_cast<typename N::Acc>(length));
  return N::store(N::load(acc) / N::load(len));
}

template <typename S>
__global__ void segment_reduce_kernel(SegmentKind kind, const S* data, S* out,
                                      const int64_t* starts, const int64_t* ends, int64_t outer,
                                      int64_t count, int64_t inner, int64_t axis_size,
                                      bool has_initial, S initial) {
  const int64_t total = outer * count * inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t i = e % inner, row = e / inner;  // row = o * count + s
    const int64_t o = row / count;
    S acc = initial;
    for (int64_t j = starts[row]; j < ends[row]; ++j)
      acc = combine<S>(kind, acc, data[(o * axis_size + j) * inner + i]);
    if (kind == SegmentKind::kMean) acc = finish_mean<S>(acc, ends[row] - starts[row], has_initial);
    out[e] = acc;
  }
}

// CUB's operators for one-dimensional data, with torch cuda's NaN rules.
template <typename S> struct SegmentOp {
  SegmentKind kind;
  __device__ S operator()(const S& a, const S& b) const {
    using N = Num<S>;
    const auto x = N::load(a), y = N::load(b);
    switch (kind) {
      case SegmentKind::kMax: return N::is_nan(x) ? a : N::is_nan(y) ? b : (x < y ? b : a);
      case SegmentKind::kMin: return N::is_nan(x) ? a : N::is_nan(y) ? b : (y < x ? b : a);
      case SegmentKind::kProd: return N::store(x * y);
      default: return N::store(x + y);
    }
  }
};

template <typename S>
__global__ void segment_mean_kernel(S* out, const int64_t* starts, const int64_t* ends,
                                    int64_t count, bool has_initial, S initial) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; s < count;
       s += step) {
    const int64_t length = ends[s] - starts[s];
    out[s] = length == 0 ? (has_initial ? initial : Num<S>::store(Num<S>::nan()))
                         : finish_mean<S>(out[s], length, has_initial);
  }
}

template <typename S>
void segment_reduce_typed(SegmentKind kind, const void* data, void* out, const int64_t* starts,
                          const int64_t* ends, int64_t outer, int64_t count, int64_t inner,
                          int64_t axis_size, bool one_dim, bool has_initial, S initial,
                          const ReduceScratch& scratch, cudaStream_t stream) {
  const S* in = static_cast<const S*>(data);
  S* result = static_cast<S*>(out);
  if (!one_dim) {
    const int64_t total = outer * count * inner;
    if (total == 0) return;
    segment_reduce_kernel<S><<<blocks_for(total), kThreads, 0, stream>>>(
        kind, in, result, starts, ends, outer, count, inner, axis_size, has_initial, initial);
    return;
  }
  if (count == 0) return;
  // Mean sums first (from the initial value) and divides afterwards.
  const SegmentOp<S> op{kind == SegmentKind::kMean ? SegmentKind::kSum : kind};
  size_t bytes = 0;
  AOTISHIM_CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(nullptr, bytes, in, result, count, starts,
                                                         ends, op, initial, stream));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(temp, bytes, in, result, count, starts,
                                                         ends, op, initial, stream));
  if (kind == SegmentKind::kMean)
    segment_mean_kernel<S><<<blocks_for(count), kThreads, 0, stream>>>(result, starts, ends, count,
                                                                       has_initial, initial);
}

}  // namespace

void launch_sort_by_target(const uint64_t* keys, const int64_t* positions, uint64_t* keys_out,
                           int64_t* positions_out, int64_t n, int key_bits,
                           const ReduceScratch& scratch, cudaStream_t stream) {
  if (n == 0) return;
  discard_earlier_error();
  const int end_bit = key_bits < 1 ? 1 : (key_bits > 64 ? 64 : key_bits);
  size_t bytes = 0;
  AOTISHIM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, keys_out, positions,
                                                      positions_out, n, 0, end_bit, stream));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keys_out, positions,
                                                      positions_out, n, 0, end_bit, stream));
}

void launch_assign_last(const uint64_t* keys, const int64_t* positions, int64_t n, void* target,
                        const ShapedView& source, size_t item, cudaStream_t stream) {
  if (n == 0) return;
  discard_earlier_error();
  const int blocks = blocks_for(n);
  switch (item) {
    case 1: assign_last_kernel<uint8_t><<<blocks, kThreads, 0, stream>>>(keys, positions, n, static_cast<uint8_t*>(target), source); break;
    case 2: assign_last_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(keys, positions, n, static_cast<uint16_t*>(target), source); break;
    case 4: assign_last_kernel<uint32_t><<<blocks, kThreads, 0, stream>>>(keys, positions, n, static_cast<uint32_t*>(target), source); break;
    case 8: assign_last_kernel<uint64_t><<<blocks, kThreads, 0, stream>>>(keys, positions, n, static_cast<uint64_t*>(target), source); break;
    case 16: assign_last_kernel<Bytes16><<<blocks, kThreads, 0, stream>>>(keys, positions, n, static_cast<Bytes16*>(target), source); break;
    default: fail(str("cuda scatter: unsupported element size ", item));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_index_put_accumulate(DType dtype, IndexPutSum how, const uint64_t* keys,
                                 const int64_t* positions, int64_t n, void* target,
                                 const ShapedView& values, cudaStream_t stream) {
  if (n == 0) return;
  discard_earlier_error();
  const int blocks = blocks_for(n);
  if (dtype == DType::Bool) {
    index_put_or_kernel<<<blocks, kThreads, 0, stream>>>(keys, positions, n,
                                                         static_cast<uint8_t*>(target), values);
  } else {
    const bool known = visit_numeric(dtype, [&](auto s) {
      using S = decltype(s);
      index_put_accumulate_kernel<S><<<blocks, kThreads, 0, stream>>>(
          how, keys, positions, n, static_cast<S*>(target), values);
    });
    AOTISHIM_CHECK(known, "cuda index_put: accumulating ", dtype_name(dtype),
                   " tensors is not supported");
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_scatter_targets(const ScatterGeometry& g, int64_t numel, uint64_t* keys,
                            int64_t* positions, IndexProblem* problem, cudaStream_t stream) {
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(problem, 0, sizeof(IndexProblem), stream));
  if (numel > 0)
    scatter_targets_kernel<<<blocks_for(numel), kThreads, 0, stream>>>(g, numel, keys, positions,
                                                                       problem);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_scatter_reduce(DType dtype, ScatterKind kind, bool include_self,
                           const uint64_t* keys, const int64_t* positions, int64_t n, void* target,
                           const ShapedView& source, cudaStream_t stream) {
  if (n == 0) return;
  discard_earlier_error();
  const bool known = visit_numeric(dtype, [&](auto s) {
    using S = decltype(s);
    scatter_reduce_kernel<S><<<blocks_for(n), kThreads, 0, stream>>>(
        kind, include_self, keys, positions, n, static_cast<S*>(target), source);
  });
  AOTISHIM_CHECK(known, "cuda scatter_reduce: ", dtype_name(dtype), " tensors are not supported");
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_segment_bounds(const void* segments, bool is32, bool offsets, bool unsafe,
                           int64_t outer, int64_t count, int64_t axis_size, int64_t* starts,
                           int64_t* ends, SegmentProblem* problem, cudaStream_t stream) {
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(problem, 0, sizeof(SegmentProblem), stream));
  if (outer > 0)
    segment_bounds_kernel<<<blocks_for(outer), kThreads, 0, stream>>>(
        segments, is32, offsets, unsafe, outer, count, axis_size, starts, ends, problem);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_segment_reduce(DType dtype, SegmentKind kind, const void* data, void* out,
                           const int64_t* starts, const int64_t* ends, int64_t outer,
                           int64_t count, int64_t inner, int64_t axis_size, bool one_dim,
                           bool has_initial, double initial, const ReduceScratch& scratch,
                           cudaStream_t stream) {
  discard_earlier_error();
  auto run = [&](auto s) {
    using S = decltype(s);
    const S start = has_initial ? in_dtype<S>(initial) : identity_of<S>(kind);
    segment_reduce_typed<S>(kind, data, out, starts, ends, outer, count, inner, axis_size, one_dim,
                            has_initial, start, scratch, stream);
  };
  switch (dtype) {
    case DType::Float32: run(float{}); break;
    case DType::Float64: run(double{}); break;
    case DType::Float16: run(__half{}); break;
    case DType::BFloat16: run(__nv_bfloat16{}); break;
    default: fail(str("cuda segment_reduce: unsupported dtype ", dtype_name(dtype)));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
