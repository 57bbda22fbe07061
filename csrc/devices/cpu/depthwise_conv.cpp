// Depthwise convolution on host memory (see depthwise_conv.h): direct loops
// over vectors, one of two ways, picked by the output's layout so that sums
// are stored where they are computed:
// - channels-last output: vectors of channels. Per output position and block
//   of channels the taps are summed in registers, four positions at once
//   where the whole window lies inside the input (a tap's weights, repacked
//   once per call as [tap][channel], then serve all four). The input is read
//   in place when its channels are unit-stride, one per output channel, and
//   float; otherwise it is first copied into that layout (bfloat16 widened
//   there once, rather than on every tap's load).
// - contiguous output: vectors of one channel's output positions. Each input
//   plane is copied, zero-padded and split into stride x stride phases, so
//   every tap reads unit-stride runs with no bounds checks; the output plane
//   is computed at the phases' row pitch (a few wasted columns per row, but
//   even a 2x2 plane fills a vector) and copied out.
// bfloat16 is widened on load and rounded once on store (float32 sums, as in
// torch); float64 sums in float64.
//
// Vectors are GCC/Clang vector extensions, which the compiler lowers to the
// enclosing function's target. The library is built for the baseline ISA,
// so on x86-64 the loops are compiled again for AVX2+FMA (and the
// channels-last one for AVX-512), and the widest the CPU has runs.
#include "devices/cpu/depthwise_conv.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "devices/cpu/parallel.h"
#include "devices/cpu/vector_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AOTISHIM_DW_X86 1
#define AOTISHIM_DW_AVX2 __attribute__((target("avx2,fma")))
// BW and VL: 16-bit lanes (bfloat16) in 512-bit and shorter vectors.
#define AOTISHIM_DW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))
#endif

// The loop bodies are inlined into each target's entry point, so they are
// compiled for that target.
#define AOTISHIM_DW_INLINE inline __attribute__((always_inline))

