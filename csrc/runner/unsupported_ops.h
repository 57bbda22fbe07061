// Fallback ops aotishim declines to provide, each with the reason. A model
// whose library needs one is refused at load, and the refusal names the op
// and says why (instead of only listing a missing symbol).
#pragma once

#include <string>

namespace aotishim::runner {

// The reason op `shim` (an aoti_torch_<device>_<op> symbol) is not
// supported, or nullptr when it is not one of the declined ops.
const char* unsupported_reason(const std::string& shim);

}  // namespace aotishim::runner
