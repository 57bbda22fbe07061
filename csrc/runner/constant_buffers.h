// A model's two constant buffers (active and inactive), as torch's container
// keeps them, driven through its user-managed update so that every byte the
// model holds for a loaded constant is a tensor of the model's own scope
// (counted by memory_stats, freed by close), or memory the caller lent.
//
// Callers serialize: load on the active buffer, swap and teardown run with
// no run in flight; load on the inactive buffer, free and extract run
// alongside runs (which read only the active buffer) but never alongside
// each other.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aotishim/c_shim.h"
#include "runner/container_api.h"

namespace aotishim::runner {

class ConstantBuffers {
 public:
  // Reads the constants' names, FQNs and layouts from the container's active
  // buffer (once its weights are in).
  void describe(const ContainerApi* api, ContainerHandle container, uint64_t scope,
                const std::string& model_path, const std::string& device);

  // After describe(): makes the tensors the container's active buffer was
  // fed with (by constant name; borrowed by the container, as a
  // user-managed update borrows them) the model's to delete, as if they had
  // been loaded: a later load replaces them, release() deletes them.
  void adopt_active(std::vector<std::pair<std::string, AtenTensorHandle>> backings);

  // FQNs the caller may load, in the model's order (folded constants are
  // the model's own business and not among them).
  // Throws naming the entry point when the container has constants it
  // cannot describe (one with neither
  // AOTInductorModelContainerExtractConstantsMapEntries nor the map-based
  // AOTInductorModelContainerExtractConstantsMap of torch 2.11 and 2.12),
  // rather than presenting a model with constants as one without.
  const std::vector<std::string>& fqns() const;

  // Loads `by_fqn` (handles borrowed from the caller) into the active or the
  // inactive buffer: a copy in the model's layout and scope, or with
  // user_managed a view of the caller's memory, which must already be in the
  // model's layout. Checks FQNs, dtypes, shapes and devices first (throws
  // InputError naming the constant), so a failed load changes nothing. An
  // inactive buffer that holds nothing gets the constants `by_fqn` leaves
  // out copied from the active one, so a swap never meets a hole.
  void load(const std::map<std::string, AtenTensorHandle>& by_fqn, bool check_full_update,
            bool user_managed, bool use_inactive);

  // New handles (in the current scope) viewing the constants of a buffer, by
  // FQN; each keeps that buffer's memory (and a lease on it) alive. Empty for
  // an inactive buffer that holds nothing.
  std::map<std::string, AtenTensorHandle> extract(bool use_inactive);

  void swap();
  void free_inactive();
  // Live views extract() handed out, over both buffers.
  int leases() const;
  // After the container is gone: deletes what backed the loaded constants.
  void release();

 private:
  struct Constant {
    std::string name, fqn;
    std::vector<int64_t> sizes, strides;
    int32_t dtype = 0;
  };
  // What the model holds for one loaded constant in one buffer: our handle
  // (a copy, or a view of the caller's memory) and the view the container
  // made of it, which it never deletes.
  struct Held {
    AtenTensorHandle backing = nullptr;
    AtenTensorHandle container_view = nullptr;
  };
  struct Buffer {
    bool holds = false;  // every constant in place (since the last free)
    std::map<std::string, Held> held;  // by constant name
    std::shared_ptr<std::atomic<int>> leases = std::make_shared<std::atomic<int>>(0);
  };

  void require(void* entry_point, const char* name) const;
  // require() for each entry point describe() reads.
  void require_described() const;
  // require() for reading a buffer's constants, by either entry point.
  void require_extract() const;
  std::string label(const Constant& c) const;
  void check_given(const Constant& c, AtenTensorHandle h, bool user_managed) const;
  AtenTensorHandle copy_in_layout(const Constant& c, AtenTensorHandle src) const;
  // The container's handles of a buffer, by FQN (valid until it changes).
  std::map<std::string, AtenTensorHandle> entries(bool use_inactive) const;
  Buffer& buffer(bool use_inactive) { return buffers_[use_inactive ? 1 - active_ : active_]; }

  const ContainerApi* api_ = nullptr;
  ContainerHandle container_ = nullptr;
  uint64_t scope_ = 0;
  std::string model_path_, device_;
  int32_t device_type_ = 0, device_index_ = -1;
  std::vector<Constant> constants_;  // loadable ones, in the model's order
  std::vector<std::string> fqns_;
  bool undescribed_ = false;  // the container counts constants it cannot describe
  std::array<Buffer, 2> buffers_;
  int active_ = 0;
  // Adopted tensors of no loadable constant (none expected), deleted by release().
  std::vector<AtenTensorHandle> unmatched_;
};

}  // namespace aotishim::runner
