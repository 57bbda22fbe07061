// GemmArgs on cuBLAS. cuBLAS is column-major; a row-major view is the
// column-major transpose, so each operand is described as (op, leading
// dimension) over its memory as it lies, strides and offset included. Only a
// view with no unit stride (or an overlapping one) is packed first, on the
// stream. bfloat16 and float16 compute in float32.
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "core/shim_profile.h"
#include "core/strided.h"
#include "core/tensor.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_stream.h"
#include "ops/gemm.h"

namespace aotishim {
namespace cuda {

namespace {

// op(stored column-major matrix with leading dimension ld) == the view.
struct Layout {
  bool ok = false;
  int op = cublas::kOpN;
  int64_t ld = 1;
};

Layout layout_of(const Tensor& t) {
  const MatrixView v = column_major_view(t.sizes[1], t.sizes[2], t.strides[1], t.strides[2]);
  return {v.ok, v.transposed ? cublas::kOpT : cublas::kOpN, v.ld};
}

int flip(int op) { return op == cublas::kOpN ? cublas::kOpT : cublas::kOpN; }

cudaDataType data_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return CUDA_R_32F;
    case DType::Float64: return CUDA_R_64F;
    case DType::Float16: return CUDA_R_16F;
    case DType::BFloat16: return CUDA_R_16BF;
    default: break;
  }
  fail(str("cuda matrix products support float32, float64, float16 and bfloat16, not ",
           dtype_name(dtype)));
}

int to_int(int64_t v, const char* what) {
  AOTISHIM_CHECK(v >= 0 && v <= INT_MAX, "cuda matrix product: ", what, " ", v,
                 " exceeds cuBLAS's 32-bit limit");
  return static_cast<int>(v);
}

// cuBLASLt's workspace: what its faster algorithms for large products
// (split reductions) ask for on current GPUs.
constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;

Tensor packed_copy(CudaDevice& device, const Tensor& t) {
  Tensor p = make_empty(device, t.dtype, t.sizes);
  device.copy(p, t);
  return p;
}

// out = beta * out + alpha * a @ b (+ row_bias, beta then 0) with every
// operand in a cuBLAS layout: through a cuBLASLt plan when there is one,
// else cublasGemmStridedBatchedEx.
void run_cublas(CudaDevice& device, const Tensor& out, const Tensor& a, const Tensor& b,
                Layout lo, Layout la, Layout lb, double alpha, double beta,
                const Tensor* row_bias) {
  const int64_t batch = out.sizes[0], m = out.sizes[1], n = out.sizes[2], k = a.sizes[2];
  cudaDataType type = data_type(out.dtype);
  bool wide = out.dtype == DType::Float64;
  double alpha_d = alpha, beta_d = beta;
  float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = wide ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta_p = wide ? static_cast<const void*>(&beta_d) : &beta_f;
  int compute = wide ? cublas::kCompute64F : cublas::kCompute32F;
  auto batch_stride = [&](const Tensor& t) -> long long { return batch > 1 ? t.strides[0] : 0; };

  // Column-major C is either out itself (op N) or out's transpose (op T).
  // For out^T = b^T a^T the operands swap and each op flips.
  const Tensor* first = &a;
  const Tensor* second = &b;
  Layout l1 = la, l2 = lb;
  int64_t rows = m, cols = n;
  if (lo.op == cublas::kOpT) {
    first = &b;
    second = &a;
    l1 = {true, flip(lb.op), lb.ld};
    l2 = {true, flip(la.op), la.ld};
    rows = n;
    cols = m;
  }
  const cublas::Api& api = cublas::api();
  cudaStream_t s = device.stream();
  std::lock_guard<std::mutex> lock(device.cublas_mutex());

  const auto lt = [&](const void* bias, const void* beta_ptr) {
    if (!use_cublaslt()) return false;
    // cuBLASLt strides batches on its own; a broadcast (stride 0) batch is
    // left to cublasGemmStridedBatchedEx, which documents it.
    if (batch > 1 && (first->strides[0] == 0 || second->strides[0] == 0)) return false;
    const LtProblem p{type, compute, wide ? CUDA_R_64F : CUDA_R_32F, l1.op, l2.op,
                      rows, cols, k, l1.ld, l2.ld, lo.ld,
                      batch, batch_stride(*first), batch_stride(*second), batch_stride(out),
                      first->data(), second->data(), out.data(), bias};
    CudaDevice::ScratchLease workspace = device.scratch(s, kLtWorkspaceBytes);
    const size_t workspace_size = workspace.data != nullptr ? kLtWorkspaceBytes : 0;
    if (!device.lt_plans().run(api, p, alpha_p, beta_p, workspace.data, workspace_size, s)) {
      return false;
    }
    device.count_command();
    return true;
  };
  if (row_bias != nullptr) {
    // cuBLASLt adds a bias along the rows of column-major D: out's columns
    // when D is out's transpose (out row-major), the usual case.
    if (lo.op == cublas::kOpT && batch == 1 && lt(row_bias->data(), beta_p)) return;
    device.copy(out, *row_bias);
    beta_d = 1.0;
    beta_f = 1.0f;
  }
  if (lt(nullptr, beta_p)) return;
  cublas::Handle h = device.cublas_handle(s);
  cublas::Status st = api.gemm_strided_batched_ex(
      h, l1.op, l2.op, to_int(rows, "rows"), to_int(cols, "columns"), to_int(k, "inner size"),
      alpha_p, first->data(), type, to_int(l1.ld, "leading dimension"), batch_stride(*first),
      second->data(), type, to_int(l2.ld, "leading dimension"), batch_stride(*second), beta_p,
      out.data(), type, to_int(lo.ld, "leading dimension"), batch_stride(out),
      to_int(batch, "batch"), compute, cublas::kGemmDefault);
  AOTISHIM_CHECK(st == cublas::kStatusSuccess, "cublasGemmStridedBatchedEx failed on ",
                 device.name(), ": ", cublas::status_text(st), " (", dtype_name(out.dtype), " ",
                 batch, "x", m, "x", n, "x", k, ")");
  device.count_command();
}

}  // namespace

