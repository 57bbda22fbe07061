// Matrix products on mps: MPSMatrixMultiplication where the device has MPS
// and the operands' layout is one MPSMatrix can describe (rows of
// unit-stride elements, possibly the transpose of what is stored), else our
// strided GEMM kernel (kernels/copy_gemm.metal), which takes any strides.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/strided.h"
#include "devices/mps/mps_device.h"
#include "devices/mps/mps_kernels.h"

namespace aotishim {
namespace {

bool gemm_kernel_forced() {
  // AOTISHIM_MPS_GEMM=kernel runs every GEMM through our own kernel (tests
  // compare it with the MPSMatrixMultiplication path).
  const char* v = std::getenv("AOTISHIM_MPS_GEMM");
  return v != nullptr && std::strcmp(v, "kernel") == 0;
}

// How MPSMatrix sees one (B, R, C) operand.
struct MatrixLayout {
  bool ok = false;
  bool transposed = false;
  metal::Matrix matrix;
};

MatrixLayout matrix_layout(const Tensor& t) {
  MatrixLayout l;
  const int64_t B = t.sizes[0], R = t.sizes[1], C = t.sizes[2];
  const int64_t sb = t.strides[0];
  const MatrixView v = row_major_view(R, C, t.strides[1], t.strides[2]);
  if (!v.ok) return l;
  l.transposed = v.transposed;
  const int64_t rows = v.transposed ? C : R;
  l.matrix.rows = static_cast<uint64_t>(rows);
  l.matrix.cols = static_cast<uint64_t>(v.transposed ? R : C);
  const int64_t ld = v.ld;
  if (B > 1 && (ld == 0 || sb % ld != 0 || sb < rows * ld)) return l;
  l.matrix.row_bytes = static_cast<uint64_t>(ld) * t.itemsize();
  l.matrix.matrix_bytes = static_cast<uint64_t>(B > 1 ? sb : rows * ld) * t.itemsize();
  l.ok = true;
  return l;
}

bool encode_mps_gemm(MpsDevice& dev, MpsDevice::Encoder& e, const GemmArgs& args) {
  if (!dev.metal().supports_mps()) return false;
  if (args.out.dtype != DType::Float32 && args.out.dtype != DType::Float16) return false;
  const Tensor &out = args.out, &a = args.a, &b = args.b;
  const int64_t B = out.sizes[0], M = out.sizes[1], N = out.sizes[2], K = a.sizes[2];
  if (K == 0) return false;
  MatrixLayout lo = matrix_layout(out), la = matrix_layout(a), lb = matrix_layout(b);
  if (!lo.ok || lo.transposed || !la.ok || !lb.ok) return false;
  // Where whole padded rows (or matrices) from the view's offset would run
  // past the buffer, as for a narrow view at its end, the strided kernel
  // does it: MPS need not read only the bytes a view reaches.
  auto fits = [&](const Tensor& t, const MatrixLayout& l) {
    MpsDevice::Binding bd = e.bind(t, "gemm operand");
    return bd.offset + static_cast<size_t>(B) * l.matrix.matrix_bytes <= bd.buffer->length();
  };
  if (!fits(out, lo) || !fits(a, la) || !fits(b, lb)) return false;
  // With beta == 0 out must not be read (it may hold NaN): zero it first, so
  // the result does not depend on whether the kernel reads it.
  if (args.beta == 0.0) dev.encode_zero(e, out);
  metal::MatrixProduct p;
  p.left = la.matrix;
  p.right = lb.matrix;
  p.result = lo.matrix;
  p.transpose_left = la.transposed;
  p.transpose_right = lb.transposed;
  p.m = static_cast<uint64_t>(M);
  p.n = static_cast<uint64_t>(N);
  p.k = static_cast<uint64_t>(K);
  p.batch = static_cast<uint64_t>(B);
  p.alpha = args.alpha;
  p.beta = args.beta;
  p.scalar = out.dtype == DType::Float32 ? metal::Scalar::Float32 : metal::Scalar::Float16;
  e.multiply(p, out, a, b);
  return true;
}

void encode_kernel_gemm(MpsDevice::Encoder& e, const GemmArgs& args) {
  const Tensor &out = args.out, &a = args.a, &b = args.b;
  mps::GemmParams p{};
  p.batch = out.sizes[0];
  p.m = out.sizes[1];
  p.n = out.sizes[2];
  p.k = a.sizes[2];
  for (int i = 0; i < 3; ++i) {
    p.out_strides[i] = out.strides[i];
    p.a_strides[i] = a.strides[i];
    p.b_strides[i] = b.strides[i];
  }
  p.alpha = static_cast<float>(args.alpha);
  p.beta = static_cast<float>(args.beta);
  e.set_kernel(out.dtype == DType::Float32   ? mps::kGemmFloat32
               : out.dtype == DType::Float16 ? mps::kGemmFloat16
                                             : mps::kGemmBFloat16);
  e.write(0, out, "out");
  e.read(1, a, "a");
  e.read(2, b, "b");
  e.bytes(3, &p, sizeof(p));
  const uint64_t n = static_cast<uint64_t>(p.n), m = static_cast<uint64_t>(p.m);
  const uint64_t width = std::min<uint64_t>(e.pipeline().execution_width(), n);
  const uint64_t height =
      std::max<uint64_t>(1, std::min<uint64_t>(e.pipeline().max_threads_per_group() / width, m));
  e.dispatch_threads({n, m, static_cast<uint64_t>(p.batch)}, {width, height, 1});
}

void mps_gemm(const GemmArgs& args) { static_cast<MpsDevice&>(args.out.device()).gemm(args); }

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::gemm, DeviceType::MPS, mps_gemm);

void MpsDevice::gemm(const GemmArgs& args) {
  const DType dtype = args.out.dtype;
  AOTISHIM_CHECK(dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16,
                 "mps: matrix products support float32, float16 and bfloat16, not ",
                 dtype_name(dtype), " (Metal has no float64)");
  AOTISHIM_CHECK(args.a.dtype == dtype && args.b.dtype == dtype, "mps: gemm operands differ in dtype");
  AOTISHIM_CHECK(args.out.dim() == 3 && args.a.dim() == 3 && args.b.dim() == 3,
                 "mps: gemm takes 3-D (batch, rows, cols) views");
  if (args.out.numel() == 0) return;
  encode([&](Encoder& e) {
    if (gemm_kernel_forced() || !encode_mps_gemm(*this, e, args)) encode_kernel_gemm(e, args);
  });
}

}  // namespace aotishim
