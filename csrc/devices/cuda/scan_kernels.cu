// cumsum and cumprod: the elements are converted to the result's dtype and
// widened to its accumulation type into a packed buffer (lines along the
// last dimension), CUB scans each line (DeviceScan::InclusiveScanByKey, the
// key being the line), and a kernel stores the sums into the output's
// layout in its dtype.
//
// Rounded scans (float16/bfloat16 cumsum and cumprod, every logcumsumexp):
// torch cuda scans these in the result's own dtype, rounding every
// combination, so its answer depends on the order in which its kernel
// combines the elements. That order is followed here: a packed buffer in the
// result's dtype, then CUB's device scan for a tensor that is one line,
// torch's blocked Sklansky scan for lines along the innermost dimension, and
// a plain left-to-right scan for lines along any other dimension.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <limits>
#include <type_traits>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/scan_kernels.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/typed_values.cuh"

namespace aotishim {
namespace cuda {

namespace {


// A line view's sizes and strides, passed to kernels by value.
StridedShape geometry(const LineView& v) {
  return strided_shape(v.sizes, v.strides, v.ndim, "cuda scan");
}

// ---- an element as a wide value: float64 for floating dtypes, int64 otherwise
template <typename T> struct Wide {
  static constexpr bool floating = false;
  __device__ static int64_t get(T v) { return static_cast<int64_t>(v); }
};
template <> struct Wide<float> {
  static constexpr bool floating = true;
  __device__ static double get(float v) { return v; }
};
template <> struct Wide<double> {
  static constexpr bool floating = true;
  __device__ static double get(double v) { return v; }
};
template <> struct Wide<__half> {
  static constexpr bool floating = true;
  __device__ static double get(__half v) { return __half2float(v); }
};
template <> struct Wide<__nv_bfloat16> {
  static constexpr bool floating = true;
  __device__ static double get(__nv_bfloat16 v) { return __bfloat162float(v); }
};

// x rounded to the floating dtype t (as a cast to it rounds).
__device__ __forceinline__ double round_to(DType t, double x) {
  switch (t) {
    case DType::Float16: return __half2float(__float2half_rn(static_cast<float>(x)));
    case DType::BFloat16: return __bfloat162float(__float2bfloat16_rn(static_cast<float>(x)));
    case DType::Float32: return static_cast<float>(x);
    default: return x;
  }
}
// x wrapped to the integer dtype t (as a cast to it wraps).
__device__ __forceinline__ int64_t wrap_to(DType t, int64_t x) {
  switch (t) {
    case DType::UInt8: return static_cast<uint8_t>(x);
    case DType::Int8: return static_cast<int8_t>(x);
    case DType::Int16: return static_cast<int16_t>(x);
    case DType::Int32: return static_cast<int32_t>(x);
    default: return x;
  }
}

// acc[j] = self's element j (line-major), converted to out's dtype, widened to Acc.
template <typename In, typename Acc>
__global__ void gather_kernel(const In* self, StridedShape g, int64_t total, DType out_dtype,
                              Acc* acc) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    const auto w = Wide<In>::get(self[offset_in(j, g)]);
    if constexpr (std::is_same_v<Acc, uint64_t>) {  // an integer result
      int64_t i;
      if constexpr (Wide<In>::floating) i = static_cast<int64_t>(w);
      else i = w;
      acc[j] = static_cast<uint64_t>(wrap_to(out_dtype, i));
    } else {
      acc[j] = static_cast<Acc>(round_to(out_dtype, static_cast<double>(w)));
    }
  }
}

template <typename T> __device__ __forceinline__ T narrow(double v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half narrow(double v) { return __float2half_rn(static_cast<float>(v)); }
template <> __device__ __forceinline__ __nv_bfloat16 narrow(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

template <typename Out, typename Acc>
__global__ void store_kernel(const Acc* acc, StridedShape g, int64_t total, Out* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    if constexpr (std::is_same_v<Acc, uint64_t>) out[offset_in(j, g)] = static_cast<Out>(acc[j]);
    else out[offset_in(j, g)] = narrow<Out>(static_cast<double>(acc[j]));
  }
}

struct LineOf {
  int64_t n;
  __host__ __device__ int64_t operator()(int64_t j) const { return j / n; }
};

template <typename Acc> struct Add {
  __device__ Acc operator()(Acc a, Acc b) const { return a + b; }
};
template <typename Acc> struct Multiply {
  __device__ Acc operator()(Acc a, Acc b) const { return a * b; }
};

template <typename Acc, typename Op>
void scan_lines(const Acc* in, Acc* out, int64_t total, int64_t n, Op op,
                const ScanScratch& scratch, cudaStream_t stream) {
  auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), LineOf{n});
  size_t bytes = 0;
  AOTISHIM_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(nullptr, bytes, keys, in, out, op,
                                                          total, ::cuda::std::equal_to<int64_t>(),
                                                          stream));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(temp, bytes, keys, in, out, op, total,
                                                          ::cuda::std::equal_to<int64_t>(), stream));
}

