// _grouped_mm on cuda: one cuBLAS GEMM per group (cuda_gemm: cuBLASLt, or
// cublasGemmStridedBatchedEx) over views of the operands, as torch cuda's
// fallback runs float32 and float16 (mm per group; bfloat16 goes through its
// own grouped kernel there, also accumulating in float32). The offsets are
// read back to the host once per call (a synchronisation, as torch's
// fallback reads them), checked (non-decreasing, within the grouped
// dimension) and then cut the groups. Rows (3-D x 2-D: columns) past the
// last offset are left unwritten, as torch cuda leaves them; an empty group
// of a 2-D x 2-D product is zero (a product with no terms).
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "ops/gemm.h"
#include "ops/grouped_mm.h"

namespace aotishim {
namespace cuda {

namespace {

Tensor view3(const Tensor& base, std::vector<int64_t> sizes, std::vector<int64_t> strides,
             int64_t offset) {
  return make_view(base, std::move(sizes), std::move(strides), base.storage_offset + offset);
}

void run_gemm(CudaDevice& device, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  GemmArgs g;
  g.out = out;
  g.a = a;
  g.b = b;
  cuda_gemm(device, g);  // K == 0 writes zeros
}

// The group ends, read back and checked.
std::vector<int64_t> group_ends(CudaDevice& device, const Tensor& offs, int64_t extent) {
  const int64_t groups = offs.sizes[0];
  std::vector<int32_t> host(static_cast<size_t>(groups));
  if (groups > 0) {
    Tensor packed = offs;
    if (offs.strides[0] != 1) {
      packed = make_empty(device, DType::Int32, offs.sizes);
      device.copy(packed, offs);
    }
    device.download(host.data(), packed);
  }
  std::vector<int64_t> ends(static_cast<size_t>(groups));
  int64_t prev = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t e = host[static_cast<size_t>(g)];
    AOTISHIM_CHECK(e >= prev && e <= extent, "_grouped_mm: offs must be non-decreasing and at "
                   "most ", extent, " (the grouped dimension's size), got ", e, " at index ", g);
    ends[static_cast<size_t>(g)] = prev = e;
  }
  return ends;
}

void grouped_mm(const GroupedMmArgs& x) {
  CudaDevice& device = static_cast<CudaDevice&>(x.out.device());
  DeviceScope on(device.index());
  const Tensor &a = x.a, &b = x.b, &out = x.out;
  // torch cuda's check (its grouped kernel loads operands by TMA).
  for (const Tensor* t : {&a, &b})
    AOTISHIM_CHECK(reinterpret_cast<uintptr_t>(t->data()) % 16 == 0,
                   "expected data_ptr to be aligned to 16 bytes");
  if (!x.has_offs) {  // 3-D x 3-D: one batched product
    run_gemm(device, out, a, b);
    return;
  }
  const bool a3 = a.dim() == 3, b3 = b.dim() == 3;
  // The grouped dimension: a's rows (2-D x 3-D), b's columns (3-D x 2-D) or K (2-D x 2-D).
  const int64_t extent = b3 ? a.sizes[0] : a3 ? b.sizes[1] : a.sizes[1];
  const std::vector<int64_t> ends = group_ends(device, x.offs, extent);
  const int64_t row = out.strides[out.dim() - 2];
  const int64_t N = b.sizes[b.dim() - 1];
  int64_t start = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    const int64_t end = ends[g], len = end - start, gi = static_cast<int64_t>(g);
    if (b3) {  // 2-D a, 3-D b: rows of a
      const int64_t K = a.sizes[1];
      run_gemm(device, view3(out, {1, len, N}, {0, row, 1}, start * row),
               view3(a, {1, len, K}, {0, a.strides[0], a.strides[1]}, start * a.strides[0]),
               view3(b, {1, K, N}, {0, b.strides[1], b.strides[2]}, gi * b.strides[0]));
    } else if (a3) {  // 3-D a, 2-D b: columns of b
      const int64_t M = a.sizes[1], K = a.sizes[2];
      run_gemm(device, view3(out, {1, M, len}, {0, row, 1}, start),
               view3(a, {1, M, K}, {0, a.strides[1], a.strides[2]}, gi * a.strides[0]),
               view3(b, {1, K, len}, {0, b.strides[0], b.strides[1]}, start * b.strides[1]));
    } else {  // 2-D x 2-D: a slice of K per group
      const int64_t M = a.sizes[0];
      run_gemm(device, view3(out, {1, M, N}, {0, row, 1}, gi * out.strides[0]),
               view3(a, {1, M, len}, {0, a.strides[0], a.strides[1]}, start * a.strides[1]),
               view3(b, {1, len, N}, {0, b.strides[0], b.strides[1]}, start * b.strides[0]));
    }
    start = end;
  }
}

AOTISHIM_REGISTER_KERNEL(ops::grouped_mm_kernel, DeviceType::CUDA, grouped_mm);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