namespace aotishim::cpu {
namespace {

// Below this many multiply-adds a split over threads costs more than it saves.
constexpr int64_t kMinSplitWork = int64_t{1} << 15;
// A channel block's weights for every tap should stay in L1 while the
// positions of a row stream past them.
constexpr int64_t kWeightBlockBytes = 16 << 10;

// B-byte vectors of T; H and W: bfloat16 bits and their widened form.
template <typename T, int B>
struct Simd;
template <>
struct Simd<float, 32> {
  typedef float V __attribute__((vector_size(32)));
  typedef uint16_t H __attribute__((vector_size(16)));
  typedef uint32_t W __attribute__((vector_size(32)));
};
template <>
struct Simd<float, 64> {
  typedef float V __attribute__((vector_size(64)));
  typedef uint16_t H __attribute__((vector_size(32)));
  typedef uint32_t W __attribute__((vector_size(64)));
};
template <>
struct Simd<double, 32> {
  typedef double V __attribute__((vector_size(32)));
};
template <>
struct Simd<double, 64> {
  typedef double V __attribute__((vector_size(64)));
};
template <typename T, int B>
constexpr int64_t kLanes = B / int64_t(sizeof(T));

// Loads and stores through memcpy: no alignment assumed. Vectors travel by
// reference: passing them by value changes the ABI between targets.
template <typename T, int B, typename S>
AOTISHIM_DW_INLINE void vload(typename Simd<T, B>::V& v, const S* p) {
  if constexpr (std::is_same_v<S, T>) {
    std::memcpy(&v, p, sizeof v);
  } else {  // bfloat16: the high half of a float32's bits
    typename Simd<T, B>::H h;
    std::memcpy(&h, p, sizeof h);
    const typename Simd<T, B>::W w = __builtin_convertvector(h, typename Simd<T, B>::W) << 16;
    std::memcpy(&v, &w, sizeof v);
  }
}
template <typename T, int B, typename S>
AOTISHIM_DW_INLINE void vstore(S* p, const typename Simd<T, B>::V& v) {
  if constexpr (std::is_same_v<S, T>) {
    std::memcpy(p, &v, sizeof v);
  } else {  // float_to_bf16 on every lane: round to nearest even, NaN kept quiet
    using W = typename Simd<T, B>::W;
    W bits;
    std::memcpy(&bits, &v, sizeof bits);
    const W nan = (W)((bits & 0x7fffffffu) > (W{} + 0x7f800000u));  // all ones where NaN
    const W rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const W quiet = (bits >> 16) | 0x40u;
    const typename Simd<T, B>::H h =
        __builtin_convertvector((quiet & nan) | (rounded & ~nan), typename Simd<T, B>::H);
    std::memcpy(p, &h, sizeof h);
  }
}
// Through memory, which GCC turns into one broadcast: a vector built from the
// scalar (x - zero vector, or lane by lane) is split into lanes before it is
// inlined into the wider target (and x + 0 costs an add: it turns -0 into +0).
template <typename T, int B>
AOTISHIM_DW_INLINE void vsplat(typename Simd<T, B>::V& v, T x) {
  T lanes[kLanes<T, B>];
  for (int64_t i = 0; i < kLanes<T, B>; ++i) lanes[i] = x;
  std::memcpy(&v, lanes, sizeof v);
}
template <typename T, typename S>
AOTISHIM_DW_INLINE T load1(S v) {
  if constexpr (std::is_same_v<S, T>) {
    return v;
  } else {
    return bf16_to_float(v);
  }
}
template <typename S, typename T>
AOTISHIM_DW_INLINE S store1(T v) {
  if constexpr (std::is_same_v<S, T>) {
    return v;
  } else {
    return float_to_bf16(v);
  }
}

// Sizes and strides normalised to three spatial dims (missing leading dims
// have size 1).
struct Geometry {
  int64_t N, C, mult;  // images, output channels, output channels per input channel
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  int64_t taps;
  int64_t in_n, in_c, in_s[3];  // element strides
  int64_t w_o, w_s[3];
  int64_t out_n, out_c, out_p;  // out's spatial dims merge into one stride
};

Geometry geometry(const ConvArgs& a) {
  Geometry g{};
  const int64_t spatial = a.input.dim() - 2, lead = 3 - spatial;
  g.N = a.input.sizes[0];
  g.C = a.out.sizes[1];
  g.mult = g.C / a.input.sizes[1];
  g.in_n = a.input.strides[0];
  g.in_c = a.input.strides[1];
  g.w_o = a.weight.strides[0];
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t s = d - lead;  // index into the op's spatial dims
    const bool real = s >= 0;
    g.in[d] = real ? a.input.sizes[2 + s] : 1;
    g.out[d] = real ? a.out.sizes[2 + s] : 1;
    g.k[d] = real ? a.weight.sizes[2 + s] : 1;
    g.stride[d] = real ? a.stride[s] : 1;
    g.pad[d] = real ? a.padding[s] : 0;
    g.dil[d] = real ? a.dilation[s] : 1;
    g.in_s[d] = real ? a.input.strides[2 + s] : 0;
    g.w_s[d] = real ? a.weight.strides[2 + s] : 0;
  }
  g.taps = g.k[0] * g.k[1] * g.k[2];
  g.out_n = a.out.strides[0];
  g.out_c = a.out.strides[1];
  g.out_p = a.out.strides.back();
  return g;
}

// Taps k in [0, K) whose input coordinate o * stride - pad + k * dil lies in
// [0, size): [lo, hi).
inline void tap_range(int64_t o, int64_t stride, int64_t pad, int64_t dil, int64_t K,
                      int64_t size, int64_t& lo, int64_t& hi) {
  const int64_t start = o * stride - pad;  // coordinate of tap 0
  lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
  hi = size - start <= 0 ? 0 : (size - start - 1) / dil + 1;
  lo = std::min(lo, K);
  hi = std::clamp(hi, lo, K);
}

// ---------------------------------------------------------------- channels-last output

// X: the input's element type (S in place, T when copied first).
template <typename T, typename X, typename S>
struct ClJob {
  const Geometry* g;
  const X* in;                  // image 0, channel 0; channels unit-stride
  int64_t in_n, in_s[3];
  S* out;
  const T* w;                   // [tap][C]
  const T* bias;                // [C]
  int64_t chunk, chunks;        // channel blocks per output row
  int64_t ow_lo, ow_hi;         // columns whose whole window lies inside the input
};

// The (depth, height) rows of one output row's window that lie inside the
// input: their offsets into the input and into the packed weight.
struct WindowRows {
  const int64_t* x_off;
  const int64_t* w_off;
  int64_t n;
};

// P positions (x_step apart, the first one's window at column offset col)
// and V vectors of channels: sums of taps kw0..kw1 of every window row.
template <int P, int V, int B, typename T, typename X, typename S>
AOTISHIM_DW_INLINE void cl_tile(const X* x, int64_t col, int64_t x_step, int64_t x_kw,
                                const WindowRows& rows, int64_t kw0, int64_t kw1, const T* w,
                                int64_t C, const T* bias, S* out, int64_t out_step,
                                int64_t out_c) {
  using Vec = typename Simd<T, B>::V;
  constexpr int64_t L = kLanes<T, B>;
  Vec acc[P][V];
  for (int v = 0; v < V; ++v) {
    Vec b;
    vload<T, B>(b, bias + v * L);
    for (int p = 0; p < P; ++p) acc[p][v] = b;
  }
  for (int64_t r = 0; r < rows.n; ++r) {
    const int64_t xr = rows.x_off[r] + col;
    const T* wr = w + rows.w_off[r];
    for (int64_t kw = kw0; kw < kw1; ++kw) {
      Vec wv[V];
      for (int v = 0; v < V; ++v) vload<T, B>(wv[v], wr + kw * C + v * L);
      const X* xk = x + (xr + kw * x_kw);
      for (int p = 0; p < P; ++p)
        for (int v = 0; v < V; ++v) {
          Vec xv;
          vload<T, B>(xv, xk + p * x_step + v * L);
          acc[p][v] += xv * wv[v];
        }
    }
  }
  for (int p = 0; p < P; ++p)
    for (int v = 0; v < V; ++v) {
      if (out_c == 1) {
        vstore<T, B>(out + p * out_step + v * L, acc[p][v]);
      } else {  // a contiguous output: one lane per plane
        for (int64_t i = 0; i < L; ++i) out[p * out_step + (v * L + i) * out_c] = store1<S>(acc[p][v][i]);
      }
    }
}

// The last channels of a block, fewer than a vector: one at a time.
template <typename T, typename X, typename S>
AOTISHIM_DW_INLINE void cl_tail(int64_t P, int64_t channels, const X* x, int64_t col,
                                int64_t x_step, int64_t x_kw, const WindowRows& rows,
                                int64_t kw0, int64_t kw1, const T* w, int64_t C, const T* bias,
                                S* out, int64_t out_step, int64_t out_c) {
  for (int64_t p = 0; p < P; ++p)
    for (int64_t c = 0; c < channels; ++c) {
      T acc = bias[c];
      for (int64_t r = 0; r < rows.n; ++r)
        for (int64_t kw = kw0; kw < kw1; ++kw)
          acc += load1<T>(x[rows.x_off[r] + col + kw * x_kw + p * x_step + c]) *
                 w[rows.w_off[r] + kw * C + c];
      out[p * out_step + c * out_c] = store1<S>(acc);
    }
}

// P positions, channels [c0, c1): two vectors at a time, then one, then the rest.
template <int P, int B, typename T, typename X, typename S>
AOTISHIM_DW_INLINE void cl_positions(const ClJob<T, X, S>& j, const X* x, int64_t col,
                                     const WindowRows& rows, int64_t kw0, int64_t kw1,
                                     int64_t c0, int64_t c1, S* out) {
  constexpr int64_t L = kLanes<T, B>;
  const Geometry& g = *j.g;
  const int64_t x_step = g.stride[2] * j.in_s[2], x_kw = g.dil[2] * j.in_s[2];
  int64_t c = c0;
  for (; c + 2 * L <= c1; c += 2 * L)
    cl_tile<P, 2, B>(x + c, col, x_step, x_kw, rows, kw0, kw1, j.w + c, g.C, j.bias + c,
                     out + c * g.out_c, g.out_p, g.out_c);
  for (; c + L <= c1; c += L)
    cl_tile<P, 1, B>(x + c, col, x_step, x_kw, rows, kw0, kw1, j.w + c, g.C, j.bias + c,
                     out + c * g.out_c, g.out_p, g.out_c);
  if (c < c1)
    cl_tail(P, c1 - c, x + c, col, x_step, x_kw, rows, kw0, kw1, j.w + c, g.C, j.bias + c,
            out + c * g.out_c, g.out_p, g.out_c);
}

// Items [begin, end): (image, output row, channel block), block fastest.
template <int B, typename T, typename X, typename S>
AOTISHIM_DW_INLINE void cl_items(const ClJob<T, X, S>& j, int64_t begin, int64_t end) {
  const Geometry& g = *j.g;
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  std::vector<int64_t> x_off(static_cast<size_t>(g.k[0] * g.k[1]));
  std::vector<int64_t> w_off(x_off.size());
  for (int64_t item = begin; item < end; ++item) {
    const int64_t block = item % j.chunks, row = item / j.chunks;
    const int64_t oh = row % OH, od = (row / OH) % OD, n = row / (OH * OD);
    const int64_t c0 = block * j.chunk, c1 = std::min(g.C, c0 + j.chunk);
    WindowRows rows{x_off.data(), w_off.data(), 0};
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
      if (id < 0 || id >= g.in[0]) continue;
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
        if (ih < 0 || ih >= g.in[1]) continue;
        x_off[rows.n] = id * j.in_s[0] + ih * j.in_s[1];
        w_off[rows.n] = (kd * g.k[1] + kh) * g.k[2] * g.C;
        ++rows.n;
      }
    }
    const X* x = j.in + n * j.in_n;
    S* out = j.out + n * g.out_n + (od * OH + oh) * OW * g.out_p;
    for (int64_t ow = 0; ow < OW;) {
      const int64_t col = (ow * g.stride[2] - g.pad[2]) * j.in_s[2];
      if (ow >= j.ow_lo && ow + 4 <= j.ow_hi) {
        cl_positions<4, B>(j, x, col, rows, 0, g.k[2], c0, c1, out + ow * g.out_p);
        ow += 4;
      } else {
        int64_t kw0, kw1;
        tap_range(ow, g.stride[2], g.pad[2], g.dil[2], g.k[2], g.in[2], kw0, kw1);
        cl_positions<1, B>(j, x, col, rows, kw0, kw1, c0, c1, out + ow * g.out_p);
        ow += 1;
      }
    }
  }
}

