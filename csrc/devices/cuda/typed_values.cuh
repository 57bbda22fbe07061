// Element access for cuda kernels (pad, hann_window, _fused_rms_norm,
// _addmm_activation, grid_sampler_3d, _trilinear, the distances, scans,
// running extrema, searchsorted): each
// storage type's computation type (float for float16 and bfloat16, as torch's
// opmath_type), loads and rounding stores between them, a flat index
// unravelled into a strided offset, and the host-side dispatch on a floating
// dtype. Included by .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "core/dtype.h"
#include "core/error.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

// The type a value of T is computed in: float for the 16-bit floats.
template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<__half> { using type = float; };
template <> struct OpMath<__nv_bfloat16> { using type = float; };
template <typename T> using opmath_of = typename OpMath<T>::type;

template <typename T> __device__ __forceinline__ opmath_of<T> load_value(T v) { return v; }
template <> __device__ __forceinline__ float load_value<__half>(__half v) {
  return __half2float(v);
}
template <> __device__ __forceinline__ float load_value<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// v rounded once (to nearest even) into T.
template <typename T> __device__ __forceinline__ T store_value(opmath_of<T> v) { return v; }
template <> __device__ __forceinline__ __half store_value<__half>(float v) {
  return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 store_value<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// v as T holds it, back in the computation type (an intermediate torch
// stores in a tensor of T).
template <typename T> __device__ __forceinline__ opmath_of<T> rounded_as(opmath_of<T> v) {
  return load_value<T>(store_value<T>(v));
}

// An element as a number that compares as the element does: float for the
// 16-bit floats and float32 (exact), double for float64, int64 for integers
// and bool (sorting, searching and running extrema compare these).
template <typename T> struct Compared { using type = int64_t; };
template <> struct Compared<float> { using type = float; };
template <> struct Compared<double> { using type = double; };
template <> struct Compared<__half> { using type = float; };
template <> struct Compared<__nv_bfloat16> { using type = float; };

template <typename T> __device__ __forceinline__ typename Compared<T>::type number(T v) {
  return static_cast<typename Compared<T>::type>(v);
}
template <> __device__ __forceinline__ float number(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float number(__nv_bfloat16 v) { return __bfloat162float(v); }

// Sizes and strides of one strided operand, passed to kernels by value.
struct StridedShape {
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
};

// The offset of row-major flat index i over s.sizes.
__device__ __forceinline__ int64_t offset_in(int64_t i, const StridedShape& s) {
  int64_t off = 0;
  for (int d = s.ndim - 1; d >= 0; --d) {
    off += (i % s.sizes[d]) * s.strides[d];
    i /= s.sizes[d];
  }
  return off;
}

// `sizes` (ndim of them) with `strides`; throws beyond kMaxCopyDims.
inline StridedShape strided_shape(const int64_t* sizes, const int64_t* strides, int64_t ndim,
                                  const char* what) {
  AOTISHIM_CHECK(ndim >= 0 && ndim <= kMaxCopyDims, what, ": up to ", kMaxCopyDims,
                 " dimensions, got ", ndim);
  StridedShape s;
  s.ndim = static_cast<int>(ndim);
  for (int64_t d = 0; d < ndim; ++d) {
    s.sizes[d] = sizes[d];
    s.strides[d] = strides[d];
  }
  return s;
}

// Calls f(T{}) with T the storage type of a real floating dtype; any other
// dtype is refused with `what` in the message.
template <typename F>
void dispatch_floating(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::Float32: f(float{}); return;
    case DType::Float64: f(double{}); return;
    case DType::Float16: f(__half{}); return;
    case DType::BFloat16: f(__nv_bfloat16{}); return;
    default: break;
  }
  fail(str(what, ": unsupported dtype ", dtype_name(t),
           " (float32, float64, float16 and bfloat16 are)"));
}

}  // namespace cuda
}  // namespace aotishim
