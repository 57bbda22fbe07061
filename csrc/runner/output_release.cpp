// The last-slot rule for output handles (see release_outputs in runner.h).
#include <exception>
#include <unordered_map>

#include "aotishim/runner.h"

namespace aotishim {

void release_outputs(AtenTensorHandle* slots, size_t count,
                     const std::function<void(size_t, AtenTensorHandle)>& convert) {
  std::exception_ptr first_error;
  // Convert in slot order; stop at the first failure, release regardless.
  for (size_t i = 0; i < count && !first_error; ++i) {
    try {
      if (convert) convert(i, slots[i]);
    } catch (...) {
      first_error = std::current_exception();
    }
  }
  // One handle may sit in several slots, adjacent or not: delete it only at
  // the last slot that holds it, so it is deleted exactly once.
  std::unordered_map<AtenTensorHandle, size_t> last_slot;
  for (size_t i = 0; i < count; ++i) {
    if (slots[i]) last_slot[slots[i]] = i;
  }
  for (size_t i = 0; i < count; ++i) {
    AtenTensorHandle handle = slots[i];
    if (!handle || last_slot[handle] != i) continue;
    if (aoti_torch_delete_tensor_object(handle) != AOTI_TORCH_SUCCESS && !first_error) {
      first_error = std::make_exception_ptr(
          Error(std::string("releasing output ") + std::to_string(i) +
                " failed: " + aotishim_last_error()));
    }
  }
  for (size_t i = 0; i < count; ++i) slots[i] = nullptr;
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace aotishim
