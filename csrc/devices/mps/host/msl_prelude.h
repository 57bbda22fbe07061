// The Metal Shading Language as C++, for the host Metal: compiled (after
// kernel_abi.h) ahead of every library's translated source. msl_translate
// has already removed the [[...]] attributes and the `kernel` keyword and
// turned threadgroup variables into per-threadgroup storage; what remains is
// MSL's vocabulary: address spaces, scalar and vector types, the math and
// SIMD-group functions, barriers.
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

// Address spaces: all memory is host memory.
#define device
#define constant
#define threadgroup
#define thread

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;  // 64-bit, as MSL's
typedef _Float16 half;
typedef __bf16 bfloat;
static_assert(sizeof(long) == 8, "MSL's long is 64-bit");

#define AOTISHIM_MSL_VECTORS(T)                                  \
  typedef T T##2 __attribute__((ext_vector_type(2)));          \
  typedef T T##3 __attribute__((ext_vector_type(3)));          \
  typedef T T##4 __attribute__((ext_vector_type(4)));
AOTISHIM_MSL_VECTORS(float)
AOTISHIM_MSL_VECTORS(half)
AOTISHIM_MSL_VECTORS(int)
AOTISHIM_MSL_VECTORS(uint)
AOTISHIM_MSL_VECTORS(short)
AOTISHIM_MSL_VECTORS(ushort)
AOTISHIM_MSL_VECTORS(char)
AOTISHIM_MSL_VECTORS(uchar)
AOTISHIM_MSL_VECTORS(long)
AOTISHIM_MSL_VECTORS(ulong)
AOTISHIM_MSL_VECTORS(bool)
#undef AOTISHIM_MSL_VECTORS
// MSL's sizes: a 3-vector takes the room of a 4-vector.
static_assert(sizeof(float3) == 16 && sizeof(half3) == 8 && sizeof(uint3) == 16, "MSL vector sizes");

#define MAXFLOAT FLT_MAX
#define HUGE_VALH ((half)INFINITY)
#define M_PI_F 3.14159265358979323846f
#define M_E_F 2.71828182845904523536f
#define M_LN2_F 0.69314718055994530942f
#define M_SQRT2_F 1.41421356237309504880f

// The current thread of the running fiber: set by the entry wrapper, restored
// after every call that may switch fibers.
static thread_local const aotishim_msl_thread* aotishim_msl_self;

namespace metal {

enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
constexpr mem_flags mem_none = mem_flags::mem_none;
constexpr mem_flags mem_device = mem_flags::mem_device;
constexpr mem_flags mem_threadgroup = mem_flags::mem_threadgroup;
constexpr mem_flags mem_texture = mem_flags::mem_texture;
inline mem_flags operator|(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<int>(a) | static_cast<int>(b));
}

inline void threadgroup_barrier(mem_flags = mem_flags::mem_none) {
  const aotishim_msl_thread* self = aotishim_msl_self;
  self->runtime->threadgroup_barrier(self);
  aotishim_msl_self = self;
}

template <typename To, typename From>
inline To as_type(From v) {
  static_assert(sizeof(To) == sizeof(From), "as_type: sizes differ");
  return __builtin_bit_cast(To, v);
}

// ---- math: float, half (through float) and vectors of them, elementwise ----
template <typename T>
struct vector_traits {
  using scalar = T;
  static constexpr int size = 1;
};
template <typename T, int N>
struct vector_traits<T __attribute__((ext_vector_type(N)))> {
  using scalar = T;
  static constexpr int size = N;
};

template <typename T, typename F>
inline T elementwise(T v, F f) {
  if constexpr (vector_traits<T>::size == 1) {
    return static_cast<T>(f(static_cast<float>(v)));
  } else {
    T r;
    for (int i = 0; i < vector_traits<T>::size; ++i) {
      r[i] = static_cast<typename vector_traits<T>::scalar>(f(static_cast<float>(v[i])));
    }
    return r;
  }
}
template <typename T, typename F>
inline T elementwise2(T a, T b, F f) {
  if constexpr (vector_traits<T>::size == 1) {
    return static_cast<T>(f(static_cast<float>(a), static_cast<float>(b)));
  } else {
    T r;
    for (int i = 0; i < vector_traits<T>::size; ++i) {
      r[i] = static_cast<typename vector_traits<T>::scalar>(
          f(static_cast<float>(a[i]), static_cast<float>(b[i])));
    }
    return r;
  }
}

