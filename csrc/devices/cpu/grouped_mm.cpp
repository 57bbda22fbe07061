// _grouped_mm on the host: the offsets read and checked (non-decreasing,
// within the grouped dimension), out zeroed, then one gemm per group over
// views of the operands (the device's gemm kernel: BLAS, reduced types
// accumulated in float32).
#include <cstring>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "ops/gemm.h"
#include "ops/grouped_mm.h"

namespace aotishim {
namespace {

Tensor view3(const Tensor& base, std::vector<int64_t> sizes, std::vector<int64_t> strides,
             int64_t offset) {
  return make_view(base, std::move(sizes), std::move(strides), base.storage_offset + offset);
}

void run_gemm(Device& device, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0 || a.sizes[2] == 0) return;  // out is already zero
  GemmArgs g;
  g.out = out;
  g.a = a;
  g.b = b;
  ops::gemm.run(device, g);
}

void host_grouped_mm(const GroupedMmArgs& x) {
  Device& device = x.out.device();
  std::memset(x.out.data(), 0, x.out.extent_bytes());
  const Tensor &a = x.a, &b = x.b, &out = x.out;
  if (!x.has_offs) {
    run_gemm(device, out, a, b);
    return;
  }
  const bool a3 = a.dim() == 3, b3 = b.dim() == 3;
  // The grouped dimension: a's rows (2-D x 3-D), b's columns (3-D x 2-D) or K (2-D x 2-D).
  const int64_t extent = b3 ? a.sizes[0] : a3 ? b.sizes[1] : a.sizes[1];
  const int64_t groups = x.offs.sizes[0];
  const int32_t* offs = reinterpret_cast<const int32_t*>(x.offs.data());
  std::vector<int64_t> ends(static_cast<size_t>(groups));
  int64_t prev = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t e = offs[g * x.offs.strides[0]];
    AOTISHIM_CHECK(e >= prev && e <= extent, "_grouped_mm: offs must be non-decreasing and at "
                   "most ", extent, " (the grouped dimension's size), got ", e, " at index ", g);
    ends[static_cast<size_t>(g)] = prev = e;
  }
  const int64_t row = out.strides[out.dim() - 2];
  const int64_t N = b.sizes[b.dim() - 1];
  int64_t start = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t end = ends[static_cast<size_t>(g)], len = end - start;
    if (b3) {  // 2-D a, 3-D b: rows of a
      const int64_t K = a.sizes[1];
      run_gemm(device, view3(out, {1, len, N}, {0, row, 1}, start * row),
               view3(a, {1, len, K}, {0, a.strides[0], a.strides[1]}, start * a.strides[0]),
               view3(b, {1, K, N}, {0, b.strides[1], b.strides[2]}, g * b.strides[0]));
    } else if (a3) {  // 3-D a, 2-D b: columns of b
      const int64_t M = a.sizes[1], K = a.sizes[2];
      run_gemm(device, view3(out, {1, M, len}, {0, row, 1}, start),
               view3(a, {1, M, K}, {0, a.strides[1], a.strides[2]}, g * a.strides[0]),
               view3(b, {1, K, len}, {0, b.strides[0], b.strides[1]}, start * b.strides[1]));
    } else {  // 2-D x 2-D: a slice of K per group
      const int64_t M = a.sizes[0];
      run_gemm(device, view3(out, {1, M, N}, {0, row, 1}, g * out.strides[0]),
               view3(a, {1, M, len}, {0, a.strides[0], a.strides[1]}, start * a.strides[1]),
               view3(b, {1, len, N}, {0, b.strides[0], b.strides[1]}, start * b.strides[0]));
    }
    start = end;
  }
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::grouped_mm_kernel, DeviceType::CPU, host_grouped_mm);

}  // namespace aotishim
