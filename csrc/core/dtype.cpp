#include "core/dtype.h"

#include "core/error.h"

namespace aotishim {

bool is_supported_dtype(int32_t value) {
  switch (value) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 11: case 15:
      return true;
    default:
      return false;
  }
}

DType dtype_from_int(int32_t value) {
  AOTISHIM_CHECK(is_supported_dtype(value), "unsupported dtype ", value,
                 " (supported: uint8=0, int8=1, int16=2, int32=3, int64=4, float16=5, "
                 "float32=6, float64=7, bool=11, bfloat16=15)");
  return static_cast<DType>(value);
}

size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::UInt8: case DType::Int8: case DType::Bool: return 1;
    case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::Float32: return 4;
    case DType::Int64: case DType::Float64: return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Bool: return "bool";
    case DType::BFloat16: return "bfloat16";
  }
  return "?";
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::Float32 || dtype == DType::Float64 ||
         dtype == DType::BFloat16;
}

}  // namespace aotishim
