// Constant-returning shims, grad mode and warnings.
#include <string>

#include "core/device_type.h"
#include "core/dtype.h"
#include "core/error.h"

using aotishim::DeviceType;
using aotishim::DType;

namespace {
thread_local bool t_grad_enabled = true;  // torch's default
constexpr int32_t kLayoutStrided = 0;
}  // namespace

extern "C" {

int32_t aoti_torch_device_type_cpu(void) { return static_cast<int32_t>(DeviceType::CPU); }
int32_t aoti_torch_device_type_cuda(void) { return static_cast<int32_t>(DeviceType::CUDA); }
int32_t aoti_torch_device_type_mps(void) { return static_cast<int32_t>(DeviceType::MPS); }
int32_t aoti_torch_device_type_privateuse1(void) { return static_cast<int32_t>(DeviceType::Sim); }

int32_t aoti_torch_dtype_float16(void) { return static_cast<int32_t>(DType::Float16); }
int32_t aoti_torch_dtype_bfloat16(void) { return static_cast<int32_t>(DType::BFloat16); }
int32_t aoti_torch_dtype_float32(void) { return static_cast<int32_t>(DType::Float32); }
int32_t aoti_torch_dtype_float64(void) { return static_cast<int32_t>(DType::Float64); }
int32_t aoti_torch_dtype_uint8(void) { return static_cast<int32_t>(DType::UInt8); }
int32_t aoti_torch_dtype_int8(void) { return static_cast<int32_t>(DType::Int8); }
int32_t aoti_torch_dtype_int16(void) { return static_cast<int32_t>(DType::Int16); }
int32_t aoti_torch_dtype_int32(void) { return static_cast<int32_t>(DType::Int32); }
int32_t aoti_torch_dtype_int64(void) { return static_cast<int32_t>(DType::Int64); }
int32_t aoti_torch_dtype_bool(void) { return static_cast<int32_t>(DType::Bool); }
int32_t aoti_torch_dtype_uint16(void) { return static_cast<int32_t>(DType::UInt16); }
int32_t aoti_torch_dtype_uint32(void) { return static_cast<int32_t>(DType::UInt32); }
int32_t aoti_torch_dtype_uint64(void) { return static_cast<int32_t>(DType::UInt64); }
int32_t aoti_torch_dtype_complex64(void) { return static_cast<int32_t>(DType::Complex64); }
int32_t aoti_torch_dtype_complex128(void) { return static_cast<int32_t>(DType::Complex128); }
// Numbered as torch numbers them, so generated code's checks compare right,
// though tensors of these dtypes are refused.
int32_t aoti_torch_dtype_complex32(void) { return aotishim::torch_dtype::kComplex32; }
int32_t aoti_torch_dtype_float8_e5m2(void) { return aotishim::torch_dtype::kFloat8_e5m2; }
int32_t aoti_torch_dtype_float8_e4m3fn(void) { return aotishim::torch_dtype::kFloat8_e4m3fn; }
int32_t aoti_torch_dtype_float8_e5m2fnuz(void) { return aotishim::torch_dtype::kFloat8_e5m2fnuz; }
int32_t aoti_torch_dtype_float8_e4m3fnuz(void) { return aotishim::torch_dtype::kFloat8_e4m3fnuz; }
int32_t aoti_torch_dtype_float8_e8m0fnu(void) { return aotishim::torch_dtype::kFloat8_e8m0fnu; }
int32_t aoti_torch_dtype_float4_e2m1fn_x2(void) { return aotishim::torch_dtype::kFloat4_e2m1fn_x2; }

size_t aoti_torch_dtype_element_size(int32_t dtype) {
  // The ABI has no error channel here: unknown dtypes report size 0.
  const size_t size = aotishim::torch_element_size(dtype);
  if (size == 0)
    aotishim::set_last_error(aotishim::str("aoti_torch_dtype_element_size: unsupported dtype ", dtype));
  return size;
}

int32_t aoti_torch_layout_strided(void) { return kLayoutStrided; }

uint64_t aoti_torch_abi_version(void) { return AOTISHIM_TORCH_ABI_VERSION; }

bool aoti_torch_grad_mode_is_enabled(void) { return t_grad_enabled; }
void aoti_torch_grad_mode_set_enabled(bool enabled) { t_grad_enabled = enabled; }

void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  aotishim::log(aotishim::LogLevel::Warn,
                aotishim::str(func ? func : "?", " (", file ? file : "?", ":", line,
                              "): ", msg ? msg : ""));
}

}  // extern "C"
