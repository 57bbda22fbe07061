#include "devices/mps/kernels/sources.h"

namespace aotishim::mps {

std::string library_source() {
  std::string source = kernel_params_source();
  source += copy_gemm_source();
  source += conv_source();
  source += sdpa_source();
  return source;
}

}  // namespace aotishim::mps
