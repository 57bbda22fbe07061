#include "runner/constant_buffers.h"

#include <algorithm>

#include "aotishim/error.h"
#include "aotishim/runtime.h"
#include "core/dtype.h"
#include "core/error.h"
#include "runner/constant_map.h"
#include "runner/handle_cleanup.h"

namespace aotishim::runner {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

std::string dtype_text(int32_t code) {
  try {
    return dtype_name(dtype_from_int(code));
  } catch (const std::exception&) {
    return "dtype " + std::to_string(code);
  }
}

// Strides that agree where they matter: a dimension of size 1 may have any.
bool same_layout(const std::vector<int64_t>& sizes, const std::vector<int64_t>& a,
                 const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && a[d] != b[d]) return false;
  }
  return true;
}

}  // namespace

void ConstantBuffers::describe(const ContainerApi* api, ContainerHandle container, uint64_t scope,
                               const std::string& model_path, const std::string& device) {
  api_ = api;
  container_ = container;
  scope_ = scope;
  model_path_ = model_path;
  device_ = device;
  const AbiDevice abi = parse_device_abi(device);
  device_type_ = abi.type;
  device_index_ = abi.index;
  buffers_[0].holds = true;  // the weights the model was loaded with
  if (!api->num_constants) return;  // no constants API at all: the calls say so
  ScopeGuard guard(scope_);
  size_t n = 0;
  api->check(api->num_constants(container, &n), "reading the number of constants");
  if (!api->constant_name || !api->constant_fqn || !can_extract_constants(*api)) {
    undescribed_ = n > 0;  // constants it cannot name (torch 2.11, 2.12): the calls say so
    return;
  }
  const std::map<std::string, AtenTensorHandle> active = entries(false);
  for (size_t i = 0; i < n; ++i) {
    bool folded = false;
    if (api->constant_from_folded) {
      api->check(api->constant_from_folded(container, i, &folded), "reading a constant's origin");
    }
    if (folded) continue;
    const char* name = nullptr;
    const char* fqn = nullptr;
    api->check(api->constant_name(container, i, &name), "reading a constant's name");
    api->check(api->constant_fqn(container, i, &fqn), "reading a constant's FQN");
    Constant c;
    c.name = name ? name : "";
    c.fqn = fqn && *fqn ? fqn : c.name;
    const auto it = active.find(c.fqn);
    if (it == active.end() || !it->second || !is_live_handle(it->second)) continue;
    const TensorInfo info = tensor_info(it->second);
    c.sizes = info.sizes;
    c.strides = info.strides;
    c.dtype = info.dtype;
    fqns_.push_back(c.fqn);
    constants_.push_back(std::move(c));
  }
}

void ConstantBuffers::adopt_active(std::vector<std::pair<std::string, AtenTensorHandle>> backings) {
  ScopeGuard guard(scope_);
  const std::map<std::string, AtenTensorHandle> now = entries(false);
  Buffer& active = buffer(false);
  for (const auto& entry : backings) {
    const std::string& name = entry.first;
    const auto c = std::find_if(constants_.begin(), constants_.end(),
                                [&](const Constant& k) { return k.name == name; });
    if (c == constants_.end()) {
      unmatched_.push_back(entry.second);
      continue;
    }
    Held& held = active.held[name];
    held.backing = entry.second;
    const auto it = now.find(c->fqn);
    held.container_view = it == now.end() ? nullptr : it->second;
  }
}

void ConstantBuffers::require(void* entry_point, const char* name) const {
  if (!entry_point) {
    throw Error("model '" + model_path_ + "' cannot read or change its constants: its " +
                "container lacks " + name + " (compiled by an older torch?)");
  }
}

void ConstantBuffers::require_described() const {
  require(reinterpret_cast<void*>(api_->num_constants), "AOTInductorModelContainerGetNumConstants");
  require(reinterpret_cast<void*>(api_->constant_name), "AOTInductorModelContainerGetConstantName");
  require(reinterpret_cast<void*>(api_->constant_fqn),
          "AOTInductorModelContainerGetConstantOriginalFQN");
  require_extract();
}

void ConstantBuffers::require_extract() const {
  // Either way of reading them will do; the error names the current one.
  if (!can_extract_constants(*api_)) {
    require(nullptr, "AOTInductorModelContainerExtractConstantsMapEntries");
  }
}

const std::vector<std::string>& ConstantBuffers::fqns() const {
  if (undescribed_) require_described();
  return fqns_;
}

std::string ConstantBuffers::label(const Constant& c) const {
  return "constant '" + c.fqn + "' of model '" + model_path_ + "'";
}