template <typename Acc>
void gather(const LineView& self, DType out_dtype, int64_t total, Acc* acc, cudaStream_t stream) {
  const StridedShape g = geometry(self);
  const int blocks = blocks_for(total);
  switch (self.dtype) {
#define AOTISHIM_GATHER(dt, T)                                                                   \
  case dt:                                                                                       \
    gather_kernel<T, Acc><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(self.data), g, \
                                                           total, out_dtype, acc);              \
    return;
    AOTISHIM_GATHER(DType::Bool, uint8_t)
    AOTISHIM_GATHER(DType::UInt8, uint8_t)
    AOTISHIM_GATHER(DType::Int8, int8_t)
    AOTISHIM_GATHER(DType::Int16, int16_t)
    AOTISHIM_GATHER(DType::Int32, int32_t)
    AOTISHIM_GATHER(DType::Int64, int64_t)
    AOTISHIM_GATHER(DType::Float16, __half)
    AOTISHIM_GATHER(DType::BFloat16, __nv_bfloat16)
    AOTISHIM_GATHER(DType::Float32, float)
    AOTISHIM_GATHER(DType::Float64, double)
#undef AOTISHIM_GATHER
    default: break;
  }
  fail(str("cuda cumulative ops: unsupported dtype ", dtype_name(self.dtype)));
}

