// Live tensor handles. A handle is an opaque token (never a pointer to
// memory and never given out twice), so a stale or double-deleted handle is
// always recognised and reported, never dereferenced. Looking a handle up
// takes no lock; creating and deleting handles do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/export.h"
#include "aotishim/runtime.h"
#include "core/tensor.h"

namespace aotishim {

// Takes ownership; the tensor joins the current scope.
AtenTensorHandle register_tensor(Tensor tensor);
// The live tensor behind a handle; throws a clear error for null, deleted or
// foreign handles. `what` names the argument in the message.
// Exported for the backend plugins' shims (aoti_torch_cuda_*).
AOTISHIM_API std::shared_ptr<Tensor> lookup(AtenTensorHandle handle, const char* what = "tensor");
// The same tensor without taking a reference: for reading it within one
// entry point, while the caller's handle keeps it alive.
AOTISHIM_API const Tensor& peek(AtenTensorHandle handle, const char* what = "tensor");
bool is_live(AtenTensorHandle handle);
// Makes a live handle refer to `value` (its scope stays the handle's):
// torch's `*tensor = result`, which the proxy executor does to the output
// placeholders the generated code made.
void assign(AtenTensorHandle handle, Tensor value);
// Deletes a handle (the storage lives on while other tensors use it).
void release(AtenTensorHandle handle);
// Releases every handle of a scope; returns a description of each.
std::vector<std::string> release_scope(uint64_t scope);
// Forgets a scope and releases its handles, atomically with respect to
// register_tensor (no tensor can join it afterwards); throws for the default
// or an unknown scope.
std::vector<std::string> release_and_forget_scope(uint64_t scope);
// Number of live handles, all scopes together.
size_t live_count();
// Number of handles ever deleted (for tests that prove "exactly once").
uint64_t released_count();

// Per-scope counts, in the public API's shape.
std::vector<ScopeMemory> scope_stats();

std::string describe(const Tensor& t);

}  // namespace aotishim
