// Convolution on host memory: the cpu device's conv kernel.
//
// Forward: per image and group, out (Cout_g x P) = W (Cout_g x R) @ col
// (R x P), R = Cin_g * taps, P = output positions, through the platform
// BLAS. col is built tile by tile over P (im2col), so scratch memory stays
// bounded whatever the input size; its layout follows the input's (a
// channels-last input gives rows of unit-stride channels to copy), and the
// reduction order follows the weight's, so a dense weight (contiguous or
// channels-last, as AOTInductor passes it) is read in place, never packed.
// A 1x1 convolution with unit stride reads the input in place as well.
// Depthwise convolutions (one input channel per group) run their own direct
// kernel (depthwise_conv.cpp): a GEMM per channel would be mostly overhead.
// Dense float32 3x3 convolutions with unit stride and many positions run
// Winograd's F(2x2, 3x3) (winograd_conv.cpp), fewer multiply-adds per output.
// Transposed: col (Cout_g*taps x P_in) = W^T @ X, then scattered and summed
// into the output (col2im).
// bfloat16 is widened to float32 on the way in and rounded once on the way
// out, so products and sums are float32 as in torch.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/strided.h"
#include "devices/cpu/blas.h"
#include "devices/cpu/depthwise_conv.h"
#include "devices/cpu/parallel.h"
#include "devices/cpu/winograd_conv.h"
#include "ops/convolution.h"