template <typename T, typename X, typename S>
void cl_baseline(const ClJob<T, X, S>& j, int64_t begin, int64_t end) {
  cl_items<32>(j, begin, end);
}
#if defined(AOTISHIM_DW_X86)
template <typename T, typename X, typename S>
AOTISHIM_DW_AVX2 void cl_avx2(const ClJob<T, X, S>& j, int64_t begin, int64_t end) {
  cl_items<32>(j, begin, end);
}
template <typename T, typename X, typename S>
AOTISHIM_DW_AVX512 void cl_avx512(const ClJob<T, X, S>& j, int64_t begin, int64_t end) {
  cl_items<64>(j, begin, end);
}
#endif

// ---------------------------------------------------------------- contiguous output

template <typename T, typename S>
struct PlaneJob {
  const Geometry* g;
  const S* in;
  S* out;
  const T* w;     // [C][taps]
  const T* bias;  // [C]
  int64_t Hq, Wq;  // a phase's rows and columns
  int64_t Q;       // output positions of a plane at row pitch Wq
  std::vector<int64_t> col_lo, col_hi;  // per column phase: its columns inside the input
  std::vector<int64_t> tap_off;  // per (kh, kw): offset into the phases
};

// Phase (a, b) of depth slice id: phases[a * sw + b][i][j] = the input at
// row i * sh + a - pad_h, column j * sw + b - pad_w, or 0 outside it.
template <typename T, typename S>
AOTISHIM_DW_INLINE void split_phases(const PlaneJob<T, S>& j, const S* src, T* phases) {
  const Geometry& g = *j.g;
  const int64_t sh = g.stride[1], sw = g.stride[2];
  const int64_t step = sw * g.in_s[2];
  for (int64_t a = 0; a < sh; ++a)
    for (int64_t b = 0; b < sw; ++b) {
      T* dst = phases + (a * sw + b) * j.Hq * j.Wq;
      const int64_t lo = j.col_lo[b], hi = j.col_hi[b];  // phase columns inside the input
      for (int64_t i = 0; i < j.Hq; ++i) {
        T* row = dst + i * j.Wq;
        const int64_t ih = i * sh + a - g.pad[1];
        if (ih < 0 || ih >= g.in[1]) {
          for (int64_t c = 0; c < j.Wq; ++c) row[c] = T(0);
          continue;
        }
        for (int64_t c = 0; c < lo; ++c) row[c] = T(0);
        for (int64_t c = hi; c < j.Wq; ++c) row[c] = T(0);
        if (lo == hi) continue;
        const S* s = src + ih * g.in_s[1] + (lo * sw + b - g.pad[2]) * g.in_s[2];
        T* d = row + lo;
        const int64_t n = hi - lo;
        // Constant steps, so the compiler vectorises them.
        if (step == 1) {
          for (int64_t c = 0; c < n; ++c) d[c] = load1<T>(s[c]);
        } else if (step == 2) {
          for (int64_t c = 0; c < n; ++c) d[c] = load1<T>(s[2 * c]);
        } else {
          for (int64_t c = 0; c < n; ++c) d[c] = load1<T>(s[c * step]);
        }
      }
    }
}

