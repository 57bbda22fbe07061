// A container's constants read and fed through whichever entry points it
// exports: the C-safe entry/pair arrays (torch 2.13 on), or, for models of
// torch 2.11 and 2.12, the map-based ones that take a
// std::unordered_map<std::string, AtenTensorHandle> across the boundary.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "runner/container_api.h"

namespace aotishim::runner {

// Whether the container can hand out its constants, and take user-managed
// ones, one way or the other.
bool can_extract_constants(const ContainerApi& api);
bool can_update_user_managed(const ContainerApi& api);

// The container's handles of a buffer's constants (folded ones left out),
// keyed by original FQN as the container keys them; valid until the buffer
// changes. Throws (naming `what`) when the container reports a failure.
std::map<std::string, AtenTensorHandle> extract_constants(const ContainerApi& api,
                                                          ContainerHandle container,
                                                          bool use_inactive,
                                                          const std::string& what);

// Points the container's constants named in `pairs` (by internal constant
// name, as the container looks them up) at views of the given tensors,
// which it borrows.
void update_user_managed(const ContainerApi& api, ContainerHandle container,
                         const std::vector<ConstantMapEntry>& pairs, bool use_inactive,
                         bool validate_full_update, const std::string& what);

}  // namespace aotishim::runner
