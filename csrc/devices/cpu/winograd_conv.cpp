// Winograd F(2x2, 3x3) convolution on host memory (see winograd_conv.h).
//
// Each 2x2 block of outputs (a tile) reads a 4x4 patch d of every input
// channel. With B, G and A the F(2, 3) matrices (interpolation points 0, 1,
// -1 and infinity),
//   V = B^T d B   per tile and input channel      (input transform)
//   U = G g G^T   per output and input channel    (weight transform)
//   M = sum over input channels of U * V, elementwise: for each of the 16
//       points, one GEMM  M[pt] (tiles x Cout) = V[pt] (tiles x Cin) @ U[pt]
//   y = A^T M A + bias                             (output transform)
// The products are exact in real arithmetic; in float32 the transforms add
// a few roundings of sums of neighbouring inputs, well inside the error of
// a float32 convolution's own sum over Cin * 9 products.
//
// Tiles are taken in blocks whose V and M stay in the core's cache, one
// block per thread at a time; inside a block everything runs on the calling
// thread (the BLAS included). Channels are the unit-stride dimension of V
// and M, so both transforms run along channels, which a channels-last input
// and output (what compiled CNNs hand over) also have in memory.
#include "devices/cpu/winograd_conv.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "devices/cpu/blas.h"
#include "devices/cpu/parallel.h"

namespace aotishim::cpu {
namespace {

// The transformed weight is 16/9 the weight's size and is made on every
// call (weights can change between calls), at tens of cycles per (output,
// input) channel pair; the GEMMs save 20 multiply-adds per tile and pair,
// but 16 GEMMs of a block's tiles run below the speed of the direct
// convolution's one large GEMM. On a 2-core AVX2 host Winograd took
// 0.73-0.86 of the direct time at 196-784 tiles (ResNet's 64-channel layers
// at 28x28 and 56x56), broke even at 49 and lost below (benchmarks/README.md).
constexpr int64_t kMinTiles = 128;
// With fewer channels the transforms' passes cost more than the GEMMs save.
constexpr int64_t kMinChannels = 32;
// V and M of one block of tiles, together: about a core's L2.
constexpr int64_t kBlockBytes = int64_t{1} << 19;
// Tiles per block at least (fewer make the GEMMs overhead-bound).
constexpr int64_t kMinBlockTiles = 8;
constexpr int kPoints = 16;

// The 16 points' planes of U, V and M lie this many floats (a cache line)
// past their sizes apart: at power-of-two distances (64 x 64 floats) the 16
// rows a transform reads or writes together map to one cache set.
inline int64_t plane_stride(int64_t floats) { return floats + 16; }

struct Shape {
  int64_t N, C, K;            // images, input and output channels
  int64_t H, W, OH, OW;       // input and output planes
  int64_t pad_h, pad_w;
  int64_t tiles_h, tiles_w, tiles;  // tiles per column, per row, in all
  int64_t in_n, in_c, in_h, in_w;
  int64_t out_n, out_c, out_h, out_w;
  int64_t u_plane;  // from one point's U to the next
};

Shape shape_of(const ConvArgs& a) {
  Shape s{};
  s.N = a.input.sizes[0];
  s.C = a.input.sizes[1];
  s.H = a.input.sizes[2];
  s.W = a.input.sizes[3];
  s.K = a.out.sizes[1];
  s.OH = a.out.sizes[2];
  s.OW = a.out.sizes[3];
  s.pad_h = a.padding[0];
  s.pad_w = a.padding[1];
  s.tiles_h = (s.OH + 1) / 2;
  s.tiles_w = (s.OW + 1) / 2;
  s.tiles = s.N * s.tiles_h * s.tiles_w;
  s.in_n = a.input.strides[0];
  s.in_c = a.input.strides[1];
  s.in_h = a.input.strides[2];
  s.in_w = a.input.strides[3];
  s.out_n = a.out.strides[0];
  s.out_c = a.out.strides[1];
  s.out_h = a.out.strides[2];
  s.out_w = a.out.strides[3];
  s.u_plane = plane_stride(s.C * s.K);
  return s;
}

// This thread's block scratch (V, M and a tile's patch), at least `floats`
// long: kept from call to call (about kBlockBytes per thread, a few MiB at
// most for thousands of channels), since fresh pages on every call cost
// their page faults again (0.33 -> 0.57 ms for a 64-channel layer at 28x28).
float* block_scratch(int64_t floats) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < floats) buffer.resize(static_cast<size_t>(floats));
  return buffer.data();
}

