#include "runner/aten_proxy_ops.h"

#include <map>

#include "aotishim/error.h"
#include "core/device_type.h"
#include "core/error.h"
#include "ops/fallback_ops.h"

namespace aotishim::runner {

namespace {

// The argument `name` of the call, of `kind`: the nodes come from a package
// file, so a node that does not match the op's schema is an error, not a crash.
const OpArg& argument(const OpCall& call, size_t index, const char* name, OpArg::Kind kind) {
  AOTISHIM_CHECK(index < call.args.size(), call.op, ": argument ", index, " ('", name,
                 "') is missing: the node passes ", call.args.size());
  const OpArg& a = call.args[index];
  AOTISHIM_CHECK(a.kind == kind, call.op, ": argument ", index, " ('", name,
                 "') has another kind than the op's schema gives it");
  return a;
}

void check_arity(const OpCall& call, size_t count) {
  AOTISHIM_CHECK(call.args.size() == count, call.op, " takes ", count, " arguments, the node passes ",
                 call.args.size());
}

// _fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size)
std::vector<AtenTensorHandle> fft_c2r(const OpCall& call) {
  check_arity(call, 4);
  const OpArg& self = argument(call, 0, "self", OpArg::Kind::Tensor);
  const OpArg& dim = argument(call, 1, "dim", OpArg::Kind::IntList);
  const OpArg& norm = argument(call, 2, "normalization", OpArg::Kind::Int);
  const OpArg& last = argument(call, 3, "last_dim_size", OpArg::Kind::Int);
  AtenTensorHandle out = nullptr;
  ops::_fft_c2r(ops::OpCall{"_fft_c2r", std::nullopt}, self.tensor, dim.ints.data(),
                static_cast<int64_t>(dim.ints.size()), norm.int_value, last.int_value, &out);
  return {out};
}

// grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode,
// int padding_mode, bool align_corners): torch 2.11's c_shim_cuda.h has no
// entry, so its cuda code calls it this way.
std::vector<AtenTensorHandle> grid_sampler_3d(const OpCall& call) {
  check_arity(call, 5);
  const OpArg& input = argument(call, 0, "input", OpArg::Kind::Tensor);
  const OpArg& grid = argument(call, 1, "grid", OpArg::Kind::Tensor);
  const OpArg& mode = argument(call, 2, "interpolation_mode", OpArg::Kind::Int);
  const OpArg& padding = argument(call, 3, "padding_mode", OpArg::Kind::Int);
  const OpArg& align = argument(call, 4, "align_corners", OpArg::Kind::Bool);
  AtenTensorHandle out = nullptr;
  ops::grid_sampler_3d(ops::OpCall{"grid_sampler_3d", std::nullopt}, input.tensor, grid.tensor,
                       mode.int_value, padding.int_value, align.bool_value ? 1 : 0, &out);
  return {out};
}

const std::map<std::string, CustomOpFn>& table() {
  static const auto* t = new std::map<std::string, CustomOpFn>{
      {"aten::_fft_c2r", fft_c2r},
      {"aten::grid_sampler_3d", grid_sampler_3d},
  };
  return *t;
}

}  // namespace

CustomOpImpl find_aten_proxy_op(const std::string& target) {
  std::string name = target;
  const size_t dot = name.find('.');
  if (dot != std::string::npos) {
    if (name.compare(dot + 1, std::string::npos, "default") != 0) return nullptr;
    name.resize(dot);
  }
  auto it = table().find(name);
  if (it == table().end()) return nullptr;
  return std::make_shared<const CustomOpFn>(it->second);
}

}  // namespace aotishim::runner
