// kthvalue / median / nanmedian / mode: every element becomes an unsigned
// key that orders as torch cuda orders the dtype (the radix order of its
// TopKTypeConfig: integers with the sign bit flipped, floats by their bits
// with negatives reversed, NaN at the top; or the order of its sort for the
// whole-tensor medians), CUB's segmented radix sort orders each line's keys
// with their positions (stably), and one thread per line picks from the
// sorted line and copies the chosen element from self, so it keeps its bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstring>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/order_statistics_kernels.h"

namespace aotishim {
namespace cuda {

namespace {

__device__ __forceinline__ int64_t offset_of(int64_t j, const ElementWalk& w) {
  int64_t off = 0;
  for (int d = w.ndim - 1; d >= 0; --d) {
    off += (j % w.sizes[d]) * w.strides[d];
    j /= w.sizes[d];
  }
  return off;
}

// The key of each dtype: an unsigned integer of its size.
template <typename T> struct Order;
template <typename T, typename K, K kSign> struct SignedOrder {
  using Key = K;
  static constexpr bool floating = false;
  __device__ static Key key(T v, bool) { return static_cast<Key>(static_cast<Key>(v) ^ kSign); }
};
template <> struct Order<int8_t> : SignedOrder<int8_t, uint8_t, 0x80u> {};
template <> struct Order<int16_t> : SignedOrder<int16_t, uint16_t, 0x8000u> {};
template <> struct Order<int32_t> : SignedOrder<int32_t, uint32_t, 0x80000000u> {};
template <> struct Order<int64_t> : SignedOrder<int64_t, uint64_t, 0x8000000000000000ull> {};
template <> struct Order<uint8_t> {  // uint8: its own order
  using Key = uint8_t;
  static constexpr bool floating = false;
  __device__ static Key key(uint8_t v, bool) { return v; }
};
// bool elements, any nonzero byte true (as torch loads them)
struct BoolByte {
  uint8_t byte;
};
template <> struct Order<BoolByte> {
  using Key = uint8_t;
  static constexpr bool floating = false;
  __device__ static Key key(BoolByte v, bool) { return v.byte != 0; }
};

// Floats by their bits: a negative number's bits reversed, a positive one's
// sign bit set, so keys order as the numbers; NaN at the top (radix
// selection), or by its sign at either end (sort), where -0.0 is also made
// 0.0, which torch's sort does not tell apart.
template <typename T, typename K, K kInf> struct FloatOrder {
  using Key = K;
  static constexpr bool floating = true;
  static constexpr K kSign = static_cast<K>(K{1} << (sizeof(K) * 8 - 1));
  static constexpr K kNanKey = static_cast<K>(~K{0});
  // keys of 0.0 and -0.0 (radix order)
  static constexpr K kZeroKey = kSign;
  static constexpr K kNegativeZeroKey = static_cast<K>(kSign - 1);
  __device__ static Key key(T v, bool nan_by_sign) {
    K b;
    memcpy(&b, &v, sizeof(K));
    const bool negative = (b & kSign) != 0;
    if (static_cast<K>(b & ~kSign) > kInf) return nan_by_sign && negative ? K{0} : kNanKey;
    if (nan_by_sign && static_cast<K>(b & ~kSign) == 0) b = 0;
    return negative && b != 0 ? static_cast<K>(~b) : static_cast<K>(b | kSign);
  }
};
template <> struct Order<__half> : FloatOrder<__half, uint16_t, 0x7c00u> {};
template <> struct Order<__nv_bfloat16> : FloatOrder<__nv_bfloat16, uint16_t, 0x7f80u> {};
template <> struct Order<float> : FloatOrder<float, uint32_t, 0x7f800000u> {};
template <> struct Order<double> : FloatOrder<double, uint64_t, 0x7ff0000000000000ull> {};

// Do two sorted neighbours hold the same value, as torch's `!=` on values
// tells (radix keys: -0.0 equals 0.0, a NaN equals nothing)?
template <typename T>
__device__ __forceinline__ bool same_value(typename Order<T>::Key a, typename Order<T>::Key b) {
  if constexpr (Order<T>::floating) {
    using O = Order<T>;
    const bool a_zero = a == O::kZeroKey || a == O::kNegativeZeroKey;
    const bool b_zero = b == O::kZeroKey || b == O::kNegativeZeroKey;
    return (a == b && a != O::kNanKey) || (a_zero && b_zero);
  } else {
    return a == b;
  }
}

template <typename T>
__global__ void keys_kernel(const T* self, ElementWalk w, int64_t total, int64_t n,
                            bool nan_by_sign, typename Order<T>::Key* keys, int64_t* positions) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    keys[j] = Order<T>::key(self[offset_of(j, w)], nan_by_sign);
    positions[j] = j % n;
  }
}

// The first i in [lo, hi) with keys[i] >= key (hi if none).
template <typename K>
__device__ int64_t first_not_below(const K* keys, int64_t lo, int64_t hi, K key) {
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Which run of equally frequent values torch cuda's mode returns: lines of
// up to 2048 elements run its one-block kernel, where thread t holds sorted
// positions 2t and 2t+1 and the running counts are reduced lane by lane
// (thread t into lane t % 32, in thread order, then the lanes in order),
// keeping the first of equal counts: so among the runs of the largest count
// (each at the sorted position p of its last element) the one with the
// smallest (lane, thread) wins. Longer lines run thrust (sort, count, then
// the first largest count): the smallest value wins.
__device__ __forceinline__ int64_t tie_rank(int64_t p, int64_t n) {
  if (n > 2048) return p;
  const int64_t t = p >> 1;
  return (t & 31) * 2048 + t;
}

template <typename T>
__global__ void pick_kernel(SelectLaunch L, const typename Order<T>::Key* sorted_keys,
                            const int64_t* sorted_positions) {
  using K = typename Order<T>::Key;
  const T* self = static_cast<const T*>(L.self);
  const int64_t n = L.n;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < L.rows;
       r += step) {
    const K* keys = sorted_keys + r * n;
    const int64_t* positions = sorted_positions + r * n;
    int64_t q = 0;           // the picked sorted position
    int64_t position = -1;   // the index to report (-1: positions[q])
    switch (L.pick) {
      case OrderPick::Kth:
        q = L.k - 1;
        break;
      case OrderPick::Median: {
        // torch: where(sorted[-1] is NaN, sorted[-1], sorted[(n - 1) / 2])
        q = (n - 1) / 2;
        if constexpr (Order<T>::floating) {
          if (keys[n - 1] == Order<T>::kNanKey) q = n - 1;
        }
        break;
      }
      case OrderPick::NanMedian: {
        // torch: sorted[trunc(((n - 1) - count of NaN) / 2)], so all NaN
        // picks sorted[0]; NaN sorted by sign sit at both ends
        int64_t nans = 0;
        if constexpr (Order<T>::floating) {
          const K top = Order<T>::kNanKey;
          nans = n - first_not_below<K>(keys, 0, n, top);
          if (L.nan_by_sign) nans += first_not_below<K>(keys, 0, n, K{1});
        }
        q = nans == n ? 0 : (n - 1 - nans) / 2;
        break;
      }
      case OrderPick::Mode: {
        int64_t best_len = 0, best_end = 0, start = 0;
        for (int64_t i = 0; i < n; ++i) {
          if (i + 1 < n && same_value<T>(keys[i], keys[i + 1])) continue;
          const int64_t len = i - start + 1;
          if (len > best_len || (len == best_len && tie_rank(i, n) < tie_rank(best_end, n))) {
            best_len = len;
            best_end = i;
          }
          start = i + 1;
        }
        q = best_end;
        // the last position of the mode in the line (torch's index among
        // repeats differs with the line's length; any of them is the mode)
        position = positions[best_end];
        for (int64_t i = best_end - best_len + 1; i < best_end; ++i)
          position = positions[i] > position ? positions[i] : position;
        break;
      }
    }
    const int64_t at = positions[q];
    static_cast<T*>(L.values)[offset_of(r, L.values_walk)] = self[offset_of(r * n + at, L.self_walk)];
    if (L.indices) L.indices[offset_of(r, L.indices_walk)] = position >= 0 ? position : at;
  }
}

struct LineStart {
  int64_t n;
  __host__ __device__ int64_t operator()(int64_t r) const { return r * n; }
};

template <typename T>
void select_lines(const SelectLaunch& L, const SelectScratch& scratch, cudaStream_t stream) {
  using K = typename Order<T>::Key;
  const int64_t total = L.rows * L.n;
  K* keys = static_cast<K*>(scratch(static_cast<size_t>(total) * sizeof(K)));
  K* sorted_keys = static_cast<K*>(scratch(static_cast<size_t>(total) * sizeof(K)));
  int64_t* positions = static_cast<int64_t*>(scratch(static_cast<size_t>(total) * sizeof(int64_t)));
  int64_t* sorted_positions =
      static_cast<int64_t*>(scratch(static_cast<size_t>(total) * sizeof(int64_t)));
  keys_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
      static_cast<const T*>(L.self), L.self_walk, total, L.n, L.nan_by_sign, keys, positions);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
  auto begin = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), LineStart{L.n});
  auto end = begin + 1;
  size_t bytes = 0;
  auto sort = [&](void* temp) {
    return cub::DeviceSegmentedRadixSort::SortPairs(
        temp, bytes, keys, sorted_keys, positions, sorted_positions, static_cast<int>(total),
        static_cast<int>(L.rows), begin, end, 0, static_cast<int>(sizeof(K) * 8), stream);
  };
  AOTISHIM_CUDA_CHECK(sort(nullptr));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(sort(temp));
  pick_kernel<T><<<blocks_for(L.rows), kThreads, 0, stream>>>(L, sorted_keys, sorted_positions);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_select(const SelectLaunch& L, const SelectScratch& scratch, cudaStream_t stream) {
  if (L.rows == 0 || L.n == 0) return;
  AOTISHIM_CHECK(L.rows * L.n <= INT_MAX, "cuda order statistics take at most ", INT_MAX,
                 " elements at once, got ", L.rows * L.n);
  AOTISHIM_CHECK(L.pick != OrderPick::Kth || (L.k >= 1 && L.k <= L.n),
                 "cuda kthvalue: k out of range");
  discard_earlier_error();
  switch (L.dtype) {
    case DType::Bool: return select_lines<BoolByte>(L, scratch, stream);
    case DType::UInt8: return select_lines<uint8_t>(L, scratch, stream);
    case DType::Int8: return select_lines<int8_t>(L, scratch, stream);
    case DType::Int16: return select_lines<int16_t>(L, scratch, stream);
    case DType::Int32: return select_lines<int32_t>(L, scratch, stream);
    case DType::Int64: return select_lines<int64_t>(L, scratch, stream);
    case DType::Float16: return select_lines<__half>(L, scratch, stream);
    case DType::BFloat16: return select_lines<__nv_bfloat16>(L, scratch, stream);
    case DType::Float32: return select_lines<float>(L, scratch, stream);
    case DType::Float64: return select_lines<double>(L, scratch, stream);
    default: break;
  }
  fail(str("cuda kthvalue/median/nanmedian/mode support bool (mode), uint8, int8..int64 and the "
           "real floating types, not ", dtype_name(L.dtype)));
}

}  // namespace cuda
}  // namespace aotishim