// GCC/Clang vectors of channels, 128 bits (the baseline ISA's SSE2 or
// NEON registers); the transforms run along channels, kLanes at a time.
constexpr int kLanes = 4;
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

template <typename V>
inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V>
inline void store(float* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}
// Nonzero where x is an infinity or NaN (x - x is NaN there, 0 elsewhere).
inline int not_finite(float x) { return (x - x) != 0.0f; }
inline int not_finite(Lanes x) {
  const Lanes z = x - x;
  int any = 0;
  for (int l = 0; l < kLanes; ++l) any |= z[l] != 0.0f;
  return any;
}

// V = B^T d B for the channels at c (one, or kLanes of them): d is the
// tile's 4x4 patch with channels fastest (row r, column q at (r*4+q)*C),
// point p of V goes to v[p * plane]. Nonzero if a value is not finite.
template <typename V>
inline int input_tile(const float* d, float* v, int64_t C, int64_t plane, int64_t c) {
  V t[4][4];  // B^T d
  for (int q = 0; q < 4; ++q) {
    const V x0 = load<V>(d + q * C + c), x1 = load<V>(d + (4 + q) * C + c);
    const V x2 = load<V>(d + (8 + q) * C + c), x3 = load<V>(d + (12 + q) * C + c);
    t[0][q] = x0 - x2;
    t[1][q] = x1 + x2;
    t[2][q] = x2 - x1;
    t[3][q] = x1 - x3;
  }
  V acc = t[0][0] - t[0][0];
  for (int r = 0; r < 4; ++r) {  // (B^T d) B
    const V y[4] = {t[r][0] - t[r][2], t[r][1] + t[r][2], t[r][2] - t[r][1], t[r][1] - t[r][3]};
    for (int q = 0; q < 4; ++q) {
      acc += y[q] - y[q];
      store<V>(v + (r * 4 + q) * plane + c, y[q]);
    }
  }
  return not_finite(acc);
}

// y = A^T M A + bias for the output channels at k (one, or kLanes): point p
// of M at m[p * plane], output (r, q) of the tile to y[(r*2+q) * K].
template <typename V>
inline void output_tile(const float* m, int64_t plane, const float* bias, float* y, int64_t K,
                        int64_t k) {
  V s[2][4];  // A^T M
  for (int q = 0; q < 4; ++q) {
    const V x0 = load<V>(m + q * plane + k), x1 = load<V>(m + (4 + q) * plane + k);
    const V x2 = load<V>(m + (8 + q) * plane + k), x3 = load<V>(m + (12 + q) * plane + k);
    s[0][q] = x0 + x1 + x2;
    s[1][q] = x1 - x2 - x3;
  }
  const V b = load<V>(bias + k);
  for (int r = 0; r < 2; ++r) {  // (A^T M) A
    store<V>(y + (r * 2) * K + k, s[r][0] + s[r][1] + s[r][2] + b);
    store<V>(y + (r * 2 + 1) * K + k, s[r][1] - s[r][2] - s[r][3] + b);
  }
}

