// histc on cuda, binning as torch's cuda kernel does: the range's ends and
// each element's position (x - lo) * bins / (hi - lo) in the accumulation
// type (float32 for float32 and the half types, float64 for float64), its
// integer part the bin, hi itself in the last bin. Counts are exact (64-bit
// atomics), rounded once into out's dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/histc_kernels.h"
#include "devices/cuda/launch_grid.h"

namespace aotishim {
namespace cuda {

namespace {


struct Shape {
  int ndim;
  int64_t sizes[kMaxCopyDims];
  int64_t strides[kMaxCopyDims];
};

__device__ __forceinline__ int64_t offset_of(int64_t i, const Shape& s) {
  int64_t off = 0;
  for (int d = s.ndim - 1; d >= 0; --d) {
    off += (i % s.sizes[d]) * s.strides[d];
    i /= s.sizes[d];
  }
  return off;
}

template <typename T> __device__ __forceinline__ double to_double(T v) { return static_cast<double>(v); }
template <> __device__ __forceinline__ double to_double(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ double to_double(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_double(double v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_double(double v) { return __float2half_rn(static_cast<float>(v)); }
template <> __device__ __forceinline__ __nv_bfloat16 from_double(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

template <typename T> struct AccOf { using type = float; };
template <> struct AccOf<double> { using type = double; };

template <typename T>
__global__ void range_kernel(const T* self, Shape s, int64_t numel, double* partial) {
  __shared__ double lo[kThreads], hi[kThreads], nan[kThreads];
  double l = 0, h = 0, bad = 0;
  bool any = false;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    const double x = to_double(self[offset_of(i, s)]);
    if (isnan(x)) {
      bad = 1;
    } else if (!any) {
      l = h = x;
      any = true;
    } else {
      l = fmin(l, x);
      h = fmax(h, x);
    }
  }
  // An empty slot is +inf/-inf, so it never wins.
  lo[threadIdx.x] = any ? l : __longlong_as_double(0x7ff0000000000000LL);
  hi[threadIdx.x] = any ? h : -__longlong_as_double(0x7ff0000000000000LL);
  nan[threadIdx.x] = bad;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      lo[threadIdx.x] = fmin(lo[threadIdx.x], lo[threadIdx.x + half]);
      hi[threadIdx.x] = fmax(hi[threadIdx.x], hi[threadIdx.x + half]);
      nan[threadIdx.x] = fmax(nan[threadIdx.x], nan[threadIdx.x + half]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[3 * blockIdx.x] = lo[0];
    partial[3 * blockIdx.x + 1] = hi[0];
    partial[3 * blockIdx.x + 2] = nan[0];
  }
}

// The bin of element i, or -1 outside [lo, hi] (NaN included).
template <typename T, typename Acc>
__device__ __forceinline__ int64_t bin_of(const T* self, const Shape& s, int64_t i, int64_t bins,
                                          Acc lo, Acc hi) {
  const Acc x = static_cast<Acc>(to_double(self[offset_of(i, s)]));
  if (!(x >= lo && x <= hi)) return -1;
  int64_t bin = static_cast<int64_t>((x - lo) * static_cast<Acc>(bins) / (hi - lo));
  if (bin >= bins) bin = bins - 1;
  if (bin < 0) bin = 0;
  return bin;
}

// Many bins: one global counter per bin.
template <typename T>
__global__ void histc_kernel(const T* self, Shape s, int64_t numel, int64_t bins, double lo_d,
                             double hi_d, unsigned long long* counts) {
  using Acc = typename AccOf<T>::type;
  const Acc lo = static_cast<Acc>(lo_d), hi = static_cast<Acc>(hi_d);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    const int64_t bin = bin_of(self, s, i, bins, lo, hi);
    if (bin >= 0) atomicAdd(&counts[bin], 1ULL);
  }
}

// Up to kSharedBins bins: each block counts into shared memory and adds its
// totals once per bin, so a million elements over a hundred bins do not
// all contend for the same hundred global counters.
constexpr int kSharedBins = 8192;  // 32 KiB of 32-bit counters
constexpr int kSharedBlocks = 1024;
template <typename T>
__global__ void histc_shared_kernel(const T* self, Shape s, int64_t numel, int bins, double lo_d,
                                    double hi_d, unsigned long long* counts) {
  extern __shared__ unsigned int local[];
  using Acc = typename AccOf<T>::type;
  const Acc lo = static_cast<Acc>(lo_d), hi = static_cast<Acc>(hi_d);
  for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    const int64_t bin = bin_of(self, s, i, bins, lo, hi);
    if (bin >= 0) atomicAdd(&local[bin], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    if (local[b] != 0) atomicAdd(&counts[b], static_cast<unsigned long long>(local[b]));
  }
}

template <typename T>
__global__ void store_counts_kernel(const unsigned long long* counts, int64_t bins, T* out,
                                    int64_t stride) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bins; i += step)
    out[i * stride] = from_double<T>(static_cast<double>(counts[i]));
}

Shape shape_of(const StridedView& v, const int64_t* sizes, int ndim) {
  AOTISHIM_CHECK(ndim <= kMaxCopyDims, "cuda histc: up to ", kMaxCopyDims, " dimensions");
  Shape s{ndim, {}, {}};
  for (int d = 0; d < ndim; ++d) {
    s.sizes[d] = sizes[d];
    s.strides[d] = v.strides[d];
  }
  return s;
}

template <typename T>
void run_range(const StridedView& self, const Shape& s, int64_t numel, double* partial,
               cudaStream_t stream) {
  range_kernel<T><<<kRangeBlocks, kThreads, 0, stream>>>(static_cast<const T*>(self.data), s,
                                                         numel, partial);
}

template <typename T>
void run_histc(const StridedView& self, const Shape& s, int64_t numel, int64_t bins, double lo,
               double hi, unsigned long long* counts, const StridedView& out, cudaStream_t stream) {
  const T* data = static_cast<const T*>(self.data);
  const int blocks = blocks_for(numel);
  // A block's shared counters are 32-bit: at most 2^32 - 1 elements each.
  const bool shared = bins <= kSharedBins &&
                      numel / std::min(blocks, kSharedBlocks) < (int64_t{1} << 31);
  if (numel > 0 && shared) {
    histc_shared_kernel<T><<<std::min(blocks, kSharedBlocks), kThreads,
                             static_cast<size_t>(bins) * sizeof(unsigned int), stream>>>(
        data, s, numel, static_cast<int>(bins), lo, hi, counts);
  } else if (numel > 0) {
    histc_kernel<T><<<blocks, kThreads, 0, stream>>>(data, s, numel, bins, lo, hi, counts);
  }
  store_counts_kernel<T><<<blocks_for(bins), kThreads, 0, stream>>>(
      counts, bins, static_cast<T*>(out.data), out.strides[0]);
}

}  // namespace

void launch_histc_range(const StridedView& self, const int64_t* sizes, int ndim, int64_t numel,
                        double* partial, cudaStream_t stream) {
  const Shape s = shape_of(self, sizes, ndim);
  discard_earlier_error();
  switch (self.dtype) {
    case DType::Float32: run_range<float>(self, s, numel, partial, stream); break;
    case DType::Float64: run_range<double>(self, s, numel, partial, stream); break;
    case DType::Float16: run_range<__half>(self, s, numel, partial, stream); break;
    case DType::BFloat16: run_range<__nv_bfloat16>(self, s, numel, partial, stream); break;
    default: fail(str("cuda histc: unsupported dtype ", dtype_name(self.dtype)));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_histc(const StridedView& self, const int64_t* sizes, int ndim, int64_t numel,
                  int64_t bins, double lo, double hi, unsigned long long* counts,
                  const StridedView& out, cudaStream_t stream) {
  const Shape s = shape_of(self, sizes, ndim);
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(counts, 0, sizeof(unsigned long long) * bins, stream));
  switch (self.dtype) {
    case DType::Float32: run_histc<float>(self, s, numel, bins, lo, hi, counts, out, stream); break;
    case DType::Float64: run_histc<double>(self, s, numel, bins, lo, hi, counts, out, stream); break;
    case DType::Float16: run_histc<__half>(self, s, numel, bins, lo, hi, counts, out, stream); break;
    case DType::BFloat16:
      run_histc<__nv_bfloat16>(self, s, numel, bins, lo, hi, counts, out, stream);
      break;
    default: fail(str("cuda histc: unsupported dtype ", dtype_name(self.dtype)));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
