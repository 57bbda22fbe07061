// Element types, numbered as c10::ScalarType (generated code hard-codes them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "aotishim/export.h"

namespace aotishim {

// The dtypes a tensor may have. Torch numbers more (complex32, the float8
// and float4 formats): aoti_torch_dtype_* returns their numbers and
// aoti_torch_dtype_element_size their sizes, but tensors of them are refused.
enum class DType : int32_t {
  UInt8 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  Float16 = 5,
  Float32 = 6,
  Float64 = 7,
  Complex64 = 9,    // c10::ComplexFloat: (real, imag) float32 pairs
  Complex128 = 10,  // c10::ComplexDouble: (real, imag) float64 pairs
  Bool = 11,
  BFloat16 = 15,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
};

// c10::ScalarType numbers of the dtypes torch's shim.h names that tensors
// here cannot have.
namespace torch_dtype {
constexpr int32_t kComplex32 = 8;
constexpr int32_t kFloat8_e5m2 = 23;
constexpr int32_t kFloat8_e4m3fn = 24;
constexpr int32_t kFloat8_e5m2fnuz = 25;
constexpr int32_t kFloat8_e4m3fnuz = 26;
constexpr int32_t kFloat8_e8m0fnu = 44;
constexpr int32_t kFloat4_e2m1fn_x2 = 45;
}  // namespace torch_dtype

// Throws aotishim::Error naming the value if it is not a supported dtype.
DType dtype_from_int(int32_t value);
bool is_supported_dtype(int32_t value);
// Bytes per element of any dtype torch's shim.h names (0 for other numbers).
size_t torch_element_size(int32_t value);
AOTISHIM_API size_t element_size(DType dtype);
AOTISHIM_API const char* dtype_name(DType dtype);
bool is_floating(DType dtype);  // real floating point (not complex)
bool is_complex(DType dtype);
bool is_unsigned(DType dtype);  // uint8..uint64 (not bool)
// The real type of a complex dtype's parts (complex64 -> float32); `dtype` itself otherwise.
DType complex_part(DType dtype);

}  // namespace aotishim
