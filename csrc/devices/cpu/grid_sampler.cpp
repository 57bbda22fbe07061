// grid_sampler_3d on the host, output points in parallel. Coordinates and
// weights are computed in the dtype (float for bfloat16/float16), the 8
// corners summed in torch's order.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/grid_sampler.h"

namespace aotishim {
namespace {

template <typename V>
V unnormalize(V coord, int64_t size, bool align_corners) {
  if (align_corners) return ((coord + 1) / 2) * static_cast<V>(size - 1);
  return ((coord + 1) * static_cast<V>(size) - 1) / 2;
}

// std::min / std::max with their argument order: a NaN coordinate clips to
// the upper edge, as torch's clip does.
template <typename V>
V clip(V in, int64_t size) {
  const V lo = in < V(0) ? V(0) : in;
  const V hi = static_cast<V>(size - 1);
  return lo < hi ? lo : hi;
}

template <typename V>
V reflect(V in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return V(0);
  const V min = static_cast<V>(twice_low) / 2;
  const V span = static_cast<V>(twice_high - twice_low) / 2;
  in = std::fabs(in - min);
  const V extra = std::fmod(in, span);
  const int flips = static_cast<int>(std::floor(in / span));
  return flips % 2 == 0 ? extra + min : span - extra + min;
}

template <typename V>
V source_index(V coord, int64_t size, int64_t padding, bool align_corners) {
  coord = unnormalize(coord, size, align_corners);
  if (padding == 1) {
    coord = clip(coord, size);
  } else if (padding == 2) {
    coord = align_corners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
    coord = clip(coord, size);
  }
  return coord;
}

// A cell index from a rounded coordinate; NaN and values far outside any
// tensor become an index that is out of bounds (and stays so plus one).
template <typename V>
int64_t cell(V v) {
  if (!(v > V(-1e15) && v < V(1e15))) return -(int64_t{1} << 60);
  return static_cast<int64_t>(v);
}

void host_grid_sampler_3d(const GridSampleArgs& a) {
  const Tensor &input = a.input, &grid = a.grid, &out = a.out;
  const int64_t N = input.sizes[0], C = input.sizes[1];
  const int64_t D = input.sizes[2], H = input.sizes[3], W = input.sizes[4];
  const int64_t oD = out.sizes[2], oH = out.sizes[3], oW = out.sizes[4];
  const std::vector<int64_t> &is = input.strides, &gs = grid.strides, &os = out.strides;
  cpu::visit_dtype(input.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* in = cpu::typed<S>(input);
    const S* g = cpu::typed<S>(grid);
    S* dst = cpu::typed<S>(out);
    const int64_t points = N * oD * oH * oW;
    cpu::parallel_for(points, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)),
                      [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const int64_t w = q % oW, h = (q / oW) % oH, d = (q / (oW * oH)) % oD, n = q / (oW * oH * oD);
        const S* gp = g + n * gs[0] + d * gs[1] + h * gs[2] + w * gs[3];
        const V x = source_index(E::load(gp[0]), W, a.padding, a.align_corners);
        const V y = source_index(E::load(gp[gs[4]]), H, a.padding, a.align_corners);
        const V z = source_index(E::load(gp[2 * gs[4]]), D, a.padding, a.align_corners);
        const S* ip = in + n * is[0];
        S* op = dst + n * os[0] + d * os[2] + h * os[3] + w * os[4];
        auto inside = [&](int64_t zz, int64_t yy, int64_t xx) {
          return zz >= 0 && zz < D && yy >= 0 && yy < H && xx >= 0 && xx < W;
        };
        if (a.interpolation == 1) {
          const int64_t xi = cell(std::nearbyint(x)), yi = cell(std::nearbyint(y)),
                        zi = cell(std::nearbyint(z));
          const bool ok = inside(zi, yi, xi);
          for (int64_t c = 0; c < C; ++c)
            op[c * os[1]] = ok ? ip[c * is[1] + zi * is[2] + yi * is[3] + xi * is[4]] : E::store(V(0));
          continue;
        }
        const V fx = std::floor(x), fy = std::floor(y), fz = std::floor(z);
        const int64_t x0 = cell(fx), y0 = cell(fy), z0 = cell(fz);
        const int64_t x1 = x0 + 1, y1 = y0 + 1, z1 = z0 + 1;
        const V x1f = fx + 1, y1f = fy + 1, z1f = fz + 1;
        // t/b: z0/z1, n/s: y0/y1, w/e: x0/x1
        const V tnw = (x1f - x) * (y1f - y) * (z1f - z);
        const V tne = (x - fx) * (y1f - y) * (z1f - z);
        const V tsw = (x1f - x) * (y - fy) * (z1f - z);
        const V tse = (x - fx) * (y - fy) * (z1f - z);
        const V bnw = (x1f - x) * (y1f - y) * (z - fz);
        const V bne = (x - fx) * (y1f - y) * (z - fz);
        const V bsw = (x1f - x) * (y - fy) * (z - fz);
        const V bse = (x - fx) * (y - fy) * (z - fz);
        const int64_t cz[8] = {z0, z0, z0, z0, z1, z1, z1, z1};
        const int64_t cy[8] = {y0, y0, y1, y1, y0, y0, y1, y1};
        const int64_t cx[8] = {x0, x1, x0, x1, x0, x1, x0, x1};
        const V wt[8] = {tnw, tne, tsw, tse, bnw, bne, bsw, bse};
        bool ok[8];
        int64_t off[8];
        for (int k = 0; k < 8; ++k) {
          ok[k] = inside(cz[k], cy[k], cx[k]);
          off[k] = ok[k] ? cz[k] * is[2] + cy[k] * is[3] + cx[k] * is[4] : 0;
        }
        for (int64_t c = 0; c < C; ++c) {
          const S* plane = ip + c * is[1];
          V acc = 0;
          for (int k = 0; k < 8; ++k)
            if (ok[k]) acc += E::load(plane[off[k]]) * wt[k];
          op[c * os[1]] = E::store(acc);
        }
      }
    });
  });
}

AOTISHIM_REGISTER_KERNEL(ops::grid_sampler_3d_kernel, DeviceType::CPU, host_grid_sampler_3d);

}  // namespace
}  // namespace aotishim
