// The custom-op implementations registered by name (aotishim/custom_ops.h).
// A model takes shared references to the ones it needs when it loads, so
// later registrations never change a loaded model.
#pragma once

#include <memory>
#include <string>

#include "aotishim/custom_ops.h"

namespace aotishim::runner {

using CustomOpImpl = std::shared_ptr<const CustomOpFn>;

// The implementation for a serialized target: its exact name, else (for
// "ns::op.overload") the bare "ns::op"; null when neither is registered.
CustomOpImpl find_custom_op(const std::string& target);

}  // namespace aotishim::runner
