#include "core/scope.h"

#include <atomic>
#include <map>
#include <mutex>

#include "core/error.h"

namespace aotishim {

namespace {
std::mutex g_mutex;
std::map<uint64_t, std::string>& scopes() {
  static std::map<uint64_t, std::string> s{{kDefaultScope, "default"}};
  return s;
}
std::atomic<uint64_t> g_next{kDefaultScope + 1};
thread_local uint64_t t_current = kDefaultScope;
}  // namespace

uint64_t new_scope(const std::string& name) {
  uint64_t id = g_next.fetch_add(1);
  std::lock_guard<std::mutex> lock(g_mutex);
  scopes().emplace(id, name);
  return id;
}

void forget_scope(uint64_t scope) {
  AOTISHIM_CHECK(scope != kDefaultScope, "the default scope cannot be destroyed");
  std::lock_guard<std::mutex> lock(g_mutex);
  AOTISHIM_CHECK(scopes().erase(scope) == 1, "scope ", scope, " does not exist");
}

std::string scope_name(uint64_t scope) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = scopes().find(scope);
  return it == scopes().end() ? std::string("?") : it->second;
}

bool scope_exists(uint64_t scope) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return scopes().count(scope) == 1;
}

std::vector<uint64_t> live_scopes() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<uint64_t> ids;
  for (auto& kv : scopes()) ids.push_back(kv.first);
  return ids;
}

uint64_t current_scope() { return t_current; }

void restore_current_scope(uint64_t scope) noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  t_current = scopes().count(scope) == 1 ? scope : kDefaultScope;
}

uint64_t set_current_scope(uint64_t scope) {
  AOTISHIM_CHECK(scope_exists(scope), "scope ", scope, " does not exist");
  uint64_t previous = t_current;
  t_current = scope;
  return previous;
}

}  // namespace aotishim