// acc[q] += sum over the (kh, kw) taps of w[t] * phases[tap_off[t] + q] for
// the V vectors from q.
template <int V, int B, typename T, typename S>
AOTISHIM_DW_INLINE void plane_block(const PlaneJob<T, S>& j, const T* phases, const T* w, T* acc,
                                    int64_t q) {
  using Vec = typename Simd<T, B>::V;
  constexpr int64_t L = kLanes<T, B>;
  const int64_t taps = static_cast<int64_t>(j.tap_off.size());
  const int64_t* off = j.tap_off.data();
  Vec s[V];
  for (int v = 0; v < V; ++v) vload<T, B>(s[v], acc + q + v * L);
  for (int64_t t = 0; t < taps; ++t) {
    Vec wt;
    vsplat<T, B>(wt, w[t]);
    const T* x = phases + off[t] + q;
    for (int v = 0; v < V; ++v) {
      Vec xv;
      vload<T, B>(xv, x + v * L);
      s[v] += xv * wt;
    }
  }
  for (int v = 0; v < V; ++v) vstore<T, B>(acc + q + v * L, s[v]);
}

// The whole plane, q in [0, Qr), Qr a multiple of four vectors: eight vectors
// at a time, then four (enough independent sums to cover the multiply-add
// latency; a lone vector's chain of taps would take as long as eight).
template <int B, typename T, typename S>
AOTISHIM_DW_INLINE void plane_taps(const PlaneJob<T, S>& j, const T* phases, const T* w, T* acc,
                                   int64_t Qr) {
  constexpr int64_t L = kLanes<T, B>;
  int64_t q = 0;
  for (; q + 8 * L <= Qr; q += 8 * L) plane_block<8, B>(j, phases, w, acc, q);
  if (q < Qr) plane_block<4, B>(j, phases, w, acc, q);
}

