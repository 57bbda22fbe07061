#include "core/handle_registry.h"

#include <atomic>
#include <mutex>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/scope.h"
#include "core/device.h"

namespace aotishim {

namespace {
// A handle encodes a slot of the table below and that slot's generation:
// `kTag ^ (slot << kGenBits | generation)`. A slot's generation counts up each
// time it is given out and a slot whose generation runs out is retired, so a
// handle value is never given out twice: a deleted handle can never come back
// to life as another tensor, and a value that never was a handle is told
// apart from a deleted one. The tag puts small integers and user-space
// pointers far outside the table.
constexpr unsigned kGenBits = 40;
constexpr uint64_t kGenLimit = uint64_t{1} << kGenBits;
constexpr unsigned kChunkBits = 12;  // slots per chunk: 4096
constexpr uint32_t kChunkSize = uint32_t{1} << kChunkBits;
constexpr uint32_t kMaxChunks = 4096;  // at most 16M live handles
constexpr uint32_t kMaxSlots = kChunkSize * kMaxChunks;
constexpr uint64_t kTag = 0xA5A5A5ull << kGenBits;
constexpr uint32_t kNone = UINT32_MAX;

// Readers check a handle without the lock: `live_id` is published (release)
// after the tensor is in place and cleared before it is taken out, so a
// reader that sees its handle's id sees its tensor. The caller keeps the
// handle alive for the call, as the ABI requires of any handle it passes.
struct Slot {
  std::atomic<uint64_t> live_id{0};  // the id now given out from this slot; 0 when free
  std::shared_ptr<Tensor> tensor;
  uint64_t next_gen = 1;                // generation of the next id this slot gives
  uint32_t prev = kNone, next = kNone;  // neighbours in its scope's list, in creation order
};

struct ScopeList {
  uint32_t head = kNone, tail = kNone;
};

struct Registry {
  std::mutex mutex;  // held by every writer
  std::atomic<Slot*> chunks[kMaxChunks] = {};
  uint32_t slots_made = 0;
  std::vector<uint32_t> free_slots;  // reused last-in first-out
  // Scopes that have held a tensor; an entry goes with release_scope or the
  // scope itself.
  std::unordered_map<uint64_t, ScopeList> by_scope;
  // The list used last (a run creates and deletes in one scope): its entry
  // stays where it is until erased.
  uint64_t last_scope = 0;
  ScopeList* last_list = nullptr;
  size_t live = 0;
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
uint64_t slot_of_id(uint64_t id) { return id >> kGenBits; }

// The slot an id names, or null when it names none that exists.
Slot* slot_of(const Registry& r, uint64_t id) {
  const uint64_t index = slot_of_id(id);
  if (index >= kMaxSlots) return nullptr;
  Slot* chunk = r.chunks[index >> kChunkBits].load(std::memory_order_acquire);
  return chunk == nullptr ? nullptr : &chunk[index & (kChunkSize - 1)];
}
Slot& slot_at(Registry& r, uint32_t index) {
  return r.chunks[index >> kChunkBits].load(std::memory_order_relaxed)[index & (kChunkSize - 1)];
}

// The live slot behind a handle, checked without the lock; null when the
// handle is null, deleted or foreign.
Slot* live_slot(Registry& r, AtenTensorHandle handle) {
  if (handle == nullptr) return nullptr;
  const uint64_t id = id_of(handle);
  Slot* s = slot_of(r, id);
  if (s == nullptr || s->live_id.load(std::memory_order_acquire) != id) return nullptr;
  return s;
}

// Says why a handle is not live; the caller holds r.mutex.
[[noreturn]] void bad_handle_locked(const Registry& r, AtenTensorHandle handle, const char* what) {
  AOTISHIM_CHECK(handle != nullptr, what, " handle is null");
  const uint64_t id = id_of(handle);
  const Slot* s = slot_of(r, id);
  const uint64_t gen = id & (kGenLimit - 1);
  if (s != nullptr && gen >= 1 && gen < s->next_gen)
    fail(str(what, " handle ", static_cast<void*>(handle),
             " was already deleted (stale or double-deleted handle)"));
  fail(str(what, " handle ", static_cast<void*>(handle), " is not a tensor handle"));
}

[[noreturn]] void bad_handle(Registry& r, AtenTensorHandle handle, const char* what) {
  std::lock_guard<std::mutex> lock(r.mutex);
  bad_handle_locked(r, handle, what);
}

// A scope's list, or null when it has none; the caller holds r.mutex.
ScopeList* list_of(Registry& r, uint64_t scope) {
  if (r.last_list != nullptr && r.last_scope == scope) return r.last_list;
  auto it = r.by_scope.find(scope);
  if (it == r.by_scope.end()) return nullptr;
  r.last_scope = scope;
  return r.last_list = &it->second;
}

// A slot for a new handle; the caller holds r.mutex.
uint32_t take_slot(Registry& r) {
  if (!r.free_slots.empty()) {
    const uint32_t index = r.free_slots.back();
    r.free_slots.pop_back();
    return index;
  }
  AOTISHIM_CHECK(r.slots_made < kMaxSlots, "too many live tensor handles (", kMaxSlots, ")");
  const uint32_t index = r.slots_made;
  std::atomic<Slot*>& chunk = r.chunks[index >> kChunkBits];
  if (chunk.load(std::memory_order_relaxed) == nullptr)
    chunk.store(new Slot[kChunkSize], std::memory_order_release);  // never freed, as the registry
  ++r.slots_made;
  return index;
}

// Unlinks a live slot and takes its tensor out; the caller holds r.mutex.
std::shared_ptr<Tensor> vacate(Registry& r, uint32_t index, ScopeList& list) {
  Slot& s = slot_at(r, index);
  s.live_id.store(0, std::memory_order_release);
  (s.prev == kNone ? list.head : slot_at(r, s.prev).next) = s.next;
  (s.next == kNone ? list.tail : slot_at(r, s.next).prev) = s.prev;
  s.prev = s.next = kNone;
  --r.live;
  ++r.released;
  if (s.next_gen < kGenLimit) r.free_slots.push_back(index);  // else retired
  return std::move(s.tensor);
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
  // default scope, never a forgotten one where no statistic would see it. A
  // scope with a list here still exists (its list goes when it is forgotten).
  uint64_t scope = current_scope();
  ScopeList* found = list_of(r, scope);
  if (found == nullptr) {
    if (!scope_exists(scope)) scope = kDefaultScope;
    found = &r.by_scope.try_emplace(scope).first->second;
  }
  ScopeList& list = *found;
  const uint32_t index = take_slot(r);
  Slot& s = slot_at(r, index);
  ptr->scope = scope;
  s.tensor = std::move(ptr);
  s.prev = list.tail;
  s.next = kNone;
  (list.tail == kNone ? list.head : slot_at(r, list.tail).next) = index;
  list.tail = index;
  ++r.live;
  const uint64_t id = (uint64_t{index} << kGenBits) | s.next_gen++;
  s.live_id.store(id, std::memory_order_release);
  return handle_of(id);
}

std::shared_ptr<Tensor> lookup(AtenTensorHandle handle, const char* what) {
  Registry& r = registry();
  Slot* s = live_slot(r, handle);
  if (s == nullptr) bad_handle(r, handle, what);
  return s->tensor;
}

const Tensor& peek(AtenTensorHandle handle, const char* what) {
  Registry& r = registry();
  Slot* s = live_slot(r, handle);
  if (s == nullptr) bad_handle(r, handle, what);
  return *s->tensor;
}

void assign(AtenTensorHandle handle, Tensor value) {
  Registry& r = registry();
  auto replacement = std::make_shared<Tensor>(std::move(value));
  std::shared_ptr<Tensor> old;  // destroyed outside the lock (may free memory)
  std::lock_guard<std::mutex> lock(r.mutex);
  Slot* s = live_slot(r, handle);
  if (s == nullptr) bad_handle_locked(r, handle, "tensor");
  replacement->scope = s->tensor->scope;
  old = std::move(s->tensor);
  s->tensor = std::move(replacement);
}

bool is_live(AtenTensorHandle handle) { return live_slot(registry(), handle) != nullptr; }

void release(AtenTensorHandle handle) {
  Registry& r = registry();
  std::shared_ptr<Tensor> dying;  // destroyed outside the lock (may free memory)
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    Slot* s = live_slot(r, handle);
    if (s == nullptr) bad_handle_locked(r, handle, "tensor");
    const uint32_t index = static_cast<uint32_t>(slot_of_id(id_of(handle)));
    dying = vacate(r, index, *list_of(r, s->tensor->scope));  // a live tensor's scope has a list
  }
}

namespace {
// Moves a scope's tensors out of the registry and forgets its list; the
// caller holds r.mutex.
void take_scope_locked(Registry& r, uint64_t scope, std::vector<std::shared_ptr<Tensor>>& dying) {
  auto list_it = r.by_scope.find(scope);
  if (list_it == r.by_scope.end()) return;
  ScopeList& list = list_it->second;
  while (list.head != kNone) dying.push_back(vacate(r, list.head, list));
  if (r.last_list == &list) r.last_list = nullptr;
  r.by_scope.erase(list_it);
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
  return r.live;
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
    auto list_it = r.by_scope.find(s.id);
    if (list_it == r.by_scope.end()) continue;
    std::set<const Storage*> seen;
    for (uint32_t index = list_it->second.head; index != kNone; index = slot_at(r, index).next) {
      const Tensor& t = *slot_at(r, index).tensor;
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
