#include "runner/constant_map.h"

#include <unordered_map>

#include "aotishim/error.h"
#include "aotishim/runtime.h"
#include "core/error.h"

namespace aotishim::runner {

namespace {

// The map the older entry points fill or read in place. The model's code
// runs std::unordered_map's members on our object, so it must have the same
// layout there: the model and aotishim are built against one standard
// library, libstdc++ (its C++11 ABI, as torch's wheels are) on Linux and
// libc++ on Apple; container_api.cpp binds these entry points only then.
using ModelConstantMap = std::unordered_map<std::string, AtenTensorHandle>;

}  // namespace

bool can_extract_constants(const ContainerApi& api) {
  return api.constant_entries || api.extract_constants_map;
}

bool can_update_user_managed(const ContainerApi& api) {
  return api.update_user_managed_constants || api.update_user_managed_constants_map;
}

std::map<std::string, AtenTensorHandle> extract_constants(const ContainerApi& api,
                                                          ContainerHandle container,
                                                          bool use_inactive,
                                                          const std::string& what) {
  std::map<std::string, AtenTensorHandle> out;
  clear_last_error();
  if (api.constant_entries) {
    const ConstantMapEntry* list = nullptr;
    size_t count = 0;
    api.check(api.constant_entries(container, &list, &count, use_inactive), what);
    for (size_t i = 0; i < count && list; ++i) {
      if (list[i].name) out[list[i].name] = list[i].handle;
    }
    return out;
  }
  if (!api.extract_constants_map) {
    throw Error(what + ": the container lacks AOTInductorModelContainerExtractConstantsMapEntries");
  }
  ModelConstantMap filled;
  api.check(api.extract_constants_map(container, &filled, use_inactive), what);
  for (const auto& [fqn, handle] : filled) out[fqn] = handle;
  return out;
}

void update_user_managed(const ContainerApi& api, ContainerHandle container,
                         const std::vector<ConstantMapEntry>& pairs, bool use_inactive,
                         bool validate_full_update, const std::string& what) {
  clear_last_error();
  if (api.update_user_managed_constants) {
    api.check(api.update_user_managed_constants(container, pairs.data(), pairs.size(),
                                                use_inactive, validate_full_update),
              what);
    return;
  }
  if (!api.update_user_managed_constants_map) {
    throw Error(what + ": the container lacks " +
                "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs");
  }
  ModelConstantMap given;
  given.reserve(pairs.size());
  for (const ConstantMapEntry& p : pairs) {
    if (p.name) given[p.name] = p.handle;
  }
  api.check(api.update_user_managed_constants_map(container, &given, use_inactive,
                                                  validate_full_update),
            what);
}

}  // namespace aotishim::runner
