// ATen ops that generated code reaches through the proxy executor because
// torch's generated C shims have no entry for them (torch 2.13 sends
// aten::_fft_c2r, the op behind irfft and hfft, this way; torch 2.11's cuda
// code sends aten::grid_sampler_3d). Each runs the
// fallback op of aotishim's own table, so a model needs no registration for
// them; a custom op registered under the same name takes precedence.
#pragma once

#include <string>

#include "runner/custom_op_registry.h"

namespace aotishim::runner {

// The built-in implementation for a serialized target ("aten::_fft_c2r" or
// "aten::_fft_c2r.default"), or null.
CustomOpImpl find_aten_proxy_op(const std::string& target);

}  // namespace aotishim::runner