namespace aotishim {
namespace {

// Scratch budget for one column tile.
constexpr int64_t kTileBytes = int64_t{8} << 20;
// Below this many multiply-adds a tile is not worth waking other threads for
// (as in blas::gemm).
constexpr int64_t kMinSplitWork = int64_t{1} << 18;

template <typename T, typename S>
inline T load(S v) {
  if constexpr (std::is_same_v<S, uint16_t>) {
    return bf16_to_float(v);
  } else {
    return static_cast<T>(v);
  }
}
template <typename S, typename T>
inline S store(T v) {
  if constexpr (std::is_same_v<S, uint16_t>) {
    return float_to_bf16(v);
  } else {
    return static_cast<S>(v);
  }
}

// Sizes and strides normalised to three spatial dims (missing leading dims
// have size 1), so every loop below is written once.
struct Geometry {
  int64_t N, Cin, Cout, groups, cin_g, cout_g;
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  int64_t taps;       // k[0] * k[1] * k[2]
  int64_t pin, pout;  // input / output positions per channel
  // element strides
  int64_t in_n, in_c, in_s[3];
  int64_t w_0, w_1, w_s[3];  // weight dims 0, 1 and spatial
  int64_t out_n, out_c, out_p;  // out's spatial dims merge into one stride
};

Geometry geometry(const ConvArgs& a) {
  Geometry g{};
  const int64_t spatial = a.input.dim() - 2, lead = 3 - spatial;
  g.N = a.input.sizes[0];
  g.Cin = a.input.sizes[1];
  g.Cout = a.out.sizes[1];
  g.groups = a.groups;
  g.cin_g = g.Cin / g.groups;
  g.cout_g = g.Cout / g.groups;
  g.in_n = a.input.strides[0];
  g.in_c = a.input.strides[1];
  g.w_0 = a.weight.strides[0];
  g.w_1 = a.weight.strides[1];
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
  g.pin = g.in[0] * g.in[1] * g.in[2];
  g.pout = g.out[0] * g.out[1] * g.out[2];
  g.out_n = a.out.strides[0];
  g.out_c = a.out.strides[1];
  g.out_p = a.out.strides.back();  // contiguous: 1; channels-last: Cout
  return g;
}

// Are dims (sizes, strides), outermost first, one dense block in this order?
bool dense_in_order(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

// C (M x N) = A (M x K) @ B (K x N) + beta * C, every operand a strided view
// with a unit stride in one dimension.
template <typename T>
void gemm_views(int64_t M, int64_t N, int64_t K, const T* a, int64_t ars, int64_t acs,
                const T* b, int64_t brs, int64_t bcs, T beta, T* c, int64_t crs, int64_t ccs) {
  const MatrixView cv = row_major_view(M, N, crs, ccs);
  AOTISHIM_CHECK(cv.ok, "conv: output tile has no unit stride");
  if (cv.transposed) {  // C^T = B^T @ A^T, row-major
    gemm_views(N, M, K, b, bcs, brs, a, acs, ars, beta, c, ccs, crs);
    return;
  }
  const MatrixView av = row_major_view(M, K, ars, acs), bv = row_major_view(K, N, brs, bcs);
  AOTISHIM_CHECK(av.ok && bv.ok, "conv: operand has no unit stride");
  for (int64_t v : {M, N, K, av.ld, bv.ld, cv.ld})
    AOTISHIM_CHECK(v <= blas::kMaxInt, "convolution dimension ", v,
                   " exceeds the BLAS integer limit (", blas::kMaxInt, ")");
  blas::gemm(av.transposed, bv.transposed, static_cast<int>(M), static_cast<int>(N),
             static_cast<int>(K), T(1), a, static_cast<int>(av.ld), b, static_cast<int>(bv.ld),
             beta, c, static_cast<int>(cv.ld));
}

// Output positions p whose input coordinate p * stride - pad + offset lies
// in [0, size): the half-open range [lo, hi) within [0, count).
inline void valid_range(int64_t count, int64_t stride, int64_t start, int64_t size, int64_t& lo,
                        int64_t& hi) {
  // start = offset - pad; need 0 <= p * stride + start < size
  lo = start >= 0 ? 0 : (-start + stride - 1) / stride;
  hi = size - start <= 0 ? 0 : (size - start - 1) / stride + 1;
  lo = std::min(lo, count);
  hi = std::clamp(hi, lo, count);
}

// The weight of one group as a T matrix (rows x R), R in the reduction order
// the kernel reads: either the weight in place or a packed copy.
template <typename T>
struct WeightMatrix {
  const T* data;
  int64_t row_stride;
  bool taps_outer;  // reduction index r = tap * Cin_g + c (else c * taps + tap)
};

// ---------------------------------------------------------------- forward

template <typename T, typename S>
class Forward {
 public:
  Forward(const ConvArgs& a) : a_(a), g_(geometry(a)) {
    in_ = reinterpret_cast<const S*>(a.input.data());
    w_ = reinterpret_cast<const S*>(a.weight.data());
    out_ = reinterpret_cast<S*>(a.out.data());
    R_ = g_.cin_g * g_.taps;
    // Runs of unit-stride channels long enough to copy as blocks: lay the
    // column tile out as (P x R), channels fastest; otherwise (R x P),
    // positions fastest (also for a channels-last input with a few channels,
    // such as an RGB stem, where per-position copies of 3 values cost more).
    // A few channels still make long runs where a window row's taps lie
    // side by side in the input (channels-last, no dilation along width):
    // one copy of width * channels per window row.
    window_rows_ = g_.in_c == 1 && g_.in_s[2] == g_.cin_g && g_.dil[2] == 1 && g_.k[2] > 1;
    rows_of_positions_ = g_.in_c == 1 && (g_.cin_g >= 8 || window_rows_);
    bias_.assign(static_cast<size_t>(g_.Cout), T(0));
    if (a.has_bias) {
      const S* b = reinterpret_cast<const S*>(a.bias.data());
      for (int64_t o = 0; o < g_.Cout; ++o) bias_[o] = load<T>(b[o * a.bias.strides[0]]);
    }
  }

  void run() {
    choose_weight();
    int64_t in_step = 1;
    const bool in_place_input = std::is_same_v<T, S> && g_.taps == 1 && all_unit(g_.stride) &&
                                all_zero(g_.pad) && input_positions_merge(in_step);
    int64_t tile = std::max<int64_t>(1, kTileBytes / std::max<int64_t>(1, R_ * int64_t(sizeof(T))));
    tile = std::min(tile, g_.pout);
    // Scratch left uninitialised: every element is written before it is read
    // (zeroing a tile of megabytes cost more than the copy into it).
    std::unique_ptr<T[]> col, acc;
    if (!in_place_input) col.reset(new T[static_cast<size_t>(R_ * tile)]);
    if (!std::is_same_v<T, S>) acc.reset(new T[static_cast<size_t>(g_.cout_g * tile)]);
    for (int64_t n = 0; n < g_.N; ++n) {
      for (int64_t grp = 0; grp < g_.groups; ++grp) {
        const S* in = in_ + n * g_.in_n + grp * g_.cin_g * g_.in_c;
        S* out = out_ + n * g_.out_n + grp * g_.cout_g * g_.out_c;
        const WeightMatrix<T> w = weight(grp);
        for (int64_t p0 = 0; p0 < g_.pout; p0 += tile) {
          const int64_t len = std::min(tile, g_.pout - p0);
          // B: the column tile (R x len) as a strided view.
          const T* b;
          int64_t brs, bcs;
          if (in_place_input) {
            b = reinterpret_cast<const T*>(in) + p0 * in_step;
            brs = g_.in_c;
            bcs = in_step;
          } else {
            gather(in, w.taps_outer, p0, len, col.get());
            b = col.get();
            brs = rows_of_positions_ ? 1 : len;
            bcs = rows_of_positions_ ? R_ : 1;
          }
          multiply(w, b, brs, bcs, grp, out + p0 * g_.out_p, len, acc.get());
        }
      }
    }
  }

 private:
  static bool all_unit(const int64_t* v) { return v[0] == 1 && v[1] == 1 && v[2] == 1; }
  static bool all_zero(const int64_t* v) { return v[0] == 0 && v[1] == 0 && v[2] == 0; }

  // The input's spatial dims as one stride (contiguous or channels-last):
  // true and that stride in `step`, or false.
  bool input_positions_merge(int64_t& step) const {
    step = 1;
    int64_t expected = -1;
    for (int d = 2; d >= 0; --d) {
      if (g_.in[d] == 1) continue;
      if (expected < 0) {
        step = g_.in_s[d];
      } else if (g_.in_s[d] != expected) {
        return false;
      }
      expected = g_.in_s[d] * g_.in[d];
    }
    return row_major_view(g_.cin_g, g_.pout, g_.in_c, step).ok;
  }

  // Read the weight in place when it is dense in one of the two reduction
  // orders (and needs no widening); else pack it, in the order that suits
  // the column tile's layout.
  void choose_weight() {
    const Tensor& w = a_.weight;
    std::vector<int64_t> sz(w.sizes.begin() + 1, w.sizes.end());
    std::vector<int64_t> st(w.strides.begin() + 1, w.strides.end());
    const bool c_outer = dense_in_order(sz, st);
    std::rotate(sz.begin(), sz.begin() + 1, sz.end());  // (k..., c)
    std::rotate(st.begin(), st.begin() + 1, st.end());
    const bool taps_outer = dense_in_order(sz, st);
    const bool rows_ok = row_major_view(g_.cout_g, R_, g_.w_0, 1).ok;
    // Window-row copies need the taps-outer order; a weight in the other
    // order is small enough to pack when channels are few.
    const bool order_ok = taps_outer || !(rows_of_positions_ && g_.cin_g < 8);
    if (std::is_same_v<T, S> && rows_ok && (c_outer || taps_outer) && order_ok) {
      pack_ = false;
      taps_outer_ = c_outer ? (taps_outer && rows_of_positions_) : true;
      return;
    }
    pack_ = true;
    taps_outer_ = rows_of_positions_;
    packed_.resize(static_cast<size_t>(g_.Cout * R_));
    for (int64_t o = 0; o < g_.Cout; ++o)
      for (int64_t c = 0; c < g_.cin_g; ++c)
        for (int64_t t = 0; t < g_.taps; ++t) {
          const int64_t k0 = t / (g_.k[1] * g_.k[2]), k1 = (t / g_.k[2]) % g_.k[1], k2 = t % g_.k[2];
          const S v = w_[o * g_.w_0 + c * g_.w_1 + k0 * g_.w_s[0] + k1 * g_.w_s[1] + k2 * g_.w_s[2]];
          packed_[o * R_ + (taps_outer_ ? t * g_.cin_g + c : c * g_.taps + t)] = load<T>(v);
        }
  }

  WeightMatrix<T> weight(int64_t grp) const {
    if (pack_) return {packed_.data() + grp * g_.cout_g * R_, R_, taps_outer_};
    return {reinterpret_cast<const T*>(w_) + grp * g_.cout_g * g_.w_0, g_.w_0, taps_outer_};
  }

  // im2col: the column tile for positions [p0, p0 + len) of one image and
  // group; zeros where a tap falls into the padding.
  void gather(const S* in, bool taps_outer, int64_t p0, int64_t len, T* col) const {
    const int64_t rc = taps_outer ? 1 : g_.taps, rt = taps_outer ? g_.cin_g : 1;
    const int64_t OH = g_.out[1], OW = g_.out[2];
    if (rows_of_positions_) {  // col[p][r]: per position, copy channel runs
      cpu::parallel_for(len, 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const int64_t p = p0 + i;
          const int64_t od = p / (OH * OW), oh = (p / OW) % OH, ow = p % OW;
          T* row = col + i * R_;
          if (rc == 1 && window_rows_) {
            copy_window_rows(in, od, oh, ow, row);
            continue;
          }
          int64_t t = 0;
          for (int64_t kd = 0; kd < g_.k[0]; ++kd)
            for (int64_t kh = 0; kh < g_.k[1]; ++kh)
              for (int64_t kw = 0; kw < g_.k[2]; ++kw, ++t) {
                const int64_t id = od * g_.stride[0] - g_.pad[0] + kd * g_.dil[0];
                const int64_t ih = oh * g_.stride[1] - g_.pad[1] + kh * g_.dil[1];
                const int64_t iw = ow * g_.stride[2] - g_.pad[2] + kw * g_.dil[2];
                T* dst = row + t * rt;
                if (id < 0 || id >= g_.in[0] || ih < 0 || ih >= g_.in[1] || iw < 0 ||
                    iw >= g_.in[2]) {
                  for (int64_t c = 0; c < g_.cin_g; ++c) dst[c * rc] = T(0);
                  continue;
                }
                const S* src = in + id * g_.in_s[0] + ih * g_.in_s[1] + iw * g_.in_s[2];
                if (rc == 1 && g_.in_c == 1) {
                  if constexpr (std::is_same_v<T, S>) {
                    std::memcpy(dst, src, static_cast<size_t>(g_.cin_g) * sizeof(T));
                  } else {
                    for (int64_t c = 0; c < g_.cin_g; ++c) dst[c] = load<T>(src[c]);
                  }
                } else {
                  for (int64_t c = 0; c < g_.cin_g; ++c) dst[c * rc] = load<T>(src[c * g_.in_c]);
                }
              }
        }
      });
      return;
    }
    // col[r][p]: per (channel, tap), runs along output rows.
    cpu::parallel_for(g_.cin_g, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        int64_t t = 0;
        for (int64_t kd = 0; kd < g_.k[0]; ++kd)
          for (int64_t kh = 0; kh < g_.k[1]; ++kh)
            for (int64_t kw = 0; kw < g_.k[2]; ++kw, ++t) {
              T* row = col + (c * rc + t * rt) * len;
              int64_t lo, hi;  // output columns whose tap lands inside the input
              valid_range(OW, g_.stride[2], kw * g_.dil[2] - g_.pad[2], g_.in[2], lo, hi);
              const int64_t sw = g_.stride[2] * g_.in_s[2];
              // Output coordinates of p, stepped row by row (no divisions per run).
              int64_t od = p0 / (OH * OW), oh = (p0 / OW) % OH, ow0 = p0 % OW;
              for (int64_t p = p0; p < p0 + len;) {
                const int64_t run = std::min(OW - ow0, p0 + len - p);
                T* dst = row + (p - p0);  // dst[ow - ow0] for ow in [ow0, ow0 + run)
                const int64_t id = od * g_.stride[0] - g_.pad[0] + kd * g_.dil[0];
                const int64_t ih = oh * g_.stride[1] - g_.pad[1] + kh * g_.dil[1];
                const int64_t end_ow = ow0 + run;
                if (id < 0 || id >= g_.in[0] || ih < 0 || ih >= g_.in[1]) {
                  std::fill(dst, dst + run, T(0));
                } else {
                  const int64_t a = std::clamp(lo, ow0, end_ow), b = std::clamp(hi, a, end_ow);
                  std::fill(dst, dst + (a - ow0), T(0));
                  // input element of output column ow: base + ow * sw
                  const int64_t base = c * g_.in_c + id * g_.in_s[0] + ih * g_.in_s[1] +
                                       (kw * g_.dil[2] - g_.pad[2]) * g_.in_s[2];
                  if (sw == 1 && std::is_same_v<T, S>) {
                    std::memcpy(dst + (a - ow0), in + base + a, static_cast<size_t>(b - a) * sizeof(T));
                  } else if (sw == 2) {  // a constant step the compiler vectorises
                    const S* src = in + base + 2 * a;
                    T* d = dst + (a - ow0);
                    for (int64_t i = 0; i < b - a; ++i) d[i] = load<T>(src[2 * i]);
                  } else {
                    for (int64_t ow = a; ow < b; ++ow) dst[ow - ow0] = load<T>(in[base + ow * sw]);
                  }
                  std::fill(dst + (b - ow0), dst + run, T(0));
                }
                p += run;
                ow0 = 0;
                if (++oh == OH) {
                  oh = 0;
                  ++od;
                }
              }
            }
      }
    });
  }

  // One position's column row, taps outer, where each window row's taps are
  // one run of the input: zeros for the taps in the padding, one copy for
  // the rest.
  void copy_window_rows(const S* in, int64_t od, int64_t oh, int64_t ow, T* row) const {
    const int64_t run = g_.k[2] * g_.cin_g;
    const int64_t iw0 = ow * g_.stride[2] - g_.pad[2];
    const int64_t kw0 = std::clamp<int64_t>(-iw0, 0, g_.k[2]);
    const int64_t kw1 = std::clamp<int64_t>(g_.in[2] - iw0, kw0, g_.k[2]);
    for (int64_t kd = 0; kd < g_.k[0]; ++kd)
      for (int64_t kh = 0; kh < g_.k[1]; ++kh, row += run) {
        const int64_t id = od * g_.stride[0] - g_.pad[0] + kd * g_.dil[0];
        const int64_t ih = oh * g_.stride[1] - g_.pad[1] + kh * g_.dil[1];
        if (id < 0 || id >= g_.in[0] || ih < 0 || ih >= g_.in[1]) {
          std::fill(row, row + run, T(0));
          continue;
        }
        std::fill(row, row + kw0 * g_.cin_g, T(0));
        std::fill(row + kw1 * g_.cin_g, row + run, T(0));
        const S* src = in + id * g_.in_s[0] + ih * g_.in_s[1] + (iw0 + kw0) * g_.in_s[2];
        T* dst = row + kw0 * g_.cin_g;
        const int64_t n = (kw1 - kw0) * g_.cin_g;
        if constexpr (std::is_same_v<T, S>) {
          std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
        } else {
          for (int64_t c = 0; c < n; ++c) dst[c] = load<T>(src[c]);
        }
      }
  }

  // out tile (Cout_g x len) = bias + W @ B for one group. With more positions
  // than output channels, threads take runs of positions, each its bias pass
  // and its GEMM (BLAS then runs on the calling thread), so the passes over
  // the output are split too and each part stays in its thread's cache.
  // Otherwise blas::gemm splits the output channels: each thread then reads
  // only its share of the weight, which dominates.
  void multiply(const WeightMatrix<T>& w, const T* b, int64_t brs, int64_t bcs, int64_t grp,
                S* out, int64_t len, T* acc) const {
    if (len < g_.cout_g) return multiply_part(w, b, brs, bcs, grp, out, 0, len, len, acc);
    const int64_t per_position = std::max<int64_t>(1, g_.cout_g * R_);
    cpu::parallel_for(len, std::max<int64_t>(1, kMinSplitWork / per_position),
                      [&](int64_t begin, int64_t end) {
                        multiply_part(w, b + begin * bcs, brs, bcs, grp, out + begin * g_.out_p,
                                      begin, end - begin, len, acc);
                      });
  }

  // Positions [first, first + len) of a tile of tile_len positions.
  void multiply_part(const WeightMatrix<T>& w, const T* b, int64_t brs, int64_t bcs, int64_t grp,
                     S* out, int64_t first, int64_t len, int64_t tile_len, T* acc) const {
    const T* bias = bias_.data() + grp * g_.cout_g;
    // Output passes go in memory order: channels fastest when channels-last
    // (out_c == 1), positions fastest otherwise; strided stores cost more
    // than the GEMM on shallow (small Cin) convolutions.
    const bool channels_fastest = g_.out_p != 1;
    if constexpr (std::is_same_v<T, S>) {
      // Start from the bias and accumulate onto it; without one, the GEMM
      // writes the tile itself.
      T beta = T(0);
      if (a_.has_bias || R_ == 0) {
        beta = T(1);
        if (channels_fastest && g_.out_c == 1) {
          for (int64_t i = 0; i < len; ++i)
            std::memcpy(out + i * g_.out_p, bias, static_cast<size_t>(g_.cout_g) * sizeof(T));
        } else if (channels_fastest) {
          for (int64_t i = 0; i < len; ++i)
            for (int64_t o = 0; o < g_.cout_g; ++o) out[o * g_.out_c + i * g_.out_p] = bias[o];
        } else {
          for (int64_t o = 0; o < g_.cout_g; ++o)
            for (int64_t i = 0; i < len; ++i) out[o * g_.out_c + i * g_.out_p] = bias[o];
        }
      }
      if (R_ > 0)
        gemm_views<T>(g_.cout_g, len, R_, w.data, w.row_stride, 1, b, brs, bcs, beta, out,
                      g_.out_c, g_.out_p);
    } else {
      // acc laid out like the output tile, so both passes run in order.
      const int64_t acc_c = channels_fastest ? 1 : tile_len;
      const int64_t acc_p = channels_fastest ? g_.cout_g : 1;
      T* part = acc + first * acc_p;
      if (R_ > 0) {
        gemm_views<T>(g_.cout_g, len, R_, w.data, w.row_stride, 1, b, brs, bcs, T(0), part, acc_c,
                      acc_p);
      } else {
        for (int64_t o = 0; o < g_.cout_g; ++o)
          for (int64_t i = 0; i < len; ++i) part[o * acc_c + i * acc_p] = T(0);
      }
      if (channels_fastest) {
        for (int64_t i = 0; i < len; ++i)
          for (int64_t o = 0; o < g_.cout_g; ++o)
            out[o * g_.out_c + i * g_.out_p] = store<S>(part[i * acc_p + o] + bias[o]);
      } else {
        for (int64_t o = 0; o < g_.cout_g; ++o)
          for (int64_t i = 0; i < len; ++i)
            out[o * g_.out_c + i * g_.out_p] = store<S>(part[o * acc_c + i] + bias[o]);
      }
    }
  }

  const ConvArgs& a_;
  Geometry g_;
  const S* in_;
  const S* w_;
  S* out_;
  int64_t R_;
  bool rows_of_positions_, window_rows_;
  bool pack_ = false, taps_outer_ = false;
  std::vector<T> packed_, bias_;
};

