// Deleting the tensor handles a run consumes, for the runner's files: a
// caller may pass one handle in several slots, and an error path may meet
// one already deleted.
#pragma once

#include <set>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/runtime.h"

namespace aotishim::runner {

inline void delete_if_live(AtenTensorHandle handle) {
  if (handle && is_live_handle(handle)) aoti_torch_delete_tensor_object(handle);
}

// Deletes each distinct live handle once.
inline void consume(const std::vector<AtenTensorHandle>& handles) {
  std::set<AtenTensorHandle> seen;
  for (AtenTensorHandle h : handles)
    if (seen.insert(h).second) delete_if_live(h);
}

}  // namespace aotishim::runner
