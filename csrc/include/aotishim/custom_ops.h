// Implementations of the ops a compiled model calls through AOTInductor's
// proxy executor: custom ops (torch.library, TORCH_LIBRARY) and any other
// op Inductor has no C shim for. A model's package lists these calls (its
// extern-kernel nodes, `<model>.json` beside the `.so`); Model::load binds
// each to the implementation registered under its name and refuses the
// model, naming the op, when there is none.
//
//   aotishim::register_custom_op("mylib::scale", [](const aotishim::OpCall& call) {
//     AtenTensorHandle x = call.args[0].tensor;      // borrowed for the call
//     double alpha = call.args[1].float_value;
//     ...                                            // make the result tensor
//     return std::vector<AtenTensorHandle>{out};     // owned by aotishim from here
//   });
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/export.h"

namespace aotishim {

// One argument of a call, as the package serialized it (torch's schema order).
struct OpArg {
  enum class Kind {
    None,                // an optional argument left out
    Tensor,              // tensor
    TensorList,          // tensors
    OptionalTensorList,  // tensors, a null handle for each None
    Int,                 // int_value (also an int Scalar)
    IntList,             // ints
    Float,               // float_value (also a float Scalar)
    FloatList,           // floats
    Bool,                // bool_value
    BoolList,            // bools
    String,              // string_value
    StringList,          // strings
    ScalarType,          // int_value: an aoti_torch_dtype_*() code
    MemoryFormat,        // string_value: "contiguous_format", "channels_last", ...
    Layout,              // string_value: "strided", ...
    Device,              // string_value: "cpu", "cuda:0", ...
  };
  std::string name;
  Kind kind = Kind::None;
  bool keyword = false;  // serialized as a keyword argument (torch's kwarg-only or defaulted)
  // Tensors are the model's own, borrowed for the call: read them (they may
  // be views at an offset, in any strides), never delete or return them.
  AtenTensorHandle tensor = nullptr;
  std::vector<AtenTensorHandle> tensors;
  int64_t int_value = 0;
  std::vector<int64_t> ints;
  double float_value = 0;
  std::vector<double> floats;
  bool bool_value = false;
  std::vector<bool> bools;
  std::string string_value;
  std::vector<std::string> strings;
};

// A tensor the call must return, as the package describes it when it does
// (models compiled by aotishim.export record it; others may not).
struct OpOutput {
  bool known = false;           // false: only "a tensor" is known
  int32_t dtype = 0;            // an aoti_torch_dtype_*() code
  std::vector<int64_t> sizes;   // -1 for a size fixed only at run time
  std::vector<int64_t> strides; // the layout the compiled code reads
};

// One value of the op's schema returns, and how many of `outputs` it takes.
struct OpReturn {
  enum class Kind {
    Tensor,      // one tensor (also an optional tensor the compiled code expects)
    TensorList,  // `count` tensors
    None,        // nothing (a None return, or an optional tensor known to be None)
  };
  Kind kind = Kind::Tensor;
  size_t count = 1;
};

struct OpCall {
  std::string op;      // the target as serialized: "mylib::scale", "mylib::scale.out"
  std::string device;  // the model's device: "cpu", "cuda:0", ...
  std::vector<OpArg> args;
  std::vector<OpReturn> returns;
  // One entry per tensor the call returns, the returns' tensors in order.
  std::vector<OpOutput> outputs;
};

// Returns one new tensor handle per entry of call.outputs, in order (a None
// return takes no entry). aotishim owns them from then on:
// each is checked against call.outputs (dtype, known sizes, device), copied
// into the layout the model reads where it differs (or where it shares
// memory with an argument), and deleted. Throwing fails the model's run with
// the exception's message, naming the op; the model stays usable.
using CustomOpFn = std::function<std::vector<AtenTensorHandle>(const OpCall& call)>;

// Registers (or replaces) the implementation of `name`: "namespace::op" for
// the default overload, "namespace::op.overload" for another; a bare
// "namespace::op" also serves overloads without a registration of their
// own. A model binds its implementations when it loads and keeps them:
// registering, replacing or unregistering later changes only models loaded
// afterwards. Thread-safe.
AOTISHIM_API void register_custom_op(const std::string& name, CustomOpFn fn);
// Removes a registration; false when there was none.
AOTISHIM_API bool unregister_custom_op(const std::string& name);
// The names registered now, sorted.
AOTISHIM_API std::vector<std::string> registered_custom_ops();

}  // namespace aotishim
