// The exception aotishim's C++ API throws; its message is the shim's message.
#pragma once

#include <stdexcept>

#include "aotishim/export.h"

namespace aotishim {

class AOTISHIM_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace aotishim
