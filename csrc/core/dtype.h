// Element types, numbered as c10::ScalarType (generated code hard-codes them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "aotishim/export.h"

namespace aotishim {

enum class DType : int32_t {
  UInt8 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  Float16 = 5,
  Float32 = 6,
  Float64 = 7,
  Bool = 11,
  BFloat16 = 15,
};

// Throws aotishim::Error naming the value if it is not a supported dtype.
DType dtype_from_int(int32_t value);
bool is_supported_dtype(int32_t value);
AOTISHIM_API size_t element_size(DType dtype);
AOTISHIM_API const char* dtype_name(DType dtype);
bool is_floating(DType dtype);

}  // namespace aotishim