template <typename T>
using floating_t = std::enable_if_t<std::is_floating_point_v<typename vector_traits<T>::scalar> ||
                                        std::is_same_v<typename vector_traits<T>::scalar, half>,
                                    T>;

#define AOTISHIM_MSL_UNARY(NAME, EXPR) \
  template <typename T>                \
  inline floating_t<T> NAME(T v) {     \
    return elementwise(v, [](float x) { return EXPR; }); \
  }
AOTISHIM_MSL_UNARY(exp, std::exp(x))
AOTISHIM_MSL_UNARY(exp2, std::exp2(x))
AOTISHIM_MSL_UNARY(log, std::log(x))
AOTISHIM_MSL_UNARY(log2, std::log2(x))
AOTISHIM_MSL_UNARY(sqrt, std::sqrt(x))
AOTISHIM_MSL_UNARY(rsqrt, 1.0f / std::sqrt(x))
AOTISHIM_MSL_UNARY(fabs, std::fabs(x))
AOTISHIM_MSL_UNARY(floor, std::floor(x))
AOTISHIM_MSL_UNARY(ceil, std::ceil(x))
AOTISHIM_MSL_UNARY(round, std::round(x))
AOTISHIM_MSL_UNARY(rint, std::rint(x))
AOTISHIM_MSL_UNARY(trunc, std::trunc(x))
AOTISHIM_MSL_UNARY(sin, std::sin(x))
AOTISHIM_MSL_UNARY(cos, std::cos(x))
AOTISHIM_MSL_UNARY(tan, std::tan(x))
AOTISHIM_MSL_UNARY(tanh, std::tanh(x))
AOTISHIM_MSL_UNARY(erf, std::erf(x))
AOTISHIM_MSL_UNARY(sigmoid, 1.0f / (1.0f + std::exp(-x)))
#undef AOTISHIM_MSL_UNARY

template <typename T>
inline floating_t<T> pow(T a, T b) {
  return elementwise2(a, b, [](float x, float y) { return std::pow(x, y); });
}
template <typename T>
inline floating_t<T> fmin(T a, T b) {
  return elementwise2(a, b, [](float x, float y) { return std::fmin(x, y); });
}
template <typename T>
inline floating_t<T> fmax(T a, T b) {
  return elementwise2(a, b, [](float x, float y) { return std::fmax(x, y); });
}
template <typename T>
inline floating_t<T> fma(T a, T b, T c) {
  if constexpr (vector_traits<T>::size == 1) {
    return static_cast<T>(std::fma(float(a), float(b), float(c)));
  } else {
    return a * b + c;
  }
}

// min/max/clamp/abs: floating (IEEE fmin/fmax, as Metal without fast math)
// and integer.
template <typename T>
inline T min(T a, T b) {
  if constexpr (std::is_integral_v<T>) return a < b ? a : b;
  else return fmin(a, b);
}
template <typename T>
inline T max(T a, T b) {
  if constexpr (std::is_integral_v<T>) return a > b ? a : b;
  else return fmax(a, b);
}
template <typename T>
inline T clamp(T x, T lo, T hi) {
  return min(max(x, lo), hi);
}
template <typename T>
inline T abs(T v) {
  if constexpr (std::is_integral_v<T>) return v < 0 ? -v : v;
  else return fabs(v);
}
template <typename T>
inline bool isnan(T v) {
  return std::isnan(static_cast<float>(v));
}
template <typename T>
inline bool isinf(T v) {
  return std::isinf(static_cast<float>(v));
}
template <typename T>
inline bool isfinite(T v) {
  return std::isfinite(static_cast<float>(v));
}
template <typename T>
inline T select(T a, T b, bool c) {
  return c ? b : a;
}

namespace precise {
using metal::exp;
using metal::log;
using metal::sqrt;
using metal::tanh;
}  // namespace precise
namespace fast {
using metal::exp;
using metal::log;
using metal::sqrt;
using metal::tanh;
}  // namespace fast

