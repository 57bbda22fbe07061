// cumsum and cumprod: the elements are converted to the result's dtype and
// widened to its accumulation type into a packed buffer (lines along the
// last dimension), CUB scans each line (DeviceScan::InclusiveScanByKey, the
// key being the line), and a kernel stores the sums into the output's
// layout in its dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <type_traits>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/scan_kernels.h"
#include "devices/cuda/launch_grid.h"

namespace aotishim {
namespace cuda {

namespace {


struct Geometry {
  int ndim;
  int64_t sizes[kMaxCopyDims];
  int64_t strides[kMaxCopyDims];
};

Geometry geometry(const LineView& v) {
  Geometry g{v.ndim, {}, {}};
  for (int d = 0; d < v.ndim; ++d) {
    g.sizes[d] = v.sizes[d];
    g.strides[d] = v.strides[d];
  }
  return g;
}

__device__ __forceinline__ int64_t offset_of(int64_t j, const Geometry& g) {
  int64_t off = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    off += (j % g.sizes[d]) * g.strides[d];
    j /= g.sizes[d];
  }
  return off;
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
__global__ void gather_kernel(const In* self, Geometry g, int64_t total, DType out_dtype,
                              Acc* acc) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    const auto w = Wide<In>::get(self[offset_of(j, g)]);
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
__global__ void store_kernel(const Acc* acc, Geometry g, int64_t total, Out* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    if constexpr (std::is_same_v<Acc, uint64_t>) out[offset_of(j, g)] = static_cast<Out>(acc[j]);
    else out[offset_of(j, g)] = narrow<Out>(static_cast<double>(acc[j]));
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
  const Geometry g = geometry(self);
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

}  // namespace

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