// Items [begin, end): (image, channel, output depth slice).
template <int B, typename T, typename S>
AOTISHIM_DW_INLINE void plane_items(const PlaneJob<T, S>& j, int64_t begin, int64_t end) {
  const Geometry& g = *j.g;
  constexpr int64_t L = kLanes<T, B>;
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t Qr = (j.Q + 4 * L - 1) / (4 * L) * (4 * L);
  // Slack past the last phase: vectors past Q read (and discard) it.
  std::vector<T> phases(static_cast<size_t>(g.stride[1] * g.stride[2] * j.Hq * j.Wq + 4 * L));
  std::vector<T> acc(static_cast<size_t>(Qr));
  const int64_t taps2 = g.k[1] * g.k[2];
  for (int64_t item = begin; item < end; ++item) {
    const int64_t od = item % OD, oc = (item / OD) % g.C, n = item / (OD * g.C);
    std::fill(acc.begin(), acc.end(), j.bias[oc]);
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
      if (id < 0 || id >= g.in[0]) continue;
      split_phases(j, j.in + n * g.in_n + (oc / g.mult) * g.in_c + id * g.in_s[0], phases.data());
      plane_taps<B>(j, phases.data(), j.w + oc * g.taps + kd * taps2, acc.data(), Qr);
    }
    S* out = j.out + n * g.out_n + oc * g.out_c + od * OH * OW * g.out_p;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const T* src = acc.data() + oh * j.Wq;
      S* dst = out + oh * OW * g.out_p;
      if (g.out_p == 1) {  // a unit stride the compiler can vectorise
        for (int64_t ow = 0; ow < OW; ++ow) dst[ow] = store1<S>(src[ow]);
      } else {
        for (int64_t ow = 0; ow < OW; ++ow) dst[ow * g.out_p] = store1<S>(src[ow]);
      }
    }
  }
}

