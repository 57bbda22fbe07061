// The host Metal's source translator: reads the kernel signatures of a
// preprocessed MSL source (the [[kernel]] functions, their [[buffer(n)]],
// [[threadgroup(n)]] and thread-position parameters, template instances
// named by [[host_name]]) and rewrites it as C++ for msl_prelude.h: the
// attributes and `kernel` keywords removed, threadgroup variables made
// per-threadgroup storage, and one extern "C" entry per kernel appended with
// the table the runtime reads after loading the library.
#pragma once

#include <string>
#include <vector>

namespace aotishim::mps::host {

struct KernelParam {
  enum Kind { Buffer, Threadgroup, Position } kind;
  int index = -1;         // buffer/threadgroup index
  std::string type;       // as written, e.g. "device const float*"
  std::string name;
  std::string attribute;  // e.g. "buffer(2)", "thread_position_in_grid"
};

struct KernelSignature {
  std::string name;    // what newFunctionWithName finds
  std::string callee;  // the C++ function to call, e.g. "aotishim_gemm<float>"
  std::vector<KernelParam> params;
};

struct Translation {
  std::string source;  // C++, to compile after the prelude
  std::vector<KernelSignature> kernels;
};

// Throws with the offending declaration on a signature it cannot read.
Translation translate_msl(const std::string& preprocessed);

}  // namespace aotishim::mps::host
