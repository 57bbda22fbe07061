// The host Metal's own C++ texts, embedded at build time (cmake/EmbedMsl.cmake)
// and compiled ahead of every library's translated source.
#pragma once

namespace aotishim::mps {

const char* host_kernel_abi_source();  // host/kernel_abi.h
const char* host_prelude_source();     // host/msl_prelude.h

}  // namespace aotishim::mps