template <typename Out, typename Acc>
void run(const LineView& out, const LineView& self, bool product, const ScanScratch& scratch,
         cudaStream_t stream) {
  int64_t total = 1;
  for (int d = 0; d < out.ndim; ++d) total *= out.sizes[d];
  if (total == 0) return;
  const int64_t n = out.ndim > 0 ? out.sizes[out.ndim - 1] : 1;
  Acc* buf = static_cast<Acc*>(scratch(static_cast<size_t>(total) * sizeof(Acc)));
  Acc* sums = static_cast<Acc*>(scratch(static_cast<size_t>(total) * sizeof(Acc)));
  gather<Acc>(self, out.dtype, total, buf, stream);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
  if (product) scan_lines(buf, sums, total, n, Multiply<Acc>{}, scratch, stream);
  else scan_lines(buf, sums, total, n, Add<Acc>{}, scratch, stream);
  store_kernel<Out, Acc><<<blocks_for(total), kThreads, 0, stream>>>(sums, geometry(out), total,
                                                                     static_cast<Out*>(out.data));
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

// ---------------------------------------------------------------- rounded scans

// A dtype's op-math type (float for float16/bfloat16/float32, double for
// float64, as torch's opmath_type) and the conversions to and from it.
template <typename T> struct Rounding;
template <> struct Rounding<__half> {
  using Math = float;
  __device__ static float up(__half v) { return __half2float(v); }
  __device__ static __half down(float v) { return __float2half_rn(v); }
};
template <> struct Rounding<__nv_bfloat16> {
  using Math = float;
  __device__ static float up(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 down(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Rounding<float> {
  using Math = float;
  __device__ static float up(float v) { return v; }
  __device__ static float down(float v) { return v; }
};
template <> struct Rounding<double> {
  using Math = double;
  __device__ static double up(double v) { return v; }
  __device__ static double down(double v) { return v; }
};

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }
__device__ __forceinline__ float log1p_of(float x) { return log1pf(x); }
__device__ __forceinline__ double log1p_of(double x) { return log1p(x); }

// The three combinations, each rounded to T (as torch's Half/BFloat16
// operators round, and its log_add_exp returns scalar_t).
template <typename T> struct RoundedSum {
  __device__ T operator()(T a, T b) const {
    return Rounding<T>::down(Rounding<T>::up(a) + Rounding<T>::up(b));
  }
};
template <typename T> struct RoundedProduct {
  __device__ T operator()(T a, T b) const {
    return Rounding<T>::down(Rounding<T>::up(a) * Rounding<T>::up(b));
  }
};
// log(exp(a) + exp(b)) as torch cuda's logcumsumexp computes it: the larger
// plus log1p(exp(smaller - larger)); NaN propagates; two equal infinities
// give themselves (exp(inf - inf) would be NaN).
template <typename T> struct RoundedLogAddExp {
  __device__ T operator()(T a, T b) const {
    using M = typename Rounding<T>::Math;
    const M x = Rounding<T>::up(a), y = Rounding<T>::up(b);
    const bool x_nan = isnan(x), y_nan = isnan(y);
    const M lo = y_nan ? y : (x_nan ? x : (y < x ? y : x));
    const M hi = y_nan ? y : (x_nan ? x : (x < y ? y : x));
    if (lo != hi || isfinite(lo)) return Rounding<T>::down(log1p_of(exp_of(lo - hi)) + hi);
    return a;
  }
};

template <typename In> __device__ __forceinline__ float as_float(In v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float as_float(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename In> __device__ __forceinline__ double as_double(In v) { return static_cast<double>(v); }
template <> __device__ __forceinline__ double as_double(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ double as_double(__nv_bfloat16 v) { return __bfloat162float(v); }

// v cast to T as torch's conversion casts it (float64 and integers to the
// 16-bit types through float, as c10's Half and BFloat16 constructors do).
template <typename T, typename In> __device__ __forceinline__ T converted(In v) {
  if constexpr (std::is_same_v<T, double>) return as_double(v);
  else return Rounding<T>::down(as_float(v));
}

template <typename In, typename T>
__global__ void gather_rounded_kernel(const In* self, StridedShape g, int64_t total, T* buf) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step)
    buf[j] = converted<T>(self[offset_in(j, g)]);
}

template <typename T>
__global__ void store_rounded_kernel(const T* buf, StridedShape g, int64_t total, T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step)
    out[offset_in(j, g)] = buf[j];
}

// Lines along an outer dimension: one thread a line, left to right from the
// op's identity (torch's tensor_kernel_scan_outer_dim), so the first element
// is combined with the identity too (a -0.0 sum start becomes 0.0, as torch's).
template <typename T, typename Op>
__global__ void scan_left_to_right_kernel(const T* in, T* out, int64_t rows, int64_t n,
                                          typename Rounding<T>::Math identity, Op op) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += step) {
    T acc = Rounding<T>::down(identity);
    for (int64_t i = 0; i < n; ++i) {
      acc = op(acc, in[r * n + i]);
      out[r * n + i] = acc;
    }
  }
}

extern __shared__ __align__(16) unsigned char sklansky_rows[];

// Lines along the innermost dimension, as torch's tensor_kernel_scan_innermost_dim
// combines them: blockDim.y lines a block, each scanned in chunks of
// 2 * blockDim.x elements (padded with the identity); a chunk's first
// element is combined with the total so far, then a Sklansky scan over the
// chunk: at level m every element with bit m of its position set takes in
// the last element of the lower half of its 2^(m+1)-aligned group.
template <typename T, typename Op>
__global__ void scan_sklansky_kernel(const T* in, T* out, int64_t rows, int64_t n,
                                     unsigned log_x, typename Rounding<T>::Math identity_math,
                                     Op op) {
  const unsigned nx = 1u << log_x, tx = threadIdx.x;
  const T identity = Rounding<T>::down(identity_math);
  T* buf = reinterpret_cast<T*>(sklansky_rows) + 2 * nx * threadIdx.y;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.y; first < rows;
       first += static_cast<int64_t>(blockDim.y) * gridDim.x) {
    const int64_t row = first + threadIdx.y;
    const bool exists = row < rows;
    T total = identity;
    for (int64_t start = 0; start < n; start += 2 * nx) {
      const int64_t c1 = start + tx, c2 = start + nx + tx;
      if (exists) {
        buf[tx] = c1 < n ? in[row * n + c1] : identity;
        buf[nx + tx] = c2 < n ? in[row * n + c2] : identity;
        if (tx == 0) buf[0] = op(buf[0], total);
      }
      __syncthreads();
      for (unsigned m = 0; m <= log_x; ++m) {
        if (exists) {
          const unsigned s = 1u << m;
          const unsigned a = ((tx >> m) << (m + 1)) | s;
          const unsigned ti = a + (tx & (s - 1)), si = a - 1;
          buf[ti] = op(buf[ti], buf[si]);
        }
        __syncthreads();
      }
      if (exists) {
        if (c1 < n) out[row * n + c1] = buf[tx];
        if (c2 < n) out[row * n + c2] = buf[nx + tx];
        total = buf[2 * nx - 1];
      }
      __syncthreads();
    }
  }
}

