#include "core/handle_registry.h"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/scope.h"
#include "core/device.h"

namespace aotishim {

namespace {
// Handles are `kTag ^ id` with ids counting up from 1 and never reused: a
// deleted handle can never come back to life as another tensor, and a value
// that never was a handle is told apart from a deleted one.
constexpr uintptr_t kTag = 0x7A0700000000000ull;

struct Registry {
  std::mutex mutex;
  std::unordered_map<uint64_t, std::shared_ptr<Tensor>> live;
  std::map<uint64_t, std::set<uint64_t>> by_scope;
  uint64_t next_id = 1;
  uint64_t released = 0;
};

Registry& registry() {
  // Never destroyed: handles may be released from other libraries' static
  // destructors at exit.
  static Registry* r = new Registry();
  return *r;
}

uint64_t id_of(AtenTensorHandle handle) { return reinterpret_cast<uintptr_t>(handle) ^ kTag; }
AtenTensorHandle handle_of(uint64_t id) {
  return reinterpret_cast<AtenTensorHandle>(static_cast<uintptr_t>(id) ^ kTag);
}

[[noreturn]] void bad_handle(Registry& r, AtenTensorHandle handle, const char* what) {
  AOTISHIM_CHECK(handle != nullptr, what, " handle is null");
  uint64_t id = id_of(handle);
  if (id >= 1 && id < r.next_id)
    fail(str(what, " handle ", static_cast<void*>(handle),
             " was already deleted (stale or double-deleted handle)"));
  fail(str(what, " handle ", static_cast<void*>(handle), " is not a tensor handle"));
}
}  // namespace

std::string describe(const Tensor& t) {
  std::string s = str(dtype_name(t.dtype), "[");
  for (size_t i = 0; i < t.sizes.size(); ++i) s += str(i ? "," : "", t.sizes[i]);
  s += str("] on ", t.device().name(), t.storage->owned() ? " (owned " : " (borrowed ",
           t.storage->nbytes(), " bytes)");
  return s;
}

AtenTensorHandle register_tensor(Tensor tensor) {
  Registry& r = registry();
  auto ptr = std::make_shared<Tensor>(std::move(tensor));
  std::lock_guard<std::mutex> lock(r.mutex);
  // Checked under the registry's lock (lock order: registry, then scopes),
  // which release_and_forget_scope holds while it forgets the scope: a tensor
  // either joins the scope before it is emptied or, once it is gone, the
  // default scope, never a forgotten one where no statistic would see it.
  uint64_t scope = current_scope();
  ptr->scope = scope_exists(scope) ? scope : kDefaultScope;
  uint64_t id = r.next_id++;
  r.by_scope[ptr->scope].insert(id);
  r.live.emplace(id, std::move(ptr));
  return handle_of(id);
}

std::shared_ptr<Tensor> lookup(AtenTensorHandle handle, const char* what) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(id_of(handle));
  if (handle == nullptr || it == r.live.end()) bad_handle(r, handle, what);
  return it->second;
}

void assign(AtenTensorHandle handle, Tensor value) {
  Registry& r = registry();
  auto replacement = std::make_shared<Tensor>(std::move(value));
  std::shared_ptr<Tensor> old;  // destroyed outside the lock (may free memory)
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(id_of(handle));
  if (handle == nullptr || it == r.live.end()) bad_handle(r, handle, "tensor");
  replacement->scope = it->second->scope;
  old = std::move(it->second);
  it->second = std::move(replacement);
}

bool is_live(AtenTensorHandle handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return handle != nullptr && r.live.count(id_of(handle)) == 1;
}

void release(AtenTensorHandle handle) {
  Registry& r = registry();
  std::shared_ptr<Tensor> dying;  // destroyed outside the lock (may free memory)
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(id_of(handle));
    if (handle == nullptr || it == r.live.end()) bad_handle(r, handle, "tensor");
    dying = std::move(it->second);
    auto scope_it = r.by_scope.find(dying->scope);
    if (scope_it != r.by_scope.end()) {
      scope_it->second.erase(it->first);
      if (scope_it->second.empty()) r.by_scope.erase(scope_it);
    }
    r.live.erase(it);
    ++r.released;
  }
}

namespace {
// Moves a scope's tensors out of the registry; the caller holds r.mutex.
void take_scope_locked(Registry& r, uint64_t scope, std::vector<std::shared_ptr<Tensor>>& dying) {
  auto scope_it = r.by_scope.find(scope);
  if (scope_it == r.by_scope.end()) return;
  for (uint64_t id : scope_it->second) {
    auto it = r.live.find(id);
    dying.push_back(std::move(it->second));
    r.live.erase(it);
    ++r.released;
  }
  r.by_scope.erase(scope_it);
}

// Describes, then destroys (outside the registry's lock: may free memory).
std::vector<std::string> describe_and_drop(std::vector<std::shared_ptr<Tensor>>& dying) {
  std::vector<std::string> described;
  for (auto& t : dying) described.push_back(describe(*t));
  dying.clear();
  return described;
}
}  // namespace

std::vector<std::string> release_scope(uint64_t scope) {
  Registry& r = registry();
  std::vector<std::shared_ptr<Tensor>> dying;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    take_scope_locked(r, scope, dying);
  }
  return describe_and_drop(dying);
}

std::vector<std::string> release_and_forget_scope(uint64_t scope) {
  Registry& r = registry();
  std::vector<std::shared_ptr<Tensor>> dying;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    forget_scope(scope);  // throws (changing nothing) for the default or an unknown scope
    take_scope_locked(r, scope, dying);
  }
  return describe_and_drop(dying);
}

size_t live_count() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.live.size();
}

uint64_t released_count() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.released;
}

std::vector<ScopeMemory> scope_stats() {
  Registry& r = registry();
  std::vector<ScopeMemory> out;
  for (uint64_t scope : live_scopes()) {
    ScopeMemory s;
    s.id = scope;
    s.name = scope_name(scope);
    out.push_back(s);
  }
  std::lock_guard<std::mutex> lock(r.mutex);
  for (ScopeMemory& s : out) {
    auto scope_it = r.by_scope.find(s.id);
    if (scope_it == r.by_scope.end()) continue;
    std::set<const Storage*> seen;
    for (uint64_t id : scope_it->second) {
      const Tensor& t = *r.live.at(id);
      ++s.tensors;
      if (!seen.insert(t.storage.get()).second) continue;
      if (t.storage->owned()) {
        ++s.owned_storages;
        s.owned_bytes += t.storage->nbytes();
      } else {
        ++s.borrowed_storages;
      }
    }
  }
  return out;
}

}  // namespace aotishim
