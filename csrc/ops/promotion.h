// torch's type promotion (ops/promotion.cpp): promote_types and result_type
// over tensors and a double scalar, as the pointwise ops and cat apply it.
#pragma once

#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace aotishim {
namespace ops {

enum class Category { Bool = 0, Integral = 1, Floating = 2, Complex = 3 };
Category category(DType t);

// uint16, uint32 and uint64: torch promotes them with floats only.
bool is_wide_unsigned(DType t);

// The dtype's name as torch's messages spell it ("Float", "Long").
const char* c10_name(DType t);

// torch.promote_types (throws for the unsigned pairs torch refuses).
DType promote(DType a, DType b);

// The result dtype of tensors and (at most one) double scalar, as torch's
// result_type: dimensioned tensors over 0-d ones over the scalar, which the
// ABI passes as a double (a float32-typed wrapped number).
DType result_type(const std::vector<const Tensor*>& tensors, bool with_scalar);

// result_type of tensors alone.
inline DType promoted_type(const std::vector<const Tensor*>& tensors) {
  return result_type(tensors, false);
}

}  // namespace ops
}  // namespace aotishim
