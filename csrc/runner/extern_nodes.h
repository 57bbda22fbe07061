// The extern-kernel nodes of a model's package (`<model>.json` beside its
// `.so`: torch's serialized ExternKernelNodes): for each op the compiled code
// calls through the proxy executor, its target, its inputs as serialized and
// its outputs. Which inputs the generated code passes at run time (flattened
// ints and tensors) and which the node holds follows from each input's
// serialized kind, as in torch's own proxy executor.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "aotishim/custom_ops.h"

namespace aotishim::runner {

struct ExternInput {
  OpArg value;                // static values filled in; dynamic ones at call time
  size_t tensors = 0;         // flattened tensors it takes at run time
  size_t ints = 0;            // flattened ints it takes at run time
  std::vector<bool> present;  // OptionalTensorList: which items are tensors
};

struct ExternNode {
  std::string name;    // Inductor's buffer name ("buf3"), for messages
  std::string target;  // "mylib::myop", "aten::foo.out"
  bool custom_op = false;  // made with torch.library.custom_op
  std::vector<ExternInput> inputs;
  std::vector<OpReturn> returns;
  std::vector<OpOutput> outputs;  // one per tensor slot of `returns`
  size_t input_tensors = 0, input_ints = 0, output_ints = 0;
  // Why this node cannot run here ("" when it can): an argument or return
  // kind aotishim does not take. Reported at load, by op.
  std::string unsupported;
};

// Reads and validates the file (at most 64 MiB); a malformed one is an
// aotishim::Error naming the file and the node.
std::vector<ExternNode> read_extern_nodes(const std::string& path);

// The nodes file torch's runner pairs with `so_path`: the same path with
// ".json" for ".so".
std::string extern_nodes_path(const std::string& so_path);

}  // namespace aotishim::runner
