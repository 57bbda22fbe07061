#include "runner/extern_nodes.h"

#include <fstream>
#include <sstream>

#include "aotishim/error.h"
#include "core/dtype.h"
#include "runner/json.h"

namespace aotishim::runner {

namespace {

constexpr std::streamoff kMaxBytes = 64ll << 20;

// torch._export.serde.schema.ScalarType -> c10::ScalarType numbers (what
// aoti_torch_dtype_*() return); 0 for numbers it does not define.
int32_t c10_dtype(int64_t serialized) {
  switch (serialized) {
    case 1: return 0;    // BYTE: uint8
    case 2: return 1;    // CHAR: int8
    case 3: return 2;    // SHORT: int16
    case 4: return 3;    // INT: int32
    case 5: return 4;    // LONG: int64
    case 6: return 5;    // HALF: float16
    case 7: return 6;    // FLOAT: float32
    case 8: return 7;    // DOUBLE: float64
    case 9: return 8;    // COMPLEXHALF
    case 10: return 9;   // COMPLEXFLOAT
    case 11: return 10;  // COMPLEXDOUBLE
    case 12: return 11;  // BOOL
    case 13: return 15;  // BFLOAT16
    case 28: return 27;  // UINT16
    case 29: return 24;  // FLOAT8E4M3FN
    case 30: return 23;  // FLOAT8E5M2
    case 31: return 26;  // FLOAT8E4M3FNUZ
    case 32: return 25;  // FLOAT8E5M2FNUZ
    case 33: return 44;  // FLOAT8E8M0FNU
    case 34: return 28;  // UINT32
    case 35: return 29;  // UINT64
    default: return -1;
  }
}

const char* memory_format_name(int64_t serialized) {
  switch (serialized) {
    case 1: return "contiguous_format";
    case 2: return "channels_last";
    case 3: return "channels_last_3d";
    case 4: return "preserve_format";
    default: return nullptr;
  }
}

const char* layout_name(int64_t serialized) {
  switch (serialized) {
    case 1: return "sparse_coo";
    case 2: return "sparse_csr";
    case 3: return "sparse_csc";
    case 4: return "sparse_bsr";
    case 5: return "sparse_bsc";
    case 6: return "_mkldnn";
    case 7: return "strided";
    default: return nullptr;
  }
}

// A dtype by the name torch prints without "torch." ("float32").
int32_t dtype_by_name(const std::string& name) {
  static const DType all[] = {DType::UInt8,   DType::Int8,      DType::Int16,      DType::Int32,
                              DType::Int64,   DType::Float16,   DType::Float32,    DType::Float64,
                              DType::Complex64, DType::Complex128, DType::Bool,    DType::BFloat16,
                              DType::UInt16,  DType::UInt32,    DType::UInt64};
  for (DType d : all)
    if (name == dtype_name(d)) return static_cast<int32_t>(d);
  return -1;
}

// The single {"as_<kind>": value} member of a serialized argument.
const std::pair<std::string, Json>& single_member(const Json& arg, const std::string& what) {
  const auto& members = arg.as_object(what);
  if (members.size() != 1) throw Error(what + " must have exactly one member");
  return members.front();
}

// Fills `in` from its serialized form; sets `unsupported` for kinds not taken.
void read_input(const std::string& kind, const Json& v, ExternInput& in, std::string& unsupported,
                const std::string& what) {
  OpArg& a = in.value;
  if (kind == "as_none") {
    a.kind = OpArg::Kind::None;
  } else if (kind == "as_tensor") {
    a.kind = OpArg::Kind::Tensor;
    in.tensors = 1;
  } else if (kind == "as_tensors") {
    a.kind = OpArg::Kind::TensorList;
    in.tensors = v.as_array(what).size();
  } else if (kind == "as_optional_tensors") {
    a.kind = OpArg::Kind::OptionalTensorList;
    for (const Json& item : v.as_array(what)) {
      const std::string& item_kind = single_member(item, what + " item").first;
      if (item_kind != "as_tensor" && item_kind != "as_none")
        throw Error(what + " item must be as_tensor or as_none, not " + item_kind);
      in.present.push_back(item_kind == "as_tensor");
      in.tensors += in.present.back();
    }
  } else if (kind == "as_int" || kind == "as_sym_int") {
    a.kind = OpArg::Kind::Int;
    in.ints = 1;
  } else if (kind == "as_ints" || kind == "as_sym_ints") {
    a.kind = OpArg::Kind::IntList;
    in.ints = v.as_array(what).size();
  } else if (kind == "as_float") {
    a.kind = OpArg::Kind::Float;
    a.float_value = v.as_double(what);
  } else if (kind == "as_floats") {
    a.kind = OpArg::Kind::FloatList;
    for (const Json& x : v.as_array(what)) a.floats.push_back(x.as_double(what + " item"));
  } else if (kind == "as_bool") {
    a.kind = OpArg::Kind::Bool;
    a.bool_value = v.as_bool(what);
  } else if (kind == "as_bools") {
    a.kind = OpArg::Kind::BoolList;
    for (const Json& x : v.as_array(what)) a.bools.push_back(x.as_bool(what + " item"));
  } else if (kind == "as_string") {
    a.kind = OpArg::Kind::String;
    a.string_value = v.as_string(what);
  } else if (kind == "as_strings") {
    a.kind = OpArg::Kind::StringList;
    for (const Json& x : v.as_array(what)) a.strings.push_back(x.as_string(what + " item"));
  } else if (kind == "as_scalar_type") {
    a.kind = OpArg::Kind::ScalarType;
    const int32_t code = c10_dtype(v.as_int(what));
    if (code < 0) throw Error(what + ": unknown scalar type " + std::to_string(v.as_int(what)));
    a.int_value = code;
  } else if (kind == "as_memory_format" || kind == "as_layout") {
    const bool memory_format = kind == "as_memory_format";
    a.kind = memory_format ? OpArg::Kind::MemoryFormat : OpArg::Kind::Layout;
    const char* name = memory_format ? memory_format_name(v.as_int(what)) : layout_name(v.as_int(what));
    if (!name) throw Error(what + ": unknown value " + std::to_string(v.as_int(what)));
    a.string_value = name;
  } else if (kind == "as_device") {
    a.kind = OpArg::Kind::Device;  // the model's device, filled in by the executor
  } else {
    // as_sym_float, as_sym_bool, as_custom_obj (torchbind), as_graph, ...
    if (unsupported.empty()) unsupported = "argument '" + a.name + "' is " + kind;
  }
}

void read_output(const Json& serialized, ExternNode& node, std::string& unsupported,
                 const std::string& what) {
  const auto& [kind, v] = single_member(serialized, what);
  OpReturn r;
  if (kind == "as_tensor") {
    r = {OpReturn::Kind::Tensor, 1};
  } else if (kind == "as_tensors") {
    r = {OpReturn::Kind::TensorList, v.as_array(what).size()};
  } else if (kind == "as_optional_tensor") {
    const std::string& inner = single_member(v, what).first;
    if (inner == "as_tensor") r = {OpReturn::Kind::Tensor, 1};
    else if (inner == "as_none") r = {OpReturn::Kind::None, 0};
    else throw Error(what + ": as_optional_tensor holds " + inner);
  } else if (kind == "as_none") {
    r = {OpReturn::Kind::None, 0};
  } else {
    // as_int: an int return the compiled code checks; not taken from implementations
    if (kind == "as_int") ++node.output_ints;
    if (unsupported.empty()) unsupported = "it returns " + kind;
    r = {OpReturn::Kind::None, 0};
  }
  node.returns.push_back(r);
}

// aotishim.export records each output's dtype, sizes and strides in the
// node's metadata ("aotishim.outputs": a JSON list, one per tensor slot).
void read_expected_outputs(const Json& node_json, ExternNode& node, const std::string& what) {
  size_t slots = 0;
  for (const OpReturn& r : node.returns) slots += r.count;
  node.outputs.assign(slots, OpOutput{});
  const Json* metadata = node_json.find("metadata");
  const Json* text = metadata && metadata->is_object() ? metadata->find("aotishim.outputs") : nullptr;
  if (!text) return;
  const Json described = Json::parse(text->as_string(what + " aotishim.outputs"),
                                     what + " aotishim.outputs");
  const auto& list = described.as_array(what + " aotishim.outputs");
  if (list.size() != slots) {
    throw Error(what + " aotishim.outputs describes " + std::to_string(list.size()) +
                " tensors, the node returns " + std::to_string(slots));
  }
  auto dims = [&](const Json* j, const std::string& field) {
    std::vector<int64_t> out;
    if (!j) throw Error(what + " aotishim.outputs lacks " + field);
    for (const Json& d : j->as_array(what + " " + field)) out.push_back(d.is_integer() ? d.as_int(field) : -1);
    return out;
  };
  for (size_t i = 0; i < slots; ++i) {
    OpOutput& o = node.outputs[i];
    const Json* dtype = list[i].find("dtype");
    o.dtype = dtype ? dtype_by_name(dtype->as_string(what + " dtype")) : -1;
    if (o.dtype < 0) throw Error(what + " aotishim.outputs: unknown dtype");
    o.sizes = dims(list[i].find("sizes"), "sizes");
    o.strides = dims(list[i].find("strides"), "strides");
    if (o.sizes.size() != o.strides.size())
      throw Error(what + " aotishim.outputs: sizes and strides differ in length");
    o.known = true;
  }
}

}  // namespace

std::string extern_nodes_path(const std::string& so_path) {
  const std::string suffix = ".so";
  if (so_path.size() > suffix.size() &&
      so_path.compare(so_path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return so_path.substr(0, so_path.size() - suffix.size()) + ".json";
  }
  return so_path + ".json";
}

std::vector<ExternNode> read_extern_nodes(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw Error("cannot read the extern-kernel nodes file '" + path + "'");
  const std::streamoff size = file.tellg();
  if (size > kMaxBytes) {
    throw Error("the extern-kernel nodes file '" + path + "' is larger than 64 MiB");
  }
  file.seekg(0);
  std::ostringstream buffer;
  buffer << file.rdbuf();
  const std::string what = "extern-kernel nodes file '" + path + "'";
  const Json doc = Json::parse(buffer.str(), what);
  const Json* nodes = doc.find("nodes");
  if (!nodes) throw Error(what + " has no \"nodes\"");

  std::vector<ExternNode> result;
  const auto& list = nodes->as_array(what + " nodes");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = what + " node " + std::to_string(i);
    ExternNode node;
    if (const Json* name = list[i].find("name"); name && name->is_string()) node.name = name->as_string(at);
    const Json* body = list[i].find("node");
    if (!body) throw Error(at + " has no \"node\"");
    const Json* target = body->find("target");
    if (!target) throw Error(at + " has no target");
    node.target = target->as_string(at + " target");
    const std::string op_at = at + " (" + node.target + ")";
    if (const Json* md = body->find("metadata"); md && md->is_object()) {
      const Json* flag = md->find("torch_library_custom_op");
      node.custom_op = flag && flag->is_string() && flag->as_string(op_at) == "1";
    }
    if (const Json* inputs = body->find("inputs")) {
      for (const Json& named : inputs->as_array(op_at + " inputs")) {
        ExternInput in;
        const Json* name = named.find("name");
        const Json* arg = named.find("arg");
        if (!name || !arg) throw Error(op_at + ": an input lacks its name or arg");
        in.value.name = name->as_string(op_at + " input name");
        // torch's ArgumentKind: 1 positional, 2 keyword
        const Json* arg_kind = named.find("kind");
        in.value.keyword = arg_kind && arg_kind->is_integer() && arg_kind->as_int("kind") == 2;
        const auto& [kind, value] = single_member(*arg, op_at + " input '" + in.value.name + "'");
        read_input(kind, value, in, node.unsupported, op_at + " input '" + in.value.name + "'");
        node.input_tensors += in.tensors;
        node.input_ints += in.ints;
        node.inputs.push_back(std::move(in));
      }
    }
    if (const Json* outputs = body->find("outputs")) {
      for (const Json& out : outputs->as_array(op_at + " outputs"))
        read_output(out, node, node.unsupported, op_at + " output");
    }
    read_expected_outputs(*body, node, op_at);
    result.push_back(std::move(node));
  }
  return result;
}

}  // namespace aotishim::runner
