// The exception aotishim's C++ API throws; its message is the shim's message.
#pragma once

#include <stdexcept>

#include "aotishim/export.h"

namespace aotishim {

class AOTISHIM_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller's argument is wrong (a constant's name, dtype, shape or device),
// as opposed to a failure of the model or the runtime.
class AOTISHIM_API InputError : public Error {
 public:
  using Error::Error;
};

}  // namespace aotishim