// U[pt][c][k] = (G g G^T)[pt] for g = weight[k][c]. False if the weight has
// a value that is not finite (its transform then is not either).
bool transform_weight(const ConvArgs& a, const Shape& s, float* u) {
  const float* w = reinterpret_cast<const float*>(a.weight.data());
  const int64_t w_k = a.weight.strides[0], w_c = a.weight.strides[1];
  const int64_t w_h = a.weight.strides[2], w_w = a.weight.strides[3];
  std::atomic<bool> finite{true};
  // Blocks of kChannelBlock input channels, every output channel per block:
  // the weight's rows of a block lie within a few cache lines per output
  // channel whether it is contiguous or channels-last, and U's rows of a
  // block stay in cache while k runs along them.
  constexpr int64_t kChannelBlock = 16;
  const int64_t blocks = (s.C + kChannelBlock - 1) / kChannelBlock;
  parallel_for(blocks, std::max<int64_t>(1, 256 / s.K), [&](int64_t begin, int64_t end) {
    int bad = 0;  // as in input_tile
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t c = begin * kChannelBlock; c < std::min(s.C, end * kChannelBlock); ++c) {
        const float* g = w + k * w_k + c * w_c;
        float h[4][3];  // G g: rows are G's
        for (int q = 0; q < 3; ++q) {
          const float g0 = g[q * w_w], g1 = g[w_h + q * w_w], g2 = g[2 * w_h + q * w_w];
          bad |= ((g0 - g0) + (g1 - g1) + (g2 - g2)) != 0.0f;
          h[0][q] = g0;
          h[1][q] = (g0 + g1 + g2) * 0.5f;
          h[2][q] = (g0 - g1 + g2) * 0.5f;
          h[3][q] = g2;
        }
        for (int i = 0; i < 4; ++i) {  // (G g) G^T, row i
          const float r[4] = {h[i][0], (h[i][0] + h[i][1] + h[i][2]) * 0.5f,
                              (h[i][0] - h[i][1] + h[i][2]) * 0.5f, h[i][2]};
          for (int j = 0; j < 4; ++j) u[(i * 4 + j) * s.u_plane + c * s.K + k] = r[j];
        }
      }
    if (bad) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}

// One block of tiles [t0, t0 + count): V, the 16 GEMMs, the output.
class Block {
 public:
  Block(const ConvArgs& a, const Shape& s, const float* u, const float* bias, int64_t capacity)
      : a_(a), s_(s), u_(u), bias_(bias) {
    v_plane_ = plane_stride(capacity * s.C);
    m_plane_ = plane_stride(capacity * s.K);
    float* base = block_scratch(kPoints * (s.C + v_plane_ + m_plane_) + 4 * s.K);
    patch_ = base;
    v_ = patch_ + kPoints * s.C;
    m_ = v_ + kPoints * v_plane_;
    y_ = m_ + kPoints * m_plane_;
  }

  // False if the block's input holds a value that is not finite.
  bool run(int64_t t0, int64_t count) {
    if (!transform_input(t0, count)) return false;
    for (int pt = 0; pt < kPoints; ++pt)
      blas::gemm(false, false, static_cast<int>(count), static_cast<int>(s_.K),
                 static_cast<int>(s_.C), 1.0f, v_ + pt * v_plane_, static_cast<int>(s_.C),
                 u_ + pt * s_.u_plane, static_cast<int>(s_.K), 0.0f, m_ + pt * m_plane_,
                 static_cast<int>(s_.K));
    transform_output(t0, count);
    return true;
  }

 private:
  // Tile t's image and top-left output position.
  void locate(int64_t t, int64_t& n, int64_t& oh, int64_t& ow) const {
    const int64_t per_image = s_.tiles_h * s_.tiles_w;
    n = t / per_image;
    oh = 2 * ((t % per_image) / s_.tiles_w);
    ow = 2 * (t % s_.tiles_w);
  }

  bool transform_input(int64_t t0, int64_t count) {
    const float* in = reinterpret_cast<const float*>(a_.input.data());
    const int64_t C = s_.C;
    float* d = patch_;
    int bad = 0;
    for (int64_t i = 0; i < count; ++i) {
      int64_t n, oh, ow;
      locate(t0 + i, n, oh, ow);
      // The 4x4 patch, channels fastest, zeros outside the input.
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 4; ++q) {
          float* dst = d + (r * 4 + q) * C;
          const int64_t ih = oh - s_.pad_h + r, iw = ow - s_.pad_w + q;
          if (ih < 0 || ih >= s_.H || iw < 0 || iw >= s_.W) {
            std::fill(dst, dst + C, 0.0f);
            continue;
          }
          const float* src = in + n * s_.in_n + ih * s_.in_h + iw * s_.in_w;
          if (s_.in_c == 1) {
            std::memcpy(dst, src, static_cast<size_t>(C) * sizeof(float));
          } else {
            for (int64_t c = 0; c < C; ++c) dst[c] = src[c * s_.in_c];
          }
        }
      float* v = v_ + i * C;
      int64_t c = 0;
      for (; c + kLanes <= C; c += kLanes) bad |= input_tile<Lanes>(d, v, C, v_plane_, c);
      for (; c < C; ++c) bad |= input_tile<float>(d, v, C, v_plane_, c);
    }
    return bad == 0;
  }

  void transform_output(int64_t t0, int64_t count) {
    float* out = reinterpret_cast<float*>(a_.out.data());
    const int64_t K = s_.K, plane = m_plane_;
    for (int64_t i = 0; i < count; ++i) {
      const float* m = m_ + i * K;
      float* y = y_;  // y[r * 2 + q][k]
      int64_t k = 0;
      for (; k + kLanes <= K; k += kLanes) output_tile<Lanes>(m, plane, bias_, y, K, k);
      for (; k < K; ++k) output_tile<float>(m, plane, bias_, y, K, k);
      int64_t n, oh, ow;
      locate(t0 + i, n, oh, ow);
      for (int r = 0; r < 2 && oh + r < s_.OH; ++r)
        for (int q = 0; q < 2 && ow + q < s_.OW; ++q) {
          float* dst = out + n * s_.out_n + (oh + r) * s_.out_h + (ow + q) * s_.out_w;
          const float* src = y + (r * 2 + q) * K;
          if (s_.out_c == 1) {
            std::memcpy(dst, src, static_cast<size_t>(K) * sizeof(float));
          } else {
            for (int64_t k = 0; k < K; ++k) dst[k * s_.out_c] = src[k];
          }
        }
    }
  }

  const ConvArgs& a_;
  const Shape& s_;
  const float* u_;
  const float* bias_;
  int64_t v_plane_, m_plane_;  // from one point's V (M) to the next
  float *patch_, *v_, *m_, *y_;
};

}  // namespace