// ---- SIMD-group functions, over the runtime's exchange ----
// Each function is its own exchange op, so lanes that diverge into different
// SIMD-group functions are reported rather than mixed.
enum simd_op : uint32_t {
  simd_op_sum = 1,
  simd_op_prod,
  simd_op_max,
  simd_op_min,
  simd_op_and,
  simd_op_or,
  simd_op_xor,
  simd_op_shuffle,
  simd_op_shuffle_xor,
  simd_op_shuffle_down,
  simd_op_shuffle_up,
  simd_op_broadcast,
  simd_op_prefix_inclusive_sum,
  simd_op_prefix_exclusive_sum,
  simd_op_all,
  simd_op_any,
  simd_op_ballot,
  simd_op_barrier,
  simd_op_is_first,
};

template <typename T>
struct simd_lanes {
  T value[AOTISHIM_MSL_SIMD_WIDTH];
  uint32_t active;
  bool is_active(uint32_t lane) const { return (active >> lane) & 1u; }
};

template <typename T>
inline simd_lanes<T> simd_exchange(simd_op op, T v) {
  static_assert(sizeof(T) <= AOTISHIM_MSL_SIMD_VALUE_BYTES, "SIMD-group value too large");
  unsigned char raw[AOTISHIM_MSL_SIMD_WIDTH][AOTISHIM_MSL_SIMD_VALUE_BYTES];
  simd_lanes<T> lanes;
  const aotishim_msl_thread* self = aotishim_msl_self;
  self->runtime->simd_exchange(self, op, &v, sizeof(T), raw, &lanes.active);
  aotishim_msl_self = self;
  for (int i = 0; i < AOTISHIM_MSL_SIMD_WIDTH; ++i) std::memcpy(&lanes.value[i], raw[i], sizeof(T));
  return lanes;
}

inline uint32_t simd_lane() { return aotishim_msl_self->thread_index_in_simdgroup; }

// Reductions fold the active lanes in lane order.
template <typename T, typename F>
inline T simd_fold(simd_op op, T v, F f) {
  simd_lanes<T> lanes = simd_exchange(op, v);
  bool first = true;
  T acc = v;
  for (uint32_t i = 0; i < AOTISHIM_MSL_SIMD_WIDTH; ++i) {
    if (!lanes.is_active(i)) continue;
    acc = first ? lanes.value[i] : f(acc, lanes.value[i]);
    first = false;
  }
  return acc;
}

template <typename T>
inline T simd_sum(T v) {
  return simd_fold(simd_op_sum, v, [](T a, T b) { return T(a + b); });
}
template <typename T>
inline T simd_product(T v) {
  return simd_fold(simd_op_prod, v, [](T a, T b) { return T(a * b); });
}
template <typename T>
inline T simd_max(T v) {
  return simd_fold(simd_op_max, v, [](T a, T b) { return max(a, b); });
}
template <typename T>
inline T simd_min(T v) {
  return simd_fold(simd_op_min, v, [](T a, T b) { return min(a, b); });
}
template <typename T>
inline T simd_and(T v) {
  return simd_fold(simd_op_and, v, [](T a, T b) { return T(a & b); });
}
template <typename T>
inline T simd_or(T v) {
  return simd_fold(simd_op_or, v, [](T a, T b) { return T(a | b); });
}
template <typename T>
inline T simd_xor(T v) {
  return simd_fold(simd_op_xor, v, [](T a, T b) { return T(a ^ b); });
}