void ConstantBuffers::check_given(const Constant& c, AtenTensorHandle h, bool user_managed) const {
  if (!h || !is_live_handle(h)) throw InputError(label(c) + ": not a live tensor");
  const TensorInfo info = tensor_info(h);
  if (info.dtype != c.dtype) {
    throw InputError(label(c) + " is " + dtype_text(c.dtype) + ", got " + dtype_text(info.dtype));
  }
  if (info.sizes != c.sizes) {
    throw InputError(label(c) + " has shape " + shape_text(c.sizes) + ", got " +
                     shape_text(info.sizes));
  }
  // By (type, index): "cuda" and "cuda:0" name one device.
  const AbiDevice got = parse_device_abi(info.device);
  if (got.type != device_type_ || got.index != device_index_) {
    throw InputError(label(c) + " lives on " + device_ + ", got a tensor on " + info.device);
  }
  if (user_managed && !same_layout(c.sizes, c.strides, info.strides)) {
    throw InputError(label(c) + ": user_managed borrows the memory as it lies, which must be " +
                     "in the model's strides " + shape_text(c.strides) + ", got " +
                     shape_text(info.strides) + " (load it without user_managed to copy it)");
  }
}

AtenTensorHandle ConstantBuffers::copy_in_layout(const Constant& c, AtenTensorHandle src) const {
  AtenTensorHandle out = nullptr;
  check(aoti_torch_empty_strided(static_cast<int64_t>(c.sizes.size()), c.sizes.data(),
                                 c.strides.data(), c.dtype, device_type_, device_index_, &out));
  const AOTITorchError err = aoti_torch_copy_(out, src, 0);
  if (err != AOTI_TORCH_SUCCESS) {
    delete_if_live(out);
    check(err);
  }
  return out;
}

std::map<std::string, AtenTensorHandle> ConstantBuffers::entries(bool use_inactive) const {
  require_extract();
  return extract_constants(*api_, container_, use_inactive, "reading the model's constants");
}

void ConstantBuffers::load(const std::map<std::string, AtenTensorHandle>& by_fqn,
                           bool check_full_update, bool user_managed, bool use_inactive) {
  if (!can_update_user_managed(*api_)) {
    require(nullptr, "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs");
  }
  require_described();  // the checks below need the constants' names and layouts
  // Every check before anything changes.
  std::vector<const Constant*> given(constants_.size(), nullptr);
  for (const auto& [fqn, handle] : by_fqn) {
    const auto it = std::find(fqns_.begin(), fqns_.end(), fqn);
    if (it == fqns_.end()) {
      throw InputError("model '" + model_path_ + "' has no constant '" + fqn +
                       "' (its constants: " + join(fqns_) + ")");
    }
    const size_t i = static_cast<size_t>(it - fqns_.begin());
    check_given(constants_[i], handle, user_managed);
    given[i] = &constants_[i];
  }
  if (check_full_update) {
    std::vector<std::string> missing;
    for (size_t i = 0; i < constants_.size(); ++i) {
      if (!given[i]) missing.push_back(constants_[i].fqn);
    }
    if (!missing.empty()) {
      throw InputError("check_full_update: model '" + model_path_ +
                       "' has constants the mapping leaves out: " + join(missing));
    }
  }

  ScopeGuard guard(scope_);
  Buffer& target = buffer(use_inactive);
  // A buffer that holds nothing is never read: torch 2.11's container
  // creates its inactive map only when first loaded, and reading it before
  // dereferences a null map.
  const std::map<std::string, AtenTensorHandle> current =
      target.holds ? entries(use_inactive) : std::map<std::string, AtenTensorHandle>{};
  const std::map<std::string, AtenTensorHandle> active =
      target.holds ? std::map<std::string, AtenTensorHandle>{} : entries(false);
  // Every constant goes into the update, so the container never fills a
  // gap on its own (it would put a view of the active buffer's memory in
  // the inactive one): given ones as new backings, the others as the
  // buffer already holds them or, for an empty buffer, copies of the active.
  std::vector<AtenTensorHandle> fresh(constants_.size(), nullptr);
  std::vector<ConstantMapEntry> pairs;
  try {
    for (size_t i = 0; i < constants_.size(); ++i) {
      const Constant& c = constants_[i];
      AtenTensorHandle source = nullptr;
      if (given[i]) {
        AtenTensorHandle h = by_fqn.at(c.fqn);
        if (user_managed) {
          check(aoti_torch_new_tensor_handle(h, &fresh[i]));
        } else {
          fresh[i] = copy_in_layout(c, h);
        }
        source = fresh[i];
      } else if (target.holds) {
        const auto it = current.find(c.fqn);
        if (it == current.end()) throw Error(label(c) + " is missing from its buffer");
        source = it->second;
      } else {
        const auto it = active.find(c.fqn);
        if (it == active.end()) throw Error(label(c) + " is missing from the active buffer");
        fresh[i] = copy_in_layout(c, it->second);
        source = fresh[i];
      }
      pairs.push_back({c.name.c_str(), source});
    }
    update_user_managed(*api_, container_, pairs, use_inactive, false,
                        "loading constants into model '" + model_path_ + "'");
  } catch (...) {
    for (AtenTensorHandle h : fresh) delete_if_live(h);
    throw;
  }
  // The container replaced each entry by a view of what it was given; the
  // views it replaced, and the backings they viewed, are ours to delete.
  const std::map<std::string, AtenTensorHandle> now = entries(use_inactive);
  for (size_t i = 0; i < constants_.size(); ++i) {
    const Constant& c = constants_[i];
    Held& held = target.held[c.name];
    delete_if_live(held.container_view);
    if (fresh[i]) {
      delete_if_live(held.backing);
      held.backing = fresh[i];
    }
    const auto it = now.find(c.fqn);
    held.container_view = it == now.end() ? nullptr : it->second;
  }
  target.holds = true;
}

