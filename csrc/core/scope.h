// Scopes: every tensor belongs to the scope that was current (on its thread)
// when it was created. A model owns a scope; the process has a default one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aotishim {

constexpr uint64_t kDefaultScope = 1;

uint64_t new_scope(const std::string& name);
// Forgets a scope; its tensors must have been released first.
void forget_scope(uint64_t scope);
std::string scope_name(uint64_t scope);
bool scope_exists(uint64_t scope);
std::vector<uint64_t> live_scopes();

uint64_t current_scope();
// Makes `scope` current on this thread (throws if it does not exist); returns
// the previous one. aotishim::ScopeGuard (runtime.h) wraps this.
uint64_t set_current_scope(uint64_t scope);
// Makes `scope` current on this thread, or the default scope if it no longer
// exists; never throws (checked and set under the lock forget_scope takes, so
// another thread destroying it meanwhile cannot turn this into an error).
void restore_current_scope(uint64_t scope) noexcept;

}  // namespace aotishim
