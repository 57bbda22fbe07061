// Convolution on cuda through cuDNN (loaded at run time, cudnn_loader.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace aotishim {
namespace cuda {

class CudaDevice;

// A validated convolution (1, 2 or 3 spatial dims), as torch's
// aten::convolution takes it. Views as they lie; out is written.
struct CudnnConv {
  Tensor out;     // (N, Cout, *out_spatial)
  Tensor input;   // (N, Cin, *spatial)
  Tensor weight;  // (Cout, Cin / groups, *kernel), transposed: (Cin, Cout / groups, *kernel)
  const Tensor* bias = nullptr;  // (Cout,) or null
  std::vector<int64_t> stride, padding, dilation;  // one per spatial dim
  bool transposed = false;  // output_padding only sizes out, so it is not needed here
  int64_t groups = 1;
};

void cudnn_convolution(CudaDevice& device, const CudnnConv& conv);

}  // namespace cuda
}  // namespace aotishim