template <typename T>
inline T simd_shuffle(T v, ushort lane) {
  simd_lanes<T> lanes = simd_exchange(simd_op_shuffle, v);
  return lanes.value[lane % AOTISHIM_MSL_SIMD_WIDTH];
}
template <typename T>
inline T simd_broadcast(T v, ushort lane) {
  simd_lanes<T> lanes = simd_exchange(simd_op_broadcast, v);
  return lanes.value[lane % AOTISHIM_MSL_SIMD_WIDTH];
}
template <typename T>
inline T simd_broadcast_first(T v) {
  simd_lanes<T> lanes = simd_exchange(simd_op_broadcast, v);
  for (uint32_t i = 0; i < AOTISHIM_MSL_SIMD_WIDTH; ++i) {
    if (lanes.is_active(i)) return lanes.value[i];
  }
  return v;
}
template <typename T>
inline T simd_shuffle_xor(T v, ushort mask) {
  simd_lanes<T> lanes = simd_exchange(simd_op_shuffle_xor, v);
  return lanes.value[(simd_lane() ^ mask) % AOTISHIM_MSL_SIMD_WIDTH];
}
// Lanes whose source is outside the SIMD group keep their own value.
template <typename T>
inline T simd_shuffle_down(T v, ushort delta) {
  const uint32_t lane = simd_lane();
  simd_lanes<T> lanes = simd_exchange(simd_op_shuffle_down, v);
  return lane + delta < AOTISHIM_MSL_SIMD_WIDTH ? lanes.value[lane + delta] : v;
}
template <typename T>
inline T simd_shuffle_up(T v, ushort delta) {
  const uint32_t lane = simd_lane();
  simd_lanes<T> lanes = simd_exchange(simd_op_shuffle_up, v);
  return lane >= delta ? lanes.value[lane - delta] : v;
}
template <typename T>
inline T simd_prefix_inclusive_sum(T v) {
  const uint32_t lane = simd_lane();
  simd_lanes<T> lanes = simd_exchange(simd_op_prefix_inclusive_sum, v);
  T acc = T(0);
  for (uint32_t i = 0; i <= lane; ++i) {
    if (lanes.is_active(i)) acc += lanes.value[i];
  }
  return acc;
}
template <typename T>
inline T simd_prefix_exclusive_sum(T v) {
  const uint32_t lane = simd_lane();
  simd_lanes<T> lanes = simd_exchange(simd_op_prefix_exclusive_sum, v);
  T acc = T(0);
  for (uint32_t i = 0; i < lane; ++i) {
    if (lanes.is_active(i)) acc += lanes.value[i];
  }
  return acc;
}
inline bool simd_all(bool v) {
  simd_lanes<bool> lanes = simd_exchange(simd_op_all, v);
  for (uint32_t i = 0; i < AOTISHIM_MSL_SIMD_WIDTH; ++i) {
    if (lanes.is_active(i) && !lanes.value[i]) return false;
  }
  return true;
}
inline bool simd_any(bool v) {
  simd_lanes<bool> lanes = simd_exchange(simd_op_any, v);
  for (uint32_t i = 0; i < AOTISHIM_MSL_SIMD_WIDTH; ++i) {
    if (lanes.is_active(i) && lanes.value[i]) return true;
  }
  return false;
}
inline bool simd_is_first() {
  const uint32_t lane = simd_lane();
  simd_lanes<bool> lanes = simd_exchange(simd_op_is_first, true);
  for (uint32_t i = 0; i < AOTISHIM_MSL_SIMD_WIDTH; ++i) {
    if (lanes.is_active(i)) return i == lane;
  }
  return false;
}
inline uint64_t simd_ballot(bool v) {
  simd_lanes<bool> lanes = simd_exchange(simd_op_ballot, v);
  uint64_t bits = 0;
  for (uint32_t i = 0; i < AOTISHIM_MSL_SIMD_WIDTH; ++i) {
    if (lanes.is_active(i) && lanes.value[i]) bits |= uint64_t(1) << i;
  }
  return bits;
}
inline void simdgroup_barrier(mem_flags = mem_flags::mem_none) {
  (void)simd_exchange(simd_op_barrier, 0);
}

}  // namespace metal

// ---- what the entry wrappers use ----
template <typename T>
inline T aotishim_msl_buffer_arg(void* p) {
  if constexpr (std::is_reference_v<T>) {
    return *reinterpret_cast<std::remove_reference_t<T>*>(p);
  } else {
    static_assert(std::is_pointer_v<T>, "a [[buffer]] or [[threadgroup]] parameter is a pointer or reference");
    return reinterpret_cast<T>(p);
  }
}

// A position attribute as the parameter's type: a scalar takes x, a vector
// as many components as it has.
template <typename T>
inline T aotishim_msl_position(const uint32_t (&v)[3]) {
  using traits = metal::vector_traits<T>;
  if constexpr (traits::size == 1) {
    return static_cast<T>(v[0]);
  } else {
    T r;
    for (int i = 0; i < traits::size; ++i) r[i] = static_cast<typename traits::scalar>(v[i]);
    return r;
  }
}
template <typename T>
inline T aotishim_msl_position(uint32_t v) {
  static_assert(metal::vector_traits<T>::size == 1, "this attribute is a scalar");
  return static_cast<T>(v);
}
