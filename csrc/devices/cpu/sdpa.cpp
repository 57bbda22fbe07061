// The cpu attention kernel, flash style: for each (batch, head, tile of
// queries), walk the keys in tiles, with the scores of one tile (Q K^T, a
// BLAS GEMM) turned into probabilities against a running row maximum, the
// running sum and output rescaled when the maximum grows, and P V added by a
// second GEMM. Memory is O(tile^2) whatever the sequence length. Everything
// accumulates in float (double for float64 inputs); views are read where they
// lie, element by element, into packed tiles. A float row's maximum and
// exponentials run in vector registers (softmax_rows.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "devices/cpu/blas.h"
#include "devices/cpu/parallel.h"
#include "devices/cpu/softmax_rows.h"
#include "ops/sdpa.h"

namespace aotishim {
namespace {

constexpr int64_t kQueryTile = 64;
constexpr int64_t kKeyTile = 128;

double load(const char* p, DType t) {
  switch (t) {
    case DType::Float32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::Float64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::BFloat16: { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
    case DType::Float16: { uint16_t v; std::memcpy(&v, p, 2); return f16_to_float(v); }
    case DType::Bool: return *reinterpret_cast<const uint8_t*>(p) != 0 ? 1.0 : 0.0;
    default: return 0.0;
  }
}

void store(char* p, DType t, double v) {
  switch (t) {
    case DType::Float32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    case DType::Float64: std::memcpy(p, &v, 8); break;
    case DType::BFloat16: { uint16_t h = float_to_bf16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    case DType::Float16: { uint16_t h = float_to_f16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    default: break;
  }
}

// rows x cols of a 4-D view at (b, h, row0, 0), packed row-major into dst.
template <typename T>
void pack(T* dst, const Tensor& t, int64_t b, int64_t h, int64_t row0, int64_t rows,
          int64_t cols) {
  const size_t item = t.itemsize();
  const char* base = t.data() + (b * t.strides[0] + h * t.strides[1] + row0 * t.strides[2]) *
                                    static_cast<int64_t>(item);
  if (t.dtype == DType::Float32 && sizeof(T) == 4 && t.strides[3] == 1) {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + r * cols, base + r * t.strides[2] * 4, static_cast<size_t>(cols) * 4);
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * cols + c] = static_cast<T>(
          load(base + (r * t.strides[2] + c * t.strides[3]) * static_cast<int64_t>(item), t.dtype));
}

// Uninitialised scratch (a std::vector would clear it on every call).
template <typename T>
class Scratch {
 public:
  explicit Scratch(int64_t n) : p_(new T[static_cast<size_t>(std::max<int64_t>(n, 1))]) {}
  T* data() { return p_.get(); }
  T& operator[](int64_t i) { return p_[static_cast<size_t>(i)]; }

 private:
  std::unique_ptr<T[]> p_;
};

// scores[c] += mask[c] (a floating mask) or scores[c] = -inf where mask[c]
// is false (a bool mask), for one row of `cols` mask elements `step`
// elements apart: the dtype is looked at once per row, not per element.
template <typename T, typename M, typename Convert>
void mask_loop(T* sr, int64_t cols, const char* mrow, int64_t step, Convert convert) {
  const int64_t bytes = step * static_cast<int64_t>(sizeof(M));
  for (int64_t c = 0; c < cols; ++c) {
    M x;
    std::memcpy(&x, mrow + c * bytes, sizeof(M));  // views need not be aligned
    sr[c] += static_cast<T>(convert(x));
  }
}

template <typename T>
void apply_mask_row(T* sr, int64_t cols, const char* mrow, int64_t step, DType dtype) {
  switch (dtype) {
    case DType::Bool: {
      const uint8_t* mp = reinterpret_cast<const uint8_t*>(mrow);
      const T neg_inf = -std::numeric_limits<T>::infinity();
      for (int64_t c = 0; c < cols; ++c)
        if (mp[c * step] == 0) sr[c] = neg_inf;
      return;
    }
    case DType::Float32: mask_loop<T, float>(sr, cols, mrow, step, [](float x) { return x; }); return;
    case DType::Float64: mask_loop<T, double>(sr, cols, mrow, step, [](double x) { return x; }); return;
    case DType::BFloat16: mask_loop<T, uint16_t>(sr, cols, mrow, step, bf16_to_float); return;
    case DType::Float16: mask_loop<T, uint16_t>(sr, cols, mrow, step, f16_to_float); return;
    default: return;  // refused by the op
  }
}

// out row (Ev elements `step` apart, in the output dtype) = o * inv.
template <typename T>
void store_row(char* orow, int64_t step, DType dtype, const T* o, int64_t Ev, T inv) {
  if (dtype == DType::Float32) {
    for (int64_t e = 0; e < Ev; ++e) {
      const float x = static_cast<float>(o[e] * inv);
      std::memcpy(orow + e * step * 4, &x, 4);
    }
    return;
  }
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  for (int64_t e = 0; e < Ev; ++e) store(orow + e * step * item, dtype, o[e] * inv);
}

// The largest of sr[0, cols) (NaNs skipped), then sr[c] = exp(sr[c] - max)
// and their sum: float rows in vector registers where the CPU has them
// (softmax_rows.h), double rows in these loops.
template <typename T>
T row_max(const T* sr, int64_t cols) {
  if constexpr (std::is_same_v<T, float>) {
    return cpu::row_max(sr, cols);
  } else {
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, sr[c]);
    return m;
  }
}

template <typename T>
T exp_sum(T* sr, int64_t cols, T max) {
  if constexpr (std::is_same_v<T, float>) {
    return cpu::exp_sum(sr, cols, max);
  } else {
    T sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      sr[c] = std::exp(sr[c] - max);
      sum += sr[c];
    }
    return sum;
  }
}

// Row i of the softmax weights, exp(score - lse), from the packed query row:
// a second pass over the keys, once the row's logsumexp is known. Masked keys
// and rows with no key left get 0.
template <typename T>
void write_probs(const SdpaArgs& a, const T* q, int64_t b, int64_t h, int64_t hk, int64_t i,
                 T lse) {
  const int64_t S = a.k.sizes[2], E = a.q.sizes[3];
  const Tensor &k = a.k, &p = a.probs, &mk = a.mask;
  const int64_t ki = static_cast<int64_t>(k.itemsize()), pi = static_cast<int64_t>(p.itemsize());
  for (int64_t j = 0; j < S; ++j) {
    T prob = 0;
    bool keep = std::isfinite(lse) && !(a.causal && j > i);
    T score = 0;
    if (keep && a.has_mask) {
      const double mv = load(mk.data() + (b * mk.strides[0] + h * mk.strides[1] +
                                          i * mk.strides[2] + j * mk.strides[3]) *
                                             static_cast<int64_t>(mk.itemsize()),
                             mk.dtype);
      if (mk.dtype == DType::Bool) keep = mv != 0.0;
      else score = static_cast<T>(mv);
    }
    if (keep) {
      const char* krow = k.data() + (b * k.strides[0] + hk * k.strides[1] + j * k.strides[2]) * ki;
      T dot = 0;
      for (int64_t e = 0; e < E; ++e)
        dot += q[e] * static_cast<T>(load(krow + e * k.strides[3] * ki, k.dtype));
      prob = std::exp(static_cast<T>(a.scale) * dot + score - lse);
    }
    store(p.data() + (b * p.strides[0] + h * p.strides[1] + i * p.strides[2] + j * p.strides[3]) * pi,
          p.dtype, prob);
  }
}

template <typename T>
void attention(const SdpaArgs& a) {
  const int64_t B = a.q.sizes[0], H = a.q.sizes[1], L = a.q.sizes[2], E = a.q.sizes[3];
  const int64_t Hkv = a.k.sizes[1], S = a.k.sizes[2], Ev = a.v.sizes[3];
  const int64_t group = H / Hkv;
  const int64_t q_tiles = (L + kQueryTile - 1) / kQueryTile;
  const T scale = static_cast<T>(a.scale);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  AOTISHIM_CHECK(E <= blas::kMaxInt && Ev <= blas::kMaxInt, "head dimension too large");

  // Tiles no larger than the problem: a tiny head (a few queries and keys)
  // must not pay for allocating and clearing full-size tiles.
  const int64_t q_tile = std::min(kQueryTile, L), k_tile = std::min(kKeyTile, S);
  cpu::parallel_for(B * H * q_tiles, 1, [&](int64_t begin, int64_t end) {
    Scratch<T> q(q_tile * E), k(k_tile * E), v(k_tile * Ev), s(q_tile * k_tile), o(q_tile * Ev),
        m(q_tile), l(q_tile);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (H * q_tiles), h = task / q_tiles % H, i0 = task % q_tiles * kQueryTile;
      const int64_t hk = h / group;
      const int64_t rows = std::min(kQueryTile, L - i0);
      pack(q.data(), a.q, b, h, i0, rows, E);
      std::fill(o.data(), o.data() + rows * Ev, T(0));
      std::fill(m.data(), m.data() + rows, neg_inf);
      std::fill(l.data(), l.data() + rows, T(0));
      // Causal: keys past the tile's last query are masked for every row.
      const int64_t s_end = a.causal ? std::min(S, i0 + rows) : S;
      for (int64_t j0 = 0; j0 < s_end; j0 += kKeyTile) {
        const int64_t cols = std::min(kKeyTile, s_end - j0);
        pack(k.data(), a.k, b, hk, j0, cols, E);
        pack(v.data(), a.v, b, hk, j0, cols, Ev);
        // s = scale * q k^T (rows x cols)
        blas::gemm(false, true, static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(E),
                   scale, q.data(), static_cast<int>(E), k.data(), static_cast<int>(E), T(0),
                   s.data(), static_cast<int>(cols));
        for (int64_t r = 0; r < rows; ++r) {
          T* sr = s.data() + r * cols;
          const int64_t i = i0 + r;
          // Causal: keys past query i are masked, their weights 0; the mask,
          // maximum and exponentials need only the columns before them.
          const int64_t live = a.causal ? std::clamp<int64_t>(i + 1 - j0, 0, cols) : cols;
          std::fill(sr + live, sr + cols, T(0));
          if (a.has_mask) {
            const Tensor& mk = a.mask;
            const char* mrow = mk.data() + (b * mk.strides[0] + h * mk.strides[1] +
                                            i * mk.strides[2] + j0 * mk.strides[3]) *
                                               static_cast<int64_t>(mk.itemsize());
            apply_mask_row(sr, live, mrow, mk.strides[3], mk.dtype);
          }
          const T new_max = std::max(m[r], row_max(sr, live));
          // All scores so far masked: nothing to add yet (and exp(-inf - -inf) is NaN).
          if (new_max == neg_inf) {
            // row_max skips NaN; a NaN score here is the first non-masked one,
            // and it makes the row NaN as torch's softmax does (the NaN maximum
            // carries it through later tiles; o carries it to the output).
            if (std::any_of(sr, sr + live, [](T x) { return x != x; })) {
              m[r] = l[r] = std::numeric_limits<T>::quiet_NaN();
              std::fill(o.data() + r * Ev, o.data() + (r + 1) * Ev, m[r]);
            }
            std::fill(sr, sr + live, T(0));
            continue;
          }
          const T correction = std::exp(m[r] - new_max);  // 0 when m[r] was -inf
          const T sum = exp_sum(sr, live, new_max);
          l[r] = l[r] * correction + sum;
          m[r] = new_max;
          if (correction != T(1))
            for (int64_t e = 0; e < Ev; ++e) o[r * Ev + e] *= correction;
        }
        // o += p v (rows x Ev)
        blas::gemm(false, false, static_cast<int>(rows), static_cast<int>(Ev), static_cast<int>(cols),
                   T(1), s.data(), static_cast<int>(cols), v.data(), static_cast<int>(Ev), T(1),
                   o.data(), static_cast<int>(Ev));
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        // A fully masked row: torch gives zeros... and -inf / NaN in lse; see tests.
        const T inv = l[r] > T(0) ? T(1) / l[r] : T(0);
        char* orow = a.out.data() + (b * a.out.strides[0] + h * a.out.strides[1] +
                                     i * a.out.strides[2]) * static_cast<int64_t>(a.out.itemsize());
        store_row(orow, a.out.strides[3], a.out.dtype, o.data() + r * Ev, Ev, inv);
        const int64_t lse_at = b * a.lse.strides[0] + h * a.lse.strides[1] + i * a.lse.strides[2];
        const T lse = m[r] + std::log(l[r]);
        if (a.lse.dtype == DType::Float64) reinterpret_cast<double*>(a.lse.data())[lse_at] = lse;
        else reinterpret_cast<float*>(a.lse.data())[lse_at] = static_cast<float>(lse);
        if (a.has_probs) write_probs(a, q.data() + r * E, b, h, hk, i, m[r] + std::log(l[r]));
      }
    }
  });
}

void cpu_sdpa(const SdpaArgs& args) {
  if (args.q.dtype == DType::Float64) {
    attention<double>(args);
  } else {
    attention<float>(args);
  }
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::sdpa, DeviceType::CPU, cpu_sdpa);

}  // namespace aotishim