template <typename T, typename S>
void plane_baseline(const PlaneJob<T, S>& j, int64_t begin, int64_t end) {
  plane_items<32>(j, begin, end);
}
#if defined(AOTISHIM_DW_X86)
template <typename T, typename S>
AOTISHIM_DW_AVX2 void plane_avx2(const PlaneJob<T, S>& j, int64_t begin, int64_t end) {
  plane_items<32>(j, begin, end);
}
#endif

// ---------------------------------------------------------------- driver

template <typename Job>
using Entry = void (*)(const Job&, int64_t, int64_t);

template <typename Job>
void run_items(const Job& j, int64_t items, int64_t work_per_item, Entry<Job> baseline,
               Entry<Job> avx2, Entry<Job> avx512) {
  Entry<Job> entry = baseline;
  switch (host_vector_isa()) {
    case VectorIsa::kAvx512:
      entry = avx512;
      break;
    case VectorIsa::kAvx2:
      entry = avx2;
      break;
    default:
      break;
  }
  const int64_t grain = std::max<int64_t>(1, kMinSplitWork / std::max<int64_t>(1, work_per_item));
  parallel_for(items, grain, [&](int64_t begin, int64_t end) { entry(j, begin, end); });
}

int64_t max_threads() {
#if defined(_OPENMP)
  return in_parallel_region() ? 1 : omp_get_max_threads();
#else
  return 1;
#endif
}

// The weight widened into w[tap * tap_step + channel * c_step].
template <typename T, typename S>
void pack_weight(const Geometry& g, const S* src, T* w, int64_t tap_step, int64_t c_step) {
  for (int64_t o = 0; o < g.C; ++o) {
    int64_t t = 0;
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2, ++t)
          w[t * tap_step + o * c_step] =
              load1<T>(src[o * g.w_o + k0 * g.w_s[0] + k1 * g.w_s[1] + k2 * g.w_s[2]]);
  }
}

