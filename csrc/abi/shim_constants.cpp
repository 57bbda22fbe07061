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

size_t aoti_torch_dtype_element_size(int32_t dtype) {
  // The ABI has no error channel here: unknown dtypes report size 0.
  if (!aotishim::is_supported_dtype(dtype)) {
    aotishim::set_last_error(aotishim::str("aoti_torch_dtype_element_size: unsupported dtype ", dtype));
    return 0;
  }
  return aotishim::element_size(static_cast<DType>(dtype));
}

int32_t aoti_torch_layout_strided(void) { return kLayoutStrided; }

bool aoti_torch_grad_mode_is_enabled(void) { return t_grad_enabled; }
void aoti_torch_grad_mode_set_enabled(bool enabled) { t_grad_enabled = enabled; }

void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  aotishim::log(aotishim::LogLevel::Warn,
                aotishim::str(func ? func : "?", " (", file ? file : "?", ":", line,
                              "): ", msg ? msg : ""));
}

}  // extern "C"