void cuda_gemm(CudaDevice& device, const GemmArgs& args) {
  const Tensor& out = args.out;
  AOTISHIM_CHECK(out.dim() == 3 && args.a.dim() == 3 && args.b.dim() == 3,
                 "cuda gemm expects 3-D (batch, rows, cols) views");
  const int64_t batch = out.sizes[0], m = out.sizes[1], n = out.sizes[2], k = args.a.sizes[2];
  data_type(out.dtype);  // rejects unsupported dtypes before any work
  if (batch == 0 || m == 0 || n == 0) return;
  const Tensor* row_bias = args.row_bias ? &*args.row_bias : nullptr;
  if (k == 0) {  // an empty sum: out = beta * out, or the bias
    device.count_command();
    if (row_bias != nullptr) {
      device.copy(out, *row_bias);
    } else {
      launch_scale(view_of(out), out.sizes.data(), 3, args.beta, device.stream());
    }
    return;
  }
  Tensor a = args.a, b = args.b;
  Layout la = layout_of(a), lb = layout_of(b);
  if (!la.ok) {
    a = packed_copy(device, a);
    la = layout_of(a);
  }
  if (!lb.ok) {
    b = packed_copy(device, b);
    lb = layout_of(b);
  }
  // A batch stride that lets batches overlap is fine for inputs, not for out.
  Layout lo = layout_of(out);
  bool out_ok = lo.ok && (batch == 1 || out.strides[0] >= m * n);
  if (out_ok) {
    run_cublas(device, out, a, b, lo, la, lb, args.alpha, args.beta, row_bias);
    return;
  }
  Tensor tmp = make_empty(device, out.dtype, out.sizes);
  if (args.beta != 0.0) device.copy(tmp, out);
  run_cublas(device, tmp, a, b, layout_of(tmp), la, lb, args.alpha, args.beta, row_bias);
  device.copy(out, tmp);
}

bool use_cublaslt() {
  static const bool lt = [] {
    const char* v = std::getenv("AOTISHIM_CUBLAS_API");
    const bool legacy = v != nullptr && std::strcmp(v, "legacy") == 0;
    if (legacy) {
      log(LogLevel::Info, "cuda: AOTISHIM_CUBLAS_API=legacy: GEMMs use cublasGemmStridedBatchedEx");
    }
    return !legacy;
  }();
  return lt;
}

namespace {
void gemm_kernel(const GemmArgs& args) {
  ShimTimer timed("matrix product: the cuda kernel");  // AOTISHIM_PROFILE_SHIMS=1
  CudaDevice& device = static_cast<CudaDevice&>(args.out.device());
  DeviceScope on(device.index());
  cuda_gemm(device, args);
}
AOTISHIM_REGISTER_KERNEL(ops::gemm, DeviceType::CUDA, gemm_kernel);
}  // namespace

}  // namespace cuda
}  // namespace aotishim
