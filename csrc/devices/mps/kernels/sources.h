// The mps device's Metal kernel library as source text: the same MSL for
// Apple's Metal (newLibraryWithSource) and the host Metal (clang as C++).
// The texts are the files beside this header, embedded at build time
// (cmake/EmbedMsl.cmake).
#pragma once

#include <string>

namespace aotishim::mps {

const char* kernel_params_source();  // params.h: the parameter structs
const char* copy_gemm_source();      // copy_gemm.metal
const char* conv_source();           // conv.metal
const char* sdpa_source();           // sdpa.metal

// The whole device library, params first: one compile on first use.
std::string library_source();

}  // namespace aotishim::mps
