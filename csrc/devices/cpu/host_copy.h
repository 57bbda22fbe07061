// Strided element copy (with dtype conversion) between host memory views.
#pragma once

#include "core/tensor.h"

namespace aotishim {

// dst = src for tensors whose memory the host can address; same sizes.
void host_copy(const Tensor& dst, const Tensor& src);

// Raw form: copy `sizes` elements between strided host views.
void host_copy_raw(void* dst, DType dst_dtype, const int64_t* dst_strides, const void* src,
                   DType src_dtype, const int64_t* src_strides, const int64_t* sizes, int ndim);

}  // namespace aotishim
