// aoti_torch_scalar_to_tensor_<dtype>: a 0-dimensional cpu tensor holding one
// number, as torch's at::scalar_tensor makes it. Generated code uses them to
// pass a number where an op (through the proxy executor) takes a tensor.
#include <cstring>

#include "aotishim/c_shim.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"

using namespace aotishim;

namespace {

template <typename T>
AOTITorchError scalar_tensor(const char* name, DType dtype, const T& value, AtenTensorHandle* ret) {
  return guard(name, [&] {
    require_out(ret, "ret_new_tensor");
    static_assert(std::is_trivially_copyable_v<T>);
    AOTISHIM_CHECK(sizeof(T) == element_size(dtype), "internal: ", dtype_name(dtype),
                   " holds ", element_size(dtype), " bytes, not ", sizeof(T));
    Tensor t = make_empty(get_device(DeviceType::CPU, 0), dtype, {}, {});
    std::memcpy(t.data(), &value, sizeof(T));
    *ret = register_tensor(std::move(t));
  });
}

}  // namespace

extern "C" {

#define AOTISHIM_SCALAR_TO_TENSOR(suffix, ctype, dtype)                                   \
  AOTITorchError aoti_torch_scalar_to_tensor_##suffix(ctype value, AtenTensorHandle* ret) { \
    return scalar_tensor(__func__, dtype, value, ret);                                   \
  }
AOTISHIM_SCALAR_TO_TENSOR(float32, float, DType::Float32)
AOTISHIM_SCALAR_TO_TENSOR(float64, double, DType::Float64)
AOTISHIM_SCALAR_TO_TENSOR(uint8, uint8_t, DType::UInt8)
AOTISHIM_SCALAR_TO_TENSOR(uint16, uint16_t, DType::UInt16)
AOTISHIM_SCALAR_TO_TENSOR(uint32, uint32_t, DType::UInt32)
AOTISHIM_SCALAR_TO_TENSOR(uint64, uint64_t, DType::UInt64)
AOTISHIM_SCALAR_TO_TENSOR(int8, int8_t, DType::Int8)
AOTISHIM_SCALAR_TO_TENSOR(int16, int16_t, DType::Int16)
AOTISHIM_SCALAR_TO_TENSOR(int32, int32_t, DType::Int32)
AOTISHIM_SCALAR_TO_TENSOR(int64, int64_t, DType::Int64)
AOTISHIM_SCALAR_TO_TENSOR(bool, bool, DType::Bool)
AOTISHIM_SCALAR_TO_TENSOR(complex64, AOTIComplex64, DType::Complex64)
AOTISHIM_SCALAR_TO_TENSOR(complex128, AOTIComplex128, DType::Complex128)
#undef AOTISHIM_SCALAR_TO_TENSOR

}  // extern "C"
