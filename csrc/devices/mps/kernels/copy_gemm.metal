// The mps device's copy and GEMM kernels (MSL), with the helpers the other
// kernels use (bf16_t, load_value/store_value, load_float, dtype_size).
// The library source is kernels/params.h followed by this file, conv.metal
// and sdpa.metal. bfloat16 is handled as raw bits so the source needs no
// particular language version.
#include <metal_stdlib>
using namespace metal;

struct bf16_t {
  ushort bits;
};

inline float bf16_bits_to_float(ushort v) { return as_type<float>(uint(v) << 16); }

// Round to nearest even; NaN stays NaN.
inline ushort float_to_bf16_bits(float f) {
  uint bits = as_type<uint>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return ushort((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return ushort(bits >> 16);
}

inline bool dtype_is_floating(int dt) {
  return dt == AOTISHIM_DT_FLOAT16 || dt == AOTISHIM_DT_FLOAT32 || dt == AOTISHIM_DT_BFLOAT16;
}

inline int dtype_size(int dt) {
  switch (dt) {
    case AOTISHIM_DT_INT16:
    case AOTISHIM_DT_FLOAT16:
    case AOTISHIM_DT_BFLOAT16:
      return 2;
    case AOTISHIM_DT_INT32:
    case AOTISHIM_DT_FLOAT32:
      return 4;
    case AOTISHIM_DT_INT64:
    case AOTISHIM_DT_FLOAT64:
      return 8;
    default:
      return 1;
  }
}

inline float load_float(device const uchar* p, int dt) {
  switch (dt) {
    case AOTISHIM_DT_FLOAT32: return *(device const float*)p;
    case AOTISHIM_DT_FLOAT16: return float(*(device const half*)p);
    case AOTISHIM_DT_BFLOAT16: return bf16_bits_to_float(*(device const ushort*)p);
    case AOTISHIM_DT_UINT8: return float(*p);
    case AOTISHIM_DT_INT8: return float(*(device const char*)p);
    case AOTISHIM_DT_INT16: return float(*(device const short*)p);
    case AOTISHIM_DT_INT32: return float(*(device const int*)p);
    case AOTISHIM_DT_INT64: return float(*(device const long*)p);
    case AOTISHIM_DT_BOOL: return *p != 0 ? 1.0f : 0.0f;
    default: return 0.0f;
  }
}

inline long load_long(device const uchar* p, int dt) {
  switch (dt) {
    case AOTISHIM_DT_UINT8: return long(*p);
    case AOTISHIM_DT_INT8: return long(*(device const char*)p);
    case AOTISHIM_DT_INT16: return long(*(device const short*)p);
    case AOTISHIM_DT_INT32: return long(*(device const int*)p);
    case AOTISHIM_DT_INT64: return *(device const long*)p;
    case AOTISHIM_DT_BOOL: return *p != 0 ? 1 : 0;
    default: return long(load_float(p, dt));  // floating: truncates toward zero
  }
}

inline void store_float(device uchar* p, int dt, float v) {
  switch (dt) {
    case AOTISHIM_DT_FLOAT32: *(device float*)p = v; break;
    case AOTISHIM_DT_FLOAT16: *(device half*)p = half(v); break;
    case AOTISHIM_DT_BFLOAT16: *(device ushort*)p = float_to_bf16_bits(v); break;
    default: break;
  }
}

inline void store_long(device uchar* p, int dt, long v) {
  switch (dt) {
    case AOTISHIM_DT_UINT8: *p = uchar(v); break;
    case AOTISHIM_DT_INT8: *(device char*)p = char(v); break;
    case AOTISHIM_DT_INT16: *(device short*)p = short(v); break;
    case AOTISHIM_DT_INT32: *(device int*)p = int(v); break;
    case AOTISHIM_DT_INT64: *(device long*)p = v; break;
    case AOTISHIM_DT_BOOL: *p = v != 0 ? 1 : 0; break;
    default: break;
  }
}

// One thread per element of the (coalesced) view, row-major order.
[[kernel]] void aotishim_copy(device uchar* dst [[buffer(0)]],
                              device const uchar* src [[buffer(1)]],
                              constant CopyParams& p [[buffer(2)]],
                              uint gid [[thread_position_in_grid]]) {
  long rest = long(gid);
  long d = 0;
  long s = 0;
  for (int i = p.ndim - 1; i >= 0; --i) {
    long size = p.sizes[i];
    long idx = rest % size;
    rest /= size;
    d += idx * p.dst_strides[i];
    s += idx * p.src_strides[i];
  }
  int dsize = dtype_size(p.dst_dtype);
  int ssize = dtype_size(p.src_dtype);
  device uchar* dp = dst + d * dsize;
  device const uchar* sp = src + s * ssize;
  if (p.dst_dtype == p.src_dtype) {
    switch (dsize) {
      case 1: *dp = *sp; break;
      case 2: *(device ushort*)dp = *(device const ushort*)sp; break;
      case 4: *(device uint*)dp = *(device const uint*)sp; break;
      default: *(device ulong*)dp = *(device const ulong*)sp; break;
    }
  } else if (dtype_is_floating(p.dst_dtype)) {
    store_float(dp, p.dst_dtype, load_float(sp, p.src_dtype));
  } else if (p.dst_dtype == AOTISHIM_DT_BOOL) {
    bool nonzero = dtype_is_floating(p.src_dtype) ? load_float(sp, p.src_dtype) != 0.0f
                                            : load_long(sp, p.src_dtype) != 0;
    *dp = nonzero ? 1 : 0;
  } else {
    store_long(dp, p.dst_dtype, load_long(sp, p.src_dtype));
  }
}

inline float load_value(device const float* p) { return *p; }
inline float load_value(device const half* p) { return float(*p); }
inline float load_value(device const bf16_t* p) { return bf16_bits_to_float(p->bits); }
inline void store_value(device float* p, float v) { *p = v; }
inline void store_value(device half* p, float v) { *p = half(v); }
inline void store_value(device bf16_t* p, float v) { p->bits = float_to_bf16_bits(v); }

// out[b] = alpha * a[b] @ b[b] + beta * out[b], one thread per output
// element, any strides, float accumulation. With beta == 0 out is not read.
template <typename T>
[[kernel]] void aotishim_gemm(device T* out [[buffer(0)]],
                              device const T* a [[buffer(1)]],
                              device const T* b [[buffer(2)]],
                              constant GemmParams& p [[buffer(3)]],
                              uint3 gid [[thread_position_in_grid]]) {
  long col = long(gid.x);
  long row = long(gid.y);
  long bi = long(gid.z);
  if (col >= p.n || row >= p.m || bi >= p.batch) return;
  device const T* ap = a + bi * p.a_strides[0] + row * p.a_strides[1];
  device const T* bp = b + bi * p.b_strides[0] + col * p.b_strides[2];
  float acc = 0.0f;
  for (long i = 0; i < p.k; ++i) {
    acc += load_value(ap + i * p.a_strides[2]) * load_value(bp + i * p.b_strides[1]);
  }
  device T* op = out + bi * p.out_strides[0] + row * p.out_strides[1] + col * p.out_strides[2];
  float result = p.alpha * acc;
  if (p.beta != 0.0f) result += p.beta * load_value(op);
  store_value(op, result);
}

#define AOTISHIM_GEMM(NAME, T)                                          \
  template [[host_name(NAME)]] [[kernel]] void aotishim_gemm<T>(         \
      device T* out [[buffer(0)]], device const T* a [[buffer(1)]],     \
      device const T* b [[buffer(2)]], constant GemmParams& p [[buffer(3)]], \
      uint3 gid [[thread_position_in_grid]]);

AOTISHIM_GEMM("aotishim_gemm_float32", float)
AOTISHIM_GEMM("aotishim_gemm_float16", half)
AOTISHIM_GEMM("aotishim_gemm_bfloat16", bf16_t)