// in[0] = op(carry[0], in[0]): the total of the chunks before is folded into
// the next chunk's first element, as torch's inclusive_scan chains chunks.
template <typename T, typename Op>
__global__ void fold_carry_kernel(const T* carry, T* in, Op op) {
  in[0] = op(carry[0], in[0]);
}

// torch's get_log_num_threads_x_inner_scan, in its unsigned arithmetic: the
// x threads (one per two elements of a chunk) grow with the line length and
// shrink with the number of lines, between 16 and 512 (a much smaller line
// than line count wraps around to 512).
unsigned sklansky_log_threads_x(uint32_t rows, uint32_t row_size) {
  uint32_t log_x = 0, log_y = 0;
  while ((uint64_t{1} << log_x) < row_size) ++log_x;
  while ((uint64_t{1} << log_y) < rows) ++log_y;
  const uint32_t diff = log_x - log_y;
  log_x = (9u + diff) / 2u;
  return std::min(std::max(4u, log_x), 9u);
}

template <typename T, typename Op>
void scan_in_torch_order(T* in, T* out, int64_t rows, int64_t n, bool innermost,
                         typename Rounding<T>::Math identity, Op op, const ScanScratch& scratch,
                         cudaStream_t stream) {
  if (rows == 1) {
    // One line: CUB's device scan, in chunks of 2^30 as torch's
    // at::cuda::cub::inclusive_scan (CUB's order within a tile is fixed;
    // across tiles, as for torch, it follows which tiles finish first).
    constexpr int64_t kChunk = int64_t{1} << 30;
    for (int64_t start = 0; start < n; start += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, n - start));
      if (start > 0) {
        fold_carry_kernel<T, Op><<<1, 1, 0, stream>>>(out + start - 1, in + start, op);
        AOTISHIM_CUDA_CHECK(cudaGetLastError());
      }
      size_t bytes = 0;
      AOTISHIM_CUDA_CHECK(
          cub::DeviceScan::InclusiveScan(nullptr, bytes, in + start, out + start, op, count, stream));
      void* temp = scratch(bytes > 0 ? bytes : 1);
      AOTISHIM_CUDA_CHECK(
          cub::DeviceScan::InclusiveScan(temp, bytes, in + start, out + start, op, count, stream));
    }
    return;
  }
  if (innermost) {
    AOTISHIM_CHECK(rows <= UINT32_MAX && n <= UINT32_MAX,
                   "cuda scans: the number of lines and their length must fit in 32 bits (as "
                   "torch's), got ", rows, " lines of ", n);
    const unsigned log_x =
        sklansky_log_threads_x(static_cast<uint32_t>(rows), static_cast<uint32_t>(n));
    const unsigned nx = 1u << log_x, ny = 512u / nx;
    const int64_t blocks = std::min<int64_t>((rows + ny - 1) / ny, int64_t{1} << 20);
    const size_t shared = 2 * size_t{512} * sizeof(T);
    scan_sklansky_kernel<T, Op><<<static_cast<unsigned>(blocks), dim3(nx, ny), shared, stream>>>(
        in, out, rows, n, log_x, identity, op);
  } else {
    scan_left_to_right_kernel<T, Op><<<blocks_for(rows), kThreads, 0, stream>>>(in, out, rows, n,
                                                                                identity, op);
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void gather_rounded(const LineView& self, int64_t total, T* buf, cudaStream_t stream) {
  const StridedShape g = geometry(self);
  const int blocks = blocks_for(total);
  switch (self.dtype) {
#define AOTISHIM_GATHER(dt, In)                                                               \
  case dt:                                                                                    \
    gather_rounded_kernel<In, T><<<blocks, kThreads, 0, stream>>>(                            \
        static_cast<const In*>(self.data), g, total, buf);                                    \
    return;
    AOTISHIM_GATHER(DType::Bool, uint8_t)
    AOTISHIM_GATHER(DType::UInt8, uint8_t)
    AOTISHIM_GATHER(DType::Int8, int8_t)
    AOTISHIM_GATHER(DType::Int16, int16_t)
    AOTISHIM_GATHER(DType::Int32, int32_t)
    AOTISHIM_GATHER(DType::Int64, int64_t)
    AOTISHIM_GATHER(DType::Float16, __half)
    AOTISHIM_GATHER(DType::BFloat16, __nv_bfloat16)
    AOTISHIM_GATHER(DType::Float32, float)
    AOTISHIM_GATHER(DType::Float64, double)
#undef AOTISHIM_GATHER
    default: break;
  }
  fail(str("cuda cumulative ops: unsupported dtype ", dtype_name(self.dtype)));
}

template <typename T>
void run_rounded(const LineView& out, const LineView& self, RoundedScan kind, bool innermost,
                 const ScanScratch& scratch, cudaStream_t stream) {
  int64_t total = 1;
  for (int d = 0; d < out.ndim; ++d) total *= out.sizes[d];
  if (total == 0) return;
  const int64_t n = out.ndim > 0 ? out.sizes[out.ndim - 1] : 1;
  T* buf = static_cast<T*>(scratch(static_cast<size_t>(total) * sizeof(T)));
  T* scanned = static_cast<T*>(scratch(static_cast<size_t>(total) * sizeof(T)));
  gather_rounded<T>(self, total, buf, stream);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
  using M = typename Rounding<T>::Math;
  switch (kind) {
    case RoundedScan::Sum:
      scan_in_torch_order(buf, scanned, total / n, n, innermost, M(0), RoundedSum<T>{}, scratch,
                          stream);
      break;
    case RoundedScan::Product:
      scan_in_torch_order(buf, scanned, total / n, n, innermost, M(1), RoundedProduct<T>{},
                          scratch, stream);
      break;
    case RoundedScan::LogSumExp:
      scan_in_torch_order(buf, scanned, total / n, n, innermost,
                          -std::numeric_limits<M>::infinity(), RoundedLogAddExp<T>{}, scratch,
                          stream);
      break;
  }
  store_rounded_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(scanned, geometry(out), total,
                                                                      static_cast<T*>(out.data));
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_rounded_scan(const LineView& out, const LineView& self, RoundedScan kind,
                         bool innermost, const ScanScratch& scratch, cudaStream_t stream) {
  AOTISHIM_CHECK(out.ndim == self.ndim && out.ndim <= kMaxCopyDims,
                 "cuda cumulative ops: up to ", kMaxCopyDims, " dimensions");
  discard_earlier_error();
  switch (out.dtype) {
    case DType::Float16: return run_rounded<__half>(out, self, kind, innermost, scratch, stream);
    case DType::BFloat16:
      return run_rounded<__nv_bfloat16>(out, self, kind, innermost, scratch, stream);
    case DType::Float32: return run_rounded<float>(out, self, kind, innermost, scratch, stream);
    case DType::Float64: return run_rounded<double>(out, self, kind, innermost, scratch, stream);
    default: break;
  }
  fail(str("cuda rounded scans: unsupported result dtype ", dtype_name(out.dtype),
           " (the real floating types are)"));
}

void launch_cumulative(const LineView& out, const LineView& self, bool product,
                       const ScanScratch& scratch, cudaStream_t stream) {
  AOTISHIM_CHECK(out.ndim == self.ndim && out.ndim <= kMaxCopyDims,
                 "cuda cumulative ops: up to ", kMaxCopyDims, " dimensions");
  discard_earlier_error();
  switch (out.dtype) {
    case DType::UInt8: return run<uint8_t, uint64_t>(out, self, product, scratch, stream);
    case DType::Int8: return run<int8_t, uint64_t>(out, self, product, scratch, stream);
    case DType::Int16: return run<int16_t, uint64_t>(out, self, product, scratch, stream);
    case DType::Int32: return run<int32_t, uint64_t>(out, self, product, scratch, stream);
    case DType::Int64: return run<int64_t, uint64_t>(out, self, product, scratch, stream);
    case DType::Float16: return run<__half, float>(out, self, product, scratch, stream);
    case DType::BFloat16: return run<__nv_bfloat16, float>(out, self, product, scratch, stream);
    case DType::Float32: return run<float, float>(out, self, product, scratch, stream);
    case DType::Float64: return run<double, double>(out, self, product, scratch, stream);
    default: break;
  }
  fail(str("cuda cumulative ops: unsupported result dtype ", dtype_name(out.dtype)));
}

}  // namespace cuda
}  // namespace aotishim
