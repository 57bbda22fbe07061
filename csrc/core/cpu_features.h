// What the host CPU can do, asked the way torch asks it where the answer
// changes a result's layout: torch's CPU convolution runs bfloat16/float16
// through oneDNN only where oneDNN takes that type on this CPU, and oneDNN's
// output is channels-last where the slow kernels' is contiguous. AOTInductor
// bakes the compiling machine's answer into the code it generates, so our
// convolution must give the layout torch gives on the machine it runs on.
#pragma once

#include "aotishim/export.h"

namespace aotishim {

// torch's mkldnn_bf16_device_check: x86 with AVX-512 F/BW/VL/DQ or with
// AVX-NE-CONVERT (oneDNN's avx2_vnni_2); arm with the BF16 extension.
AOTISHIM_API bool onednn_takes_bfloat16();
// torch's mkldnn_fp16_device_check: x86 with AVX512-FP16 or AVX-NE-CONVERT;
// never on arm.
AOTISHIM_API bool onednn_takes_float16();

}  // namespace aotishim