bool winograd_applies(const ConvArgs& a) {
  if (a.out.dtype != DType::Float32 || a.transposed || a.groups != 1 || a.input.dim() != 4)
    return false;
  const std::vector<int64_t>& k = a.weight.sizes;
  if (k[2] != 3 || k[3] != 3) return false;
  for (int d = 0; d < 2; ++d)
    if (a.stride[d] != 1 || a.dilation[d] != 1) return false;
  const Shape s = shape_of(a);
  // The BLAS takes int sizes; blocks keep the tile count far below that.
  if (s.C > blas::kMaxInt || s.K > blas::kMaxInt) return false;
  return s.C >= kMinChannels && s.K >= kMinChannels && s.tiles >= kMinTiles;
}

bool winograd_conv(const ConvArgs& a) {
  const Shape s = shape_of(a);
  std::unique_ptr<float[]> u(new float[static_cast<size_t>(kPoints * s.u_plane)]);
  if (!transform_weight(a, s, u.get())) return false;
  std::vector<float> bias(static_cast<size_t>(s.K), 0.0f);
  if (a.has_bias) {
    const float* b = reinterpret_cast<const float*>(a.bias.data());
    for (int64_t k = 0; k < s.K; ++k) bias[k] = b[k * a.bias.strides[0]];
  }
  // Blocks of at most `cap` tiles, at least one per thread where the tiles
  // allow, the tiles spread evenly over them.
  const int64_t cap = std::max(kMinBlockTiles, kBlockBytes / (kPoints * 4 * (s.C + s.K)));
  int64_t blocks = (s.tiles + cap - 1) / cap;
#if defined(_OPENMP)
  blocks = std::max(blocks, std::min<int64_t>(omp_get_max_threads(), s.tiles / kMinBlockTiles));
#endif
  std::atomic<bool> finite{true};
  parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
    const int64_t largest = (s.tiles + blocks - 1) / blocks;
    Block block(a, s, u.get(), bias.data(), largest);
    for (int64_t b = begin; b < end && finite.load(std::memory_order_relaxed); ++b) {
      const int64_t t0 = s.tiles * b / blocks, t1 = s.tiles * (b + 1) / blocks;
      if (!block.run(t0, t1 - t0)) finite.store(false, std::memory_order_relaxed);
    }
  });
  return finite.load();
}

}  // namespace aotishim::cpu
