// pad on cuda: one thread per output element maps each of its indices to the
// input index it copies (reflected, clamped or wrapped; outside the input in
// constant mode, the value) and moves the element's bytes, so every dtype
// (bool, integers, floats, complex) pads alike.
#include <cuda_runtime.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/pad_kernels.h"

namespace aotishim {
namespace cuda {

namespace {

// A complex128 element as two 8-byte words (borrowed memory need only be
// aligned to 8).
struct Bytes16 {
  uint64_t lo, hi;
};

// The input index for output index o of a dim of `size`, or -1 outside the
// input (constant mode). Validation has checked that reflection needs one
// bounce and that wrapping stays within what negative pads leave.
__device__ __forceinline__ int64_t source_index(DevicePad mode, int64_t o, int64_t before,
                                                int64_t after, int64_t size) {
  if (mode == DevicePad::Circular) {  // torch crops first, then wraps
    const int64_t crop_lo = before < 0 ? -before : 0, crop_hi = after < 0 ? -after : 0;
    const int64_t kept = size - crop_lo - crop_hi;
    const int64_t i = o - (before > 0 ? before : 0);
    return crop_lo + ((i % kept) + kept) % kept;
  }
  const int64_t i = o - before;
  if (i >= 0 && i < size) return i;
  switch (mode) {
    case DevicePad::Reflect: return i < 0 ? -i : 2 * (size - 1) - i;
    case DevicePad::Replicate: return i < 0 ? 0 : size - 1;
    default: return -1;
  }
}

template <typename E>
__global__ void pad_kernel(PadLaunch g, const E* self, E* out, const E* value, int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < numel;
       e += step) {
    int64_t rest = e, out_off = 0, in_off = 0;
    bool inside = true;
    for (int d = g.ndim - 1; d >= 0; --d) {
      const int64_t o = rest % g.out_sizes[d];
      rest /= g.out_sizes[d];
      out_off += o * g.out_strides[d];
      const int64_t i = source_index(g.mode, o, g.before[d], g.after[d], g.in_sizes[d]);
      if (i < 0) inside = false;
      else in_off += i * g.in_strides[d];
    }
    out[out_off] = inside ? self[in_off] : *value;
  }
}

template <typename E>
void run(const PadLaunch& g, const void* self, void* out, const void* value, int64_t numel,
         cudaStream_t stream) {
  pad_kernel<E><<<blocks_for(numel), kThreads, 0, stream>>>(
      g, static_cast<const E*>(self), static_cast<E*>(out), static_cast<const E*>(value), numel);
}

}  // namespace

void launch_pad(const PadLaunch& geometry, size_t item_size, const void* self, void* out,
                const void* value, int64_t numel, cudaStream_t stream) {
  AOTISHIM_CHECK(geometry.ndim >= 0 && geometry.ndim <= kMaxCopyDims, "cuda pad: up to ",
                 kMaxCopyDims, " dimensions");
  AOTISHIM_CHECK(geometry.mode != DevicePad::Constant || value != nullptr,
                 "cuda pad: constant mode without a value");
  if (numel == 0) return;
  discard_earlier_error();
  switch (item_size) {
    case 1: run<uint8_t>(geometry, self, out, value, numel, stream); break;
    case 2: run<uint16_t>(geometry, self, out, value, numel, stream); break;
    case 4: run<uint32_t>(geometry, self, out, value, numel, stream); break;
    case 8: run<uint64_t>(geometry, self, out, value, numel, stream); break;
    case 16: run<Bytes16>(geometry, self, out, value, numel, stream); break;
    default: fail(str("cuda pad: unsupported element size ", item_size));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