std::map<std::string, AtenTensorHandle> ConstantBuffers::extract(bool use_inactive) {
  Buffer& source = buffer(use_inactive);
  std::map<std::string, AtenTensorHandle> out;
  if (!source.holds) return out;
  const std::map<std::string, AtenTensorHandle> handles = entries(use_inactive);
  // One lease for the whole map: the buffer's memory may not be freed (nor
  // the model closed) while any of these views lives.
  std::shared_ptr<std::atomic<int>> counter = source.leases;
  ++*counter;
  std::shared_ptr<void> lease(static_cast<void*>(counter.get()),
                              [counter](void*) { --*counter; });
  try {
    for (const Constant& c : constants_) {
      const auto it = handles.find(c.fqn);
      if (it == handles.end() || !it->second || !is_live_handle(it->second)) continue;
      const TensorInfo info = tensor_info(it->second);
      // The storage itself is kept too: a later load may drop the
      // model's handle of a copy it made.
      auto keep = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(
          lease, retain_storage(it->second));
      out[c.fqn] = borrow_memory(info.device, info.data_ptr, info.sizes, info.strides, 0,
                                 info.dtype, keep);
    }
  } catch (...) {
    for (auto& [fqn, h] : out) delete_if_live(h);
    throw;
  }
  return out;
}

void ConstantBuffers::swap() {
  require(reinterpret_cast<void*>(api_->swap_constant_buffer),
          "AOTInductorModelContainerSwapConstantBuffer");
  if (!buffer(true).holds) {
    throw InputError("model '" + model_path_ + "': the inactive constant buffer is empty; " +
                     "load_constants(..., use_inactive=True) first");
  }
  ScopeGuard guard(scope_);
  clear_last_error();
  api_->check(api_->swap_constant_buffer(container_), "swapping the constant buffers");
  active_ = 1 - active_;
}

void ConstantBuffers::free_inactive() {
  require(reinterpret_cast<void*>(api_->free_inactive_constant_buffer),
          "AOTInductorModelContainerFreeInactiveConstantBuffer");
  Buffer& inactive = buffer(true);
  if (*inactive.leases > 0) {
    throw Error("model '" + model_path_ + "': the inactive constant buffer is still viewed by " +
                std::to_string(inactive.leases->load()) +
                " map(s) from extract_constants_map (or models borrowing them); release " +
                "those first");
  }
  ScopeGuard guard(scope_);
  clear_last_error();
  api_->check(api_->free_inactive_constant_buffer(container_),
              "freeing the inactive constant buffer");
  // The container keeps its entries (views of what we free now) until the
  // buffer is loaded again; `holds` keeps them from being read or swapped in.
  for (auto& [name, held] : inactive.held) {
    delete_if_live(held.container_view);
    delete_if_live(held.backing);
  }
  inactive.held.clear();
  inactive.holds = false;
}

int ConstantBuffers::leases() const { return *buffers_[0].leases + *buffers_[1].leases; }

void ConstantBuffers::release() {
  // Also after a failed load, before describe() ran: nothing held then.
  for (Buffer& b : buffers_) {
    for (auto& [name, held] : b.held) {
      delete_if_live(held.container_view);
      delete_if_live(held.backing);
    }
    b.held.clear();
    b.holds = false;
  }
  for (AtenTensorHandle h : unmatched_) delete_if_live(h);
  unmatched_.clear();
}

}  // namespace aotishim::runner
