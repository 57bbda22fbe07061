#include "core/dtype.h"

#include "core/error.h"

namespace aotishim {

bool is_supported_dtype(int32_t value) {
  switch (value) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 9: case 10: case 11:
    case 15: case 27: case 28: case 29:
      return true;
    default:
      return false;
  }
}

DType dtype_from_int(int32_t value) {
  AOTISHIM_CHECK(is_supported_dtype(value), "unsupported dtype ", value,
                 " (supported: uint8=0, int8=1, int16=2, int32=3, int64=4, float16=5, "
                 "float32=6, float64=7, complex64=9, complex128=10, bool=11, bfloat16=15, "
                 "uint16=27, uint32=28, uint64=29)");
  return static_cast<DType>(value);
}

size_t torch_element_size(int32_t value) {
  if (is_supported_dtype(value)) return element_size(static_cast<DType>(value));
  switch (value) {
    case torch_dtype::kComplex32: return 4;
    case torch_dtype::kFloat8_e5m2: case torch_dtype::kFloat8_e4m3fn:
    case torch_dtype::kFloat8_e5m2fnuz: case torch_dtype::kFloat8_e4m3fnuz:
    case torch_dtype::kFloat8_e8m0fnu:
    case torch_dtype::kFloat4_e2m1fn_x2:  // two 4-bit values per byte
      return 1;
    default:
      return 0;
  }
}

size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::UInt8: case DType::Int8: case DType::Bool: return 1;
    case DType::Int16: case DType::UInt16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::UInt32: case DType::Float32: return 4;
    case DType::Int64: case DType::UInt64: case DType::Float64: case DType::Complex64: return 8;
    case DType::Complex128: return 16;
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
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::Bool: return "bool";
    case DType::BFloat16: return "bfloat16";
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
  }
  return "?";
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::Float32 || dtype == DType::Float64 ||
         dtype == DType::BFloat16;
}

bool is_complex(DType dtype) { return dtype == DType::Complex64 || dtype == DType::Complex128; }

bool is_unsigned(DType dtype) {
  return dtype == DType::UInt8 || dtype == DType::UInt16 || dtype == DType::UInt32 ||
         dtype == DType::UInt64;
}

DType complex_part(DType dtype) {
  if (dtype == DType::Complex64) return DType::Float32;
  if (dtype == DType::Complex128) return DType::Float64;
  return dtype;
}

}  // namespace aotishim
