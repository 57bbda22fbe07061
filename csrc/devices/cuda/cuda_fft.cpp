// The FFTs on cuda over cuFFT (loaded at run time, cufft_api.h), as 1-D
// transforms one dimension at a time: each stage packs its input with the
// transformed dimension last, runs one batched 1-D plan on the current stream,
// and copies the result into the stage's output through its strides.
//   C2C: a c2c stage per dimension (separable: the product of 1-D transforms).
//   R2C: an r2c stage along the last dimension (onesided), then c2c stages.
//   C2R: one c2r stage (cuFFT's, as torch cuda's).
// Complex tensors move as (real, imaginary) pairs of their part type, so
// complex128 copies need no 16-byte element copies. Plans are made once per
// (device, type, length, batch) and kept for the process; each execution
// gets its own work area, stream-ordered like every other allocation here, so
// streams sharing a plan never share its scratch.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/cufft_api.h"
#include "ops/fft.h"

namespace aotishim {
namespace cuda {

namespace {

void check(cufft::Result r, const char* what) {
  if (r != cufft::kSuccess) fail(cufft::error_text(r, what));
}

struct Plan {
  cufft::Handle handle = 0;
  size_t work = 0;
};

using PlanKey = std::tuple<int32_t, cufft::Type, int64_t, int64_t>;  // device, type, n, batch

std::mutex& plan_mutex() {
  static std::mutex m;
  return m;
}

// Callers hold plan_mutex(). Never destroyed: recorded graphs may use them.
Plan& plan_for(int32_t device, cufft::Type type, int64_t n, int64_t batch) {
  static auto* plans = new std::map<PlanKey, Plan>();
  const PlanKey key{device, type, n, batch};
  auto it = plans->find(key);
  if (it != plans->end()) return it->second;
  const cufft::Api& api = cufft::api();
  Plan p;
  check(api.create(&p.handle), "cufftCreate");
  check(api.set_auto_allocation(p.handle, 0), "cufftSetAutoAllocation");
  long long len = n;
  const cufft::Result made = api.make_plan_many64(p.handle, 1, &len, nullptr, 1, 0, nullptr, 1,
                                                  0, type, batch, &p.work);
  if (made != cufft::kSuccess) {
    api.destroy(p.handle);
    fail(str(cufft::error_text(made, "cufftMakePlanMany64"), " (length ", n, ", batch ", batch,
             ")"));
  }
  return plans->emplace(key, p).first->second;
}

// t with dimension d moved last (a view).
Tensor dim_last(const Tensor& t, int64_t d) {
  std::vector<int64_t> sizes, strides;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i == d) continue;
    sizes.push_back(t.sizes[i]);
    strides.push_back(t.strides[i]);
  }
  sizes.push_back(t.sizes[d]);
  strides.push_back(t.strides[d]);
  return make_view(t, sizes, strides, t.storage_offset);
}

// A complex tensor as its (real, imaginary) parts: one more dimension of 2.
Tensor as_pairs(const Tensor& t) {
  if (t.dtype != DType::Complex64 && t.dtype != DType::Complex128) return t;
  Tensor v = t;
  v.dtype = t.dtype == DType::Complex128 ? DType::Float64 : DType::Float32;
  v.storage_offset *= 2;
  for (int64_t& s : v.strides) s *= 2;
  v.sizes.push_back(2);
  v.strides.push_back(1);
  return v;
}

enum class Stage { C2C, R2C, C2R };

// dst = the 1-D transform of src along dimension d (sizes as the stage
// needs: R2C halves it, C2R makes it whole). src and dst may be one tensor.
void transform(CudaDevice& device, Stage stage, const Tensor& src, const Tensor& dst, int64_t d,
               bool forward) {
  const bool dbl = src.dtype == DType::Float64 || src.dtype == DType::Complex128;
  const Tensor from = dim_last(src, d), to = dim_last(dst, d);
  const int64_t n = stage == Stage::C2R ? dst.sizes[d] : src.sizes[d];
  if (from.numel() == 0 || n == 0) return;
  const int64_t batch = from.numel() / from.sizes.back();
  Tensor packed = make_empty(device, src.dtype, from.sizes);
  device.copy(as_pairs(packed), as_pairs(from));
  Tensor result = make_empty(device, dst.dtype, to.sizes);
  const cudaStream_t stream = device.stream();
  const cufft::Type type = stage == Stage::C2C ? (dbl ? cufft::kZ2Z : cufft::kC2C)
                           : stage == Stage::R2C ? (dbl ? cufft::kD2Z : cufft::kR2C)
                                                 : (dbl ? cufft::kZ2D : cufft::kC2R);
  {
    std::lock_guard<std::mutex> lock(plan_mutex());
    Plan& plan = plan_for(device.index(), type, n, batch);
    Tensor work;
    if (plan.work > 0) work = make_empty(device, DType::UInt8, {static_cast<int64_t>(plan.work)});
    const cufft::Api& api = cufft::api();
    check(api.set_work_area(plan.handle, plan.work > 0 ? work.data() : nullptr),
          "cufftSetWorkArea");
    check(api.set_stream(plan.handle, stream), "cufftSetStream");
    void* in = packed.data();
    void* out = result.data();
    const int direction = forward ? cufft::kForward : cufft::kInverse;
    device.count_command();
    switch (type) {
      case cufft::kC2C: check(api.exec_c2c(plan.handle, in, out, direction), "cufftExecC2C"); break;
      case cufft::kZ2Z: check(api.exec_z2z(plan.handle, in, out, direction), "cufftExecZ2Z"); break;
      case cufft::kR2C: check(api.exec_r2c(plan.handle, in, out), "cufftExecR2C"); break;
      case cufft::kD2Z: check(api.exec_d2z(plan.handle, in, out), "cufftExecD2Z"); break;
      case cufft::kC2R: check(api.exec_c2r(plan.handle, in, out), "cufftExecC2R"); break;
      default: check(api.exec_z2d(plan.handle, in, out), "cufftExecZ2D"); break;
    }
    // work is released here, stream-ordered after the transform.
  }
  device.copy(as_pairs(to), as_pairs(result));
}

void fft(const FftArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  AOTISHIM_CHECK(a.out.dim() <= kMaxCopyDims, "cuda FFT: up to ", kMaxCopyDims - 1,
                 " dimensions");
  std::vector<int64_t> c2c_dims = a.dims;
  Tensor current = a.in;
  if (a.kind == FftKind::C2R) {
    AOTISHIM_CHECK(a.dims.size() == 1, "cuda FFT: a c2r transform takes one dimension");
    transform(device, Stage::C2R, a.in, a.out, a.dims[0], false);
    c2c_dims.clear();
    current = a.out;
  } else if (a.kind == FftKind::R2C) {
    transform(device, Stage::R2C, a.in, a.out, a.dims.back(), true);
    c2c_dims.pop_back();
    current = a.out;
  }
  for (int64_t d : c2c_dims) {
    transform(device, Stage::C2C, current, a.out, d, a.forward);
    current = a.out;
  }
  if (a.scale != 1.0) {
    const Tensor parts = as_pairs(a.out);
    launch_scale(view_of(parts), parts.sizes.data(), static_cast<int>(parts.dim()), a.scale,
                 device.stream());
  }
}

AOTISHIM_REGISTER_KERNEL(ops::fft_kernel, DeviceType::CUDA, fft);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
