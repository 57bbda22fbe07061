// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011) and the distributions drawn from it on cuda. Element i (its
// row-major position in the output) takes the block of four 32-bit words at
// counter (i, attempt), under the op's 64-bit key; a value that must be
// drawn again (a uniform rounding up to its bound, an integer in the biased
// top block) takes attempt 1, 2, ... Values follow the cpu kernel's rules:
// uniforms carry exactly the dtype's significant bits, normals come from
// Box-Muller (complex: the pair's two values), exponentials from -log(u)
// with u in (0, 1), integers are unbiased.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/random_kernels.h"
#include "devices/cuda/launch_grid.h"

namespace aotishim {
namespace cuda {

namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;


struct Words {
  uint32_t w[4];
};

// The Philox4x32 bijection of `counter` under `key`, ten rounds.
__device__ __forceinline__ Words philox(uint64_t key, uint64_t index, uint32_t attempt) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = attempt, c3 = 0x243f6a88u;  // a fixed word: counters of other uses differ there
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(kM0, c0), lo0 = kM0 * c0;
    const uint32_t hi1 = __umulhi(kM1, c2), lo1 = kM1 * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return Words{{c0, c1, c2, c3}};
}

__device__ __forceinline__ uint64_t bits64(uint32_t lo, uint32_t hi) {
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
// [0, 1) with `digits` significant bits (1..53): exact in a dtype with that many.
__device__ __forceinline__ double unit(uint64_t x, int digits) {
  return static_cast<double>(x >> (64 - digits)) * exp2(-static_cast<double>(digits));
}
// (0, 1), for logarithms.
__device__ __forceinline__ double open_unit(uint64_t x) {
  return (static_cast<double>(x >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// ---- storage of each dtype ----
template <typename T> struct Elem {
  // Real values: the dtype's value of x (integers truncate, as a C++ cast).
  __device__ static T from_real(double x) { return static_cast<T>(x); }
  __device__ static T from_int(int64_t x) { return static_cast<T>(x); }
  __device__ static double to_real(T v) { return static_cast<double>(v); }
  static constexpr int digits = 53;
};
template <> struct Elem<bool> {
  __device__ static bool from_real(double x) { return x != 0.0; }
  __device__ static bool from_int(int64_t x) { return x != 0; }
  __device__ static double to_real(bool v) { return v ? 1.0 : 0.0; }
  static constexpr int digits = 1;
};
template <> struct Elem<float> {
  __device__ static float from_real(double x) { return static_cast<float>(x); }
  __device__ static float from_int(int64_t x) { return static_cast<float>(x); }
  __device__ static double to_real(float v) { return v; }
  static constexpr int digits = 24;
};
template <> struct Elem<__half> {
  __device__ static __half from_real(double x) { return __float2half_rn(static_cast<float>(x)); }
  __device__ static __half from_int(int64_t x) { return __float2half_rn(static_cast<float>(x)); }
  __device__ static double to_real(__half v) { return __half2float(v); }
  static constexpr int digits = 11;
};
template <> struct Elem<__nv_bfloat16> {
  __device__ static __nv_bfloat16 from_real(double x) {
    return __float2bfloat16_rn(static_cast<float>(x));
  }
  __device__ static __nv_bfloat16 from_int(int64_t x) {
    return __float2bfloat16_rn(static_cast<float>(x));
  }
  __device__ static double to_real(__nv_bfloat16 v) { return __bfloat162float(v); }
  static constexpr int digits = 8;
};

// The arithmetic type dropout scales in (torch's: float for the half types).
template <typename T> struct Compute { using type = float; };
template <> struct Compute<double> { using type = double; };

struct Shape {
  int ndim;
  int64_t sizes[kMaxCopyDims];
};

// Element offset of row-major position i in a view with `strides`.
__device__ __forceinline__ int64_t offset_of(int64_t i, const Shape& s, const int64_t* strides) {
  int64_t off = 0;
  for (int d = s.ndim - 1; d >= 0; --d) {
    const int64_t size = s.sizes[d];
    off += (i % size) * strides[d];
    i /= size;
  }
  return off;
}

// One real value of kind Uniform/Normal/Exponential for part `part` (0 or 1)
// of position i; `Part` is the type the value is stored in.
template <typename Part>
__device__ Part real_value(const RandomLaunch& L, int64_t i, int part, double part_std) {
  switch (L.kind) {
    case DeviceRandomKind::Uniform:
      for (uint32_t attempt = 0;; ++attempt) {
        const Words r = philox(L.key, i, attempt);
        const uint64_t x = part == 0 ? bits64(r.w[0], r.w[1]) : bits64(r.w[2], r.w[3]);
        const Part v = Elem<Part>::from_real(L.a + unit(x, Elem<Part>::digits) * (L.b - L.a));
        if (!(L.b > L.a && Elem<Part>::to_real(v) >= L.b)) return v;
      }
    case DeviceRandomKind::Normal: {
      const Words r = philox(L.key, i, 0);
      const double radius = sqrt(-2.0 * ::log(open_unit(bits64(r.w[0], r.w[1]))));
      const double angle = kTwoPi * unit(bits64(r.w[2], r.w[3]), 53);
      const double z = part == 0 ? radius * cos(angle) : radius * sin(angle);
      return Elem<Part>::from_real(L.a + part_std * z);
    }
    default: {  // Exponential
      const Words r = philox(L.key, i, 0);
      const uint64_t x = part == 0 ? bits64(r.w[0], r.w[1]) : bits64(r.w[2], r.w[3]);
      return Elem<Part>::from_real(-::log(open_unit(x)) / L.a);
    }
  }
}

// Uniform in [0, range) without bias (range 0: the whole 64 bits).
__device__ uint64_t below(const RandomLaunch& L, int64_t i) {
  const Words first = philox(L.key, i, 0);
  if (L.range == 0) return bits64(first.w[0], first.w[1]);
  const uint64_t limit = (0 - L.range) % L.range;  // 2^64 mod range: the biased block
  for (uint32_t attempt = 0;; ++attempt) {
    const Words r = attempt == 0 ? first : philox(L.key, i, attempt);
    const uint64_t x0 = bits64(r.w[0], r.w[1]), x1 = bits64(r.w[2], r.w[3]);
    if (x0 >= limit) return x0 % L.range;
    if (x1 >= limit) return x1 % L.range;
  }
}

template <typename T>
__global__ void real_kernel(RandomLaunch L, Shape s) {
  T* out = static_cast<T*>(L.out.data);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < L.numel;
       i += step) {
    const int64_t off = offset_of(i, s, L.out.strides);
    T v;
    switch (L.kind) {
      case DeviceRandomKind::Integer:
        // low + draw wraps in 64 bits: the result lies in [low, high).
        v = Elem<T>::from_int(static_cast<int64_t>(static_cast<uint64_t>(L.low) + below(L, i)));
        break;
      case DeviceRandomKind::Bernoulli: {
        const double p = L.p != nullptr ? L.p[i] : L.a;
        const Words r = philox(L.key, i, 0);
        v = Elem<T>::from_int(unit(bits64(r.w[0], r.w[1]), 53) < p ? 1 : 0);
        break;
      }
      case DeviceRandomKind::Permutation: v = Elem<T>::from_int(L.perm[i]); break;
      case DeviceRandomKind::Dropout: {
        using C = typename Compute<T>::type;
        const Words r = philox(L.key, i, 0);
        const bool keep = unit(bits64(r.w[0], r.w[1]), 53) < 1.0 - L.a;
        const T* in = static_cast<const T*>(L.input.data);
        const C x = static_cast<C>(Elem<T>::to_real(in[offset_of(i, s, L.input.strides)]));
        static_cast<bool*>(L.mask.data)[offset_of(i, s, L.mask.strides)] = keep;
        v = Elem<T>::from_real(static_cast<double>(x * static_cast<C>(keep ? 1 : 0) *
                                                   static_cast<C>(L.b)));
        break;
      }
      default: v = real_value<T>(L, i, 0, L.b); break;
    }
    out[off] = v;
  }
}

// Complex outputs: (real, imaginary) pairs of Part.
template <typename Part>
__global__ void complex_kernel(RandomLaunch L, Shape s) {
  Part* out = static_cast<Part*>(L.out.data);
  const double part_std = L.b * 0.70710678118654752440;  // each part b^2 / 2 of the variance
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < L.numel;
       i += step) {
    const int64_t off = 2 * offset_of(i, s, L.out.strides);
    out[off] = real_value<Part>(L, i, 0, part_std);
    out[off + 1] = real_value<Part>(L, i, 1, part_std);
  }
}

__global__ void check_probabilities_kernel(const double* p, int64_t n, int32_t* bad) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    if (!(p[i] >= 0.0 && p[i] <= 1.0)) *bad = 1;
}

template <typename T>
void launch_real(const RandomLaunch& L, const Shape& s, cudaStream_t stream) {
  real_kernel<T><<<blocks_for(L.numel), kThreads, 0, stream>>>(L, s);
}

template <typename Part>
void launch_complex(const RandomLaunch& L, const Shape& s, cudaStream_t stream) {
  complex_kernel<Part><<<blocks_for(L.numel), kThreads, 0, stream>>>(L, s);
}

// (The core's dtype predicates are not exported to the plugin.)
bool floating_dtype(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
bool complex_dtype(DType t) { return t == DType::Complex64 || t == DType::Complex128; }

}  // namespace

void launch_random(const RandomLaunch& L, cudaStream_t stream) {
  if (L.numel == 0) return;
  AOTISHIM_CHECK(L.ndim >= 0 && L.ndim <= kMaxCopyDims, "cuda random: up to ", kMaxCopyDims,
                 " dimensions, got ", L.ndim);
  Shape s{L.ndim, {}};
  for (int d = 0; d < L.ndim; ++d) s.sizes[d] = L.sizes[d];
  const bool real_kind = L.kind == DeviceRandomKind::Uniform ||
                         L.kind == DeviceRandomKind::Normal ||
                         L.kind == DeviceRandomKind::Exponential;
  const DType t = L.out.dtype;
  AOTISHIM_CHECK(!real_kind || floating_dtype(t) || complex_dtype(t), "cuda random: dtype ",
                 dtype_name(t), " cannot hold this distribution");
  AOTISHIM_CHECK(!complex_dtype(t) || real_kind, "cuda random: dtype ", dtype_name(t),
                 " is not supported here");
  AOTISHIM_CHECK(L.kind != DeviceRandomKind::Dropout || floating_dtype(t),
                 "cuda dropout: dtype ", dtype_name(t), " is not supported");
  discard_earlier_error();
  switch (t) {
    case DType::Bool: launch_real<bool>(L, s, stream); break;
    case DType::UInt8: launch_real<uint8_t>(L, s, stream); break;
    case DType::Int8: launch_real<int8_t>(L, s, stream); break;
    case DType::Int16: launch_real<int16_t>(L, s, stream); break;
    case DType::Int32: launch_real<int32_t>(L, s, stream); break;
    case DType::Int64: launch_real<int64_t>(L, s, stream); break;
    case DType::UInt16: launch_real<uint16_t>(L, s, stream); break;
    case DType::UInt32: launch_real<uint32_t>(L, s, stream); break;
    case DType::UInt64: launch_real<uint64_t>(L, s, stream); break;
    case DType::Float16: launch_real<__half>(L, s, stream); break;
    case DType::BFloat16: launch_real<__nv_bfloat16>(L, s, stream); break;
    case DType::Float32: launch_real<float>(L, s, stream); break;
    case DType::Float64: launch_real<double>(L, s, stream); break;
    case DType::Complex64: launch_complex<float>(L, s, stream); break;
    case DType::Complex128: launch_complex<double>(L, s, stream); break;
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_check_probabilities(const double* p, int64_t n, int32_t* bad_out,
                                cudaStream_t stream) {
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(bad_out, 0, sizeof(int32_t), stream));
  if (n > 0) check_probabilities_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, n, bad_out);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