template <typename T, typename X, typename S>
void run_cl(const ClJob<T, X, S>& j, int64_t items, int64_t work_per_item) {
#if defined(AOTISHIM_DW_X86)
  run_items(j, items, work_per_item, &cl_baseline<T, X, S>, &cl_avx2<T, X, S>,
            &cl_avx512<T, X, S>);
#else
  run_items(j, items, work_per_item, &cl_baseline<T, X, S>, &cl_baseline<T, X, S>,
            &cl_baseline<T, X, S>);
#endif
}

template <typename T, typename S>
void channels_last(const Geometry& g, const S* in, const S* wsrc, const std::vector<T>& bias,
                   S* out) {
  std::vector<T> w(static_cast<size_t>(g.taps * g.C));  // [tap][C]
  pack_weight(g, wsrc, w.data(), g.C, 1);
  constexpr int64_t pair = 64 / int64_t(sizeof(T));  // channels in two AVX2 vectors
  const int64_t rows = g.N * g.out[0] * g.out[1];
  // Channel blocks: few enough weights per block to stay in L1, and enough
  // items to give every thread a few.
  const int64_t cap =
      std::max<int64_t>(pair, kWeightBlockBytes / (g.taps * int64_t(sizeof(T))) / pair * pair);
  const int64_t threads = max_threads();
  int64_t chunks = (g.C + cap - 1) / cap;
  if (threads > 1) chunks = std::max(chunks, (4 * threads + rows - 1) / rows);
  int64_t chunk = (g.C + chunks - 1) / chunks;
  chunk = std::min(g.C, (chunk + pair - 1) / pair * pair);
  chunks = (g.C + chunk - 1) / chunk;
  // Columns whose whole window lies inside the input.
  const int64_t sw = g.stride[2], pw = g.pad[2];
  const int64_t ow_lo = std::min(g.out[2], (pw + sw - 1) / sw);
  const int64_t last = g.in[2] - 1 + pw - (g.k[2] - 1) * g.dil[2];  // ow * sw <= last
  const int64_t ow_hi = last < 0 ? ow_lo : std::clamp(last / sw + 1, ow_lo, g.out[2]);
  const int64_t items = rows * chunks, work = g.out[2] * chunk * g.taps;

  // The input in place, unless bfloat16: widened once into the copy, rather
  // than once per tap.
  if (g.in_c == 1 && g.mult == 1 && std::is_same_v<S, T>) {
    ClJob<T, S, S> j{&g, in, g.in_n, {g.in_s[0], g.in_s[1], g.in_s[2]}, out, w.data(),
                     bias.data(), chunk, chunks, ow_lo, ow_hi};
    return run_cl(j, items, work);
  }
  // Copy the input as (N, D, H, W, C), input channel oc / mult at channel oc.
  const int64_t pin = g.in[0] * g.in[1] * g.in[2];
  std::vector<T> copy(static_cast<size_t>(g.N * pin * g.C));
  parallel_for(g.N * pin, std::max<int64_t>(1, kMinSplitWork / g.C), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / pin, p = i % pin;
      const int64_t d = p / (g.in[1] * g.in[2]), h = (p / g.in[2]) % g.in[1], x = p % g.in[2];
      const S* src = in + n * g.in_n + d * g.in_s[0] + h * g.in_s[1] + x * g.in_s[2];
      T* dst = copy.data() + i * g.C;
      if (g.in_c == 1 && g.mult == 1) {
        for (int64_t c = 0; c < g.C; ++c) dst[c] = load1<T>(src[c]);
      } else {
        for (int64_t c = 0; c < g.C; ++c) dst[c] = load1<T>(src[(c / g.mult) * g.in_c]);
      }
    }
  });
  ClJob<T, T, S> j{&g, copy.data(), pin * g.C, {g.in[1] * g.in[2] * g.C, g.in[2] * g.C, g.C},
                   out, w.data(), bias.data(), chunk, chunks, ow_lo, ow_hi};
  run_cl(j, items, work);
}