// ---------------------------------------------------------------- transposed

template <typename T, typename S>
void transposed(const ConvArgs& a) {
  const Geometry g = geometry(a);
  const S* in = reinterpret_cast<const S*>(a.input.data());
  const S* w = reinterpret_cast<const S*>(a.weight.data());
  S* out = reinterpret_cast<S*>(a.out.data());
  const int64_t J = g.cout_g * g.taps;  // rows of col: (o, tap)

  // The weight as (Cin x J), j = o * taps + tap, widened.
  std::vector<T> wp(static_cast<size_t>(g.Cin * J));
  for (int64_t c = 0; c < g.Cin; ++c)
    for (int64_t o = 0; o < g.cout_g; ++o)
      for (int64_t t = 0; t < g.taps; ++t) {
        const int64_t k0 = t / (g.k[1] * g.k[2]), k1 = (t / g.k[2]) % g.k[1], k2 = t % g.k[2];
        wp[c * J + o * g.taps + t] =
            load<T>(w[c * g.w_0 + o * g.w_1 + k0 * g.w_s[0] + k1 * g.w_s[1] + k2 * g.w_s[2]]);
      }
  std::vector<T> bias(static_cast<size_t>(g.Cout), T(0));
  if (a.has_bias) {
    const S* b = reinterpret_cast<const S*>(a.bias.data());
    for (int64_t o = 0; o < g.Cout; ++o) bias[o] = load<T>(b[o * a.bias.strides[0]]);
  }

  int64_t tile = std::max<int64_t>(1, kTileBytes / std::max<int64_t>(1, (J + g.cin_g) * int64_t(sizeof(T))));
  tile = std::min(tile, g.pin);
  std::vector<T> x(static_cast<size_t>(g.cin_g * tile)), col(static_cast<size_t>(J * tile));
  std::vector<T> acc(static_cast<size_t>(g.cout_g * g.pout));
  const int64_t IH = g.in[1], IW = g.in[2];
  const int64_t OH = g.out[1], OW = g.out[2];
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      std::fill(acc.begin(), acc.end(), T(0));
      const S* in_g = in + n * g.in_n + grp * g.cin_g * g.in_c;
      for (int64_t p0 = 0; p0 < g.pin; p0 += tile) {
        const int64_t len = std::min(tile, g.pin - p0);
        for (int64_t c = 0; c < g.cin_g; ++c)
          for (int64_t i = 0; i < len; ++i) {
            const int64_t p = p0 + i, id = p / (IH * IW), ih = (p / IW) % IH, iw = p % IW;
            x[c * len + i] = load<T>(in_g[c * g.in_c + id * g.in_s[0] + ih * g.in_s[1] + iw * g.in_s[2]]);
          }
        if (g.cin_g > 0) {
          // col (J x len) = Wg^T (J x Cin_g) @ x (Cin_g x len)
          gemm_views<T>(J, len, g.cin_g, wp.data() + grp * g.cin_g * J, 1, J, x.data(), len, 1,
                        T(0), col.data(), len, 1);
        } else {
          std::fill(col.begin(), col.end(), T(0));
        }
        // col2im: output channels are independent, so threads split them.
        cpu::parallel_for(g.cout_g, 1, [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o) {
            T* acc_o = acc.data() + o * g.pout;
            for (int64_t t = 0; t < g.taps; ++t) {
              const int64_t kd = t / (g.k[1] * g.k[2]), kh = (t / g.k[2]) % g.k[1], kw = t % g.k[2];
              const T* row = col.data() + (o * g.taps + t) * len;
              for (int64_t i = 0; i < len; ++i) {
                const int64_t p = p0 + i, id = p / (IH * IW), ih = (p / IW) % IH, iw = p % IW;
                const int64_t od = id * g.stride[0] - g.pad[0] + kd * g.dil[0];
                const int64_t oh = ih * g.stride[1] - g.pad[1] + kh * g.dil[1];
                const int64_t ow = iw * g.stride[2] - g.pad[2] + kw * g.dil[2];
                if (od < 0 || od >= g.out[0] || oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                acc_o[(od * OH + oh) * OW + ow] += row[i];
              }
            }
          }
        });
      }
      S* out_g = out + n * g.out_n + grp * g.cout_g * g.out_c;
      for (int64_t o = 0; o < g.cout_g; ++o)
        for (int64_t p = 0; p < g.pout; ++p)
          out_g[o * g.out_c + p * g.out_p] = store<S>(acc[o * g.pout + p] + bias[grp * g.cout_g + o]);
    }
}

template <typename T, typename S>
void run_typed(const ConvArgs& a) {
  if (a.transposed) {
    transposed<T, S>(a);
  } else if (a.groups > 1 && a.weight.sizes[1] == 1) {
    cpu::depthwise_conv(a);
  } else if (std::is_same_v<S, float> && cpu::winograd_applies(a) && cpu::winograd_conv(a)) {
    return;
  } else {
    Forward<T, S>(a).run();
  }
}

void host_conv(const ConvArgs& a) {
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

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::conv, DeviceType::CPU, host_conv);

}  // namespace aotishim
