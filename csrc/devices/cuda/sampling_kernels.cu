// grid_sampler_3d on cuda, one thread per output point (every channel), as
// torch cuda's kernel computes it: coordinates and weights in the math type
// (float for float16 and bfloat16), the 8 corners summed in torch's order.
// Where torch cuda differs from its cpu kernel (and from ours), this follows
// cuda: clipping uses fmin/fmax, so a NaN coordinate clips to 0 (cpu: to the
// upper edge), and a coordinate that is not finite or lies beyond int range
// after padding becomes -100, outside every tensor.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/sampling_kernels.h"
#include "devices/cuda/typed_values.cuh"

namespace aotishim {
namespace cuda {

namespace {

__device__ __forceinline__ float floor_of(float x) { return floorf(x); }
__device__ __forceinline__ double floor_of(double x) { return ::floor(x); }
__device__ __forceinline__ float nearest_of(float x) { return nearbyintf(x); }  // halves to even
__device__ __forceinline__ double nearest_of(double x) { return ::nearbyint(x); }
__device__ __forceinline__ float abs_of(float x) { return fabsf(x); }
__device__ __forceinline__ double abs_of(double x) { return ::fabs(x); }
__device__ __forceinline__ float remainder_of(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double remainder_of(double x, double y) { return ::fmod(x, y); }
__device__ __forceinline__ float min_of(float x, float y) { return fminf(x, y); }
__device__ __forceinline__ double min_of(double x, double y) { return ::fmin(x, y); }
__device__ __forceinline__ float max_of(float x, float y) { return fmaxf(x, y); }
__device__ __forceinline__ double max_of(double x, double y) { return ::fmax(x, y); }

// [-1, 1] to pixel units: -1 and 1 are the corner cells' centres
// (align_corners), else their outer edges.
template <typename V>
__device__ __forceinline__ V unnormalize(V coord, int64_t size, bool align_corners) {
  if (align_corners) return ((coord + V(1)) / V(2)) * static_cast<V>(size - 1);
  return ((coord + V(1)) * static_cast<V>(size) - V(1)) / V(2);
}

// Into [0, size - 1] by fmin/fmax (a NaN becomes 0).
template <typename V>
__device__ __forceinline__ V clip(V in, int64_t size) {
  return min_of(static_cast<V>(size - 1), max_of(in, V(0)));
}

// Reflected at twice_low / 2 and twice_high / 2 until inside.
template <typename V>
__device__ __forceinline__ V reflect(V in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return V(0);
  const V min = static_cast<V>(twice_low) / V(2);
  const V span = static_cast<V>(twice_high - twice_low) / V(2);
  in = abs_of(in - min);
  const V extra = remainder_of(in, span);
  const int flips = static_cast<int>(floor_of(in / span));
  return flips % 2 == 0 ? extra + min : span - extra + min;
}

// A coordinate that could not index a tensor (not finite, beyond int range)
// becomes -100: outside, with no undefined conversion.
template <typename V>
__device__ __forceinline__ V within_int_range(V x) {
  if (x > static_cast<V>(INT_MAX - 1) || x < static_cast<V>(INT_MIN) || !isfinite(x))
    return V(-100);
  return x;
}

template <typename V>
__device__ __forceinline__ V source_index(V coord, int64_t size, int padding, bool align_corners) {
  coord = unnormalize(coord, size, align_corners);
  if (padding == 1) {
    coord = clip(coord, size);
  } else if (padding == 2) {
    coord = align_corners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
    coord = clip(coord, size);
  }
  return within_int_range(coord);
}

template <typename T>
__global__ void grid_sampler_3d_kernel(GridSampleLaunch g, const T* input, const T* grid, T* out,
                                       int64_t points) {
  using V = opmath_of<T>;
  const int64_t C = g.input_sizes[1];
  const int64_t D = g.input_sizes[2], H = g.input_sizes[3], W = g.input_sizes[4];
  const int64_t oD = g.out_sizes[2], oH = g.out_sizes[3], oW = g.out_sizes[4];
  const int64_t* is = g.input_strides;
  const int64_t* gs = g.grid_strides;
  const int64_t* os = g.out_strides;
  auto inside = [&](int64_t z, int64_t y, int64_t x) {
    return z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
  };
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < points;
       q += step) {
    const int64_t w = q % oW, h = (q / oW) % oH, d = (q / (oW * oH)) % oD;
    const int64_t n = q / (oW * oH * oD);
    const T* gp = grid + n * gs[0] + d * gs[1] + h * gs[2] + w * gs[3];
    const V ix = source_index(load_value<T>(gp[0]), W, g.padding, g.align_corners);
    const V iy = source_index(load_value<T>(gp[gs[4]]), H, g.padding, g.align_corners);
    const V iz = source_index(load_value<T>(gp[2 * gs[4]]), D, g.padding, g.align_corners);
    const T* in_n = input + n * is[0];
    T* out_p = out + n * os[0] + d * os[2] + h * os[3] + w * os[4];
    if (g.interpolation == 1) {
      const int64_t xi = static_cast<int64_t>(nearest_of(ix));
      const int64_t yi = static_cast<int64_t>(nearest_of(iy));
      const int64_t zi = static_cast<int64_t>(nearest_of(iz));
      const bool ok = inside(zi, yi, xi);
      const int64_t off = zi * is[2] + yi * is[3] + xi * is[4];
      for (int64_t c = 0; c < C; ++c)
        out_p[c * os[1]] = ok ? in_n[c * is[1] + off] : store_value<T>(V(0));
      continue;
    }
    const int64_t x0 = static_cast<int64_t>(floor_of(ix));
    const int64_t y0 = static_cast<int64_t>(floor_of(iy));
    const int64_t z0 = static_cast<int64_t>(floor_of(iz));
    const V fx0 = static_cast<V>(x0), fy0 = static_cast<V>(y0), fz0 = static_cast<V>(z0);
    const V fx1 = static_cast<V>(x0 + 1), fy1 = static_cast<V>(y0 + 1);
    const V fz1 = static_cast<V>(z0 + 1);
    // t/b: z0/z1, n/s: y0/y1, w/e: x0/x1; each weight the volume opposite
    const V wt[8] = {
        (fx1 - ix) * (fy1 - iy) * (fz1 - iz),  // tnw
        (ix - fx0) * (fy1 - iy) * (fz1 - iz),  // tne
        (fx1 - ix) * (iy - fy0) * (fz1 - iz),  // tsw
        (ix - fx0) * (iy - fy0) * (fz1 - iz),  // tse
        (fx1 - ix) * (fy1 - iy) * (iz - fz0),  // bnw
        (ix - fx0) * (fy1 - iy) * (iz - fz0),  // bne
        (fx1 - ix) * (iy - fy0) * (iz - fz0),  // bsw
        (ix - fx0) * (iy - fy0) * (iz - fz0),  // bse
    };
    bool ok[8];
    int64_t off[8];
    for (int k = 0; k < 8; ++k) {
      const int64_t xx = x0 + (k & 1), yy = y0 + ((k >> 1) & 1), zz = z0 + ((k >> 2) & 1);
      ok[k] = inside(zz, yy, xx);
      off[k] = ok[k] ? zz * is[2] + yy * is[3] + xx * is[4] : 0;
    }
    for (int64_t c = 0; c < C; ++c) {
      const T* plane = in_n + c * is[1];
      V acc = 0;
      for (int k = 0; k < 8; ++k)
        if (ok[k]) acc += load_value<T>(plane[off[k]]) * wt[k];
      out_p[c * os[1]] = store_value<T>(acc);
    }
  }
}

}  // namespace

void launch_grid_sampler_3d(const GridSampleLaunch& g, cudaStream_t stream) {
  const int64_t points = g.out_sizes[0] * g.out_sizes[2] * g.out_sizes[3] * g.out_sizes[4];
  if (points == 0 || g.out_sizes[1] == 0) return;
  discard_earlier_error();
  dispatch_floating(g.dtype, "cuda grid_sampler_3d", [&](auto tag) {
    using T = decltype(tag);
    grid_sampler_3d_kernel<T><<<blocks_for(points), kThreads, 0, stream>>>(
        g, static_cast<const T*>(g.input), static_cast<const T*>(g.grid), static_cast<T*>(g.out),
        points);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