template <typename T, typename S>
void contiguous(const Geometry& g, const S* in, const S* wsrc, const std::vector<T>& bias,
                S* out) {
  std::vector<T> w(static_cast<size_t>(g.C * g.taps));  // [C][taps]
  pack_weight(g, wsrc, w.data(), 1, g.taps);
  const int64_t sh = g.stride[1], sw = g.stride[2];
  // Padded extents the windows reach, then per phase.
  const int64_t Hn = (g.out[1] - 1) * sh + (g.k[1] - 1) * g.dil[1] + 1;
  const int64_t Wn = (g.out[2] - 1) * sw + (g.k[2] - 1) * g.dil[2] + 1;
  PlaneJob<T, S> j{&g, in, out, w.data(), bias.data(), (Hn + sh - 1) / sh, (Wn + sw - 1) / sw, 0,
                   {}, {}, {}};
  j.Q = (g.out[1] - 1) * j.Wq + g.out[2];
  for (int64_t b = 0; b < sw; ++b) {
    int64_t lo, hi;
    tap_range(0, 1, g.pad[2] - b, sw, j.Wq, g.in[2], lo, hi);
    j.col_lo.push_back(lo);
    j.col_hi.push_back(hi);
  }
  for (int64_t kh = 0; kh < g.k[1]; ++kh)
    for (int64_t kw = 0; kw < g.k[2]; ++kw) {
      const int64_t r = kh * g.dil[1], c = kw * g.dil[2];
      j.tap_off.push_back(((r % sh) * sw + c % sw) * j.Hq * j.Wq + (r / sh) * j.Wq + c / sw);
    }
  const int64_t items = g.N * g.C * g.out[0], work = j.Q * g.taps;
#if defined(AOTISHIM_DW_X86)
  // AVX-512 gains nothing here over AVX2 (measured): its longer vectors
  // only waste more lanes past the end of small planes.
  run_items(j, items, work, &plane_baseline<T, S>, &plane_avx2<T, S>, &plane_avx2<T, S>);
#else
  run_items(j, items, work, &plane_baseline<T, S>, &plane_baseline<T, S>, &plane_baseline<T, S>);
#endif
}

template <typename T, typename S>
void run_typed(const ConvArgs& a) {
  const Geometry g = geometry(a);
  std::vector<T> bias(static_cast<size_t>(g.C), T(0));
  if (a.has_bias) {
    const S* b = reinterpret_cast<const S*>(a.bias.data());
    for (int64_t o = 0; o < g.C; ++o) bias[o] = load1<T>(b[o * a.bias.strides[0]]);
  }
  const S* in = reinterpret_cast<const S*>(a.input.data());
  const S* w = reinterpret_cast<const S*>(a.weight.data());
  S* out = reinterpret_cast<S*>(a.out.data());
  // Compute in the output's layout (a single channel or position is both).
  // Small planes are the exception: at the phases' row pitch they are mostly
  // padding, and a plane's fixed costs are spread over few positions, so
  // they are computed across channels too and stored a lane at a time.
  const int64_t OW = g.out[2], sw = g.stride[2];
  const int64_t Wq = ((OW - 1) * sw + (g.k[2] - 1) * g.dil[2] + sw) / sw;
  const bool small_planes = Wq >= 2 * OW && g.C >= 16;
  if ((g.out_c == 1 && g.C > 1) || small_planes) return channels_last<T, S>(g, in, w, bias, out);
  contiguous<T, S>(g, in, w, bias, out);
}

}  // namespace

void depthwise_conv(const ConvArgs& a) {
  switch (a.out.dtype) {
    case DType::Float32:
      return run_typed<float, float>(a);
    case DType::Float64:
      return run_typed<double, double>(a);
    case DType::BFloat16:
      return run_typed<float, uint16_t>(a);
    default:
      fail(str("unsupported dtype ", dtype_name(a.out.dtype),
               " for convolution on the CPU (supported: float32, float64, bfloat16)"));
  }
}

}  // namespace aotishim::cpu
