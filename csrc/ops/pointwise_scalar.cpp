#include "ops/pointwise_scalar.h"

#include <cmath>

#include "core/copy.h"
#include "core/error.h"

namespace aotishim {
namespace ops {

// A 0-d tensor holding `value` converted to `dtype` (torch's cast of a scalar).
Tensor scalar_in_dtype(Device& device, double value, DType dtype) {
  Tensor host = make_empty(get_device(DeviceType::CPU), DType::Float64, {});
  *reinterpret_cast<double*>(host.data()) = value;
  Tensor out = make_empty(device, dtype, {});
  copy_tensor(out, host);
  return out;
}

// torch's checked conversion of a scalar: integers take only values within
// their range (no NaN), real floats any value but finite ones beyond their
// largest; bool and complex take everything.
void check_scalar_fits(double v, DType t) {
  double lo = 0, hi = 0;
  const char* name = "";
  switch (t) {
    case DType::UInt8: lo = 0; hi = 255; name = "uint8_t"; break;
    case DType::Int8: lo = -128; hi = 127; name = "int8_t"; break;
    case DType::Int16: lo = -32768; hi = 32767; name = "int16_t"; break;
    case DType::Int32: lo = -2147483648.0; hi = 2147483647.0; name = "int"; break;
    case DType::Int64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; name = "int64_t"; break;
    case DType::UInt16: lo = 0; hi = 65535; name = "uint16_t"; break;
    case DType::UInt32: lo = 0; hi = 4294967295.0; name = "uint32_t"; break;
    case DType::UInt64: lo = 0; hi = 18446744073709551615.0; name = "uint64_t"; break;
    case DType::Float16: lo = -65504; hi = 65504; name = "c10::Half"; break;
    case DType::BFloat16: lo = -3.3895313892515355e38; hi = 3.3895313892515355e38; name = "c10::BFloat16"; break;
    case DType::Float32: lo = -3.4028234663852886e38; hi = 3.4028234663852886e38; name = "float"; break;
    default: return;  // float64, bool, complex
  }
  const bool integral = !is_floating(t);
  const bool ok = integral ? (v >= lo && v <= hi) : (!std::isfinite(v) || (v >= lo && v <= hi));
  AOTISHIM_CHECK(ok, "value cannot be converted to type ", name, " without overflow");
}

}  // namespace ops
}  // namespace aotishim
