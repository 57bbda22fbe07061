#include "runner/custom_op_registry.h"

#include <map>
#include <mutex>

#include "aotishim/error.h"

namespace aotishim {

namespace {
struct Registry {
  std::mutex mutex;
  std::map<std::string, runner::CustomOpImpl> ops;
};

Registry& registry() {
  // Never destroyed: implementations may hold objects (Python callables)
  // that must not be released after their runtime has gone at exit.
  static Registry* r = new Registry();
  return *r;
}

// "ns::op" or "ns::op.overload": a namespace, an op name, at most one overload.
void check_name(const std::string& name) {
  const size_t sep = name.find("::");
  const size_t dot = name.find('.');
  const bool ok = sep != std::string::npos && sep > 0 && sep + 2 < name.size() &&
                  name.find("::", sep + 2) == std::string::npos &&
                  (dot == std::string::npos ||
                   (dot > sep + 2 && dot + 1 < name.size() && name.find('.', dot + 1) == std::string::npos));
  if (!ok) {
    throw InputError("invalid custom op name '" + name +
                     "': expected 'namespace::op' or 'namespace::op.overload'");
  }
}
}  // namespace

void register_custom_op(const std::string& name, CustomOpFn fn) {
  check_name(name);
  if (!fn) throw InputError("custom op '" + name + "': the implementation is empty");
  auto impl = std::make_shared<const CustomOpFn>(std::move(fn));
  runner::CustomOpImpl replaced;  // released outside the lock
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  replaced = std::move(r.ops[name]);
  r.ops[name] = std::move(impl);
}

bool unregister_custom_op(const std::string& name) {
  runner::CustomOpImpl removed;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.ops.find(name);
  if (it == r.ops.end()) return false;
  removed = std::move(it->second);
  r.ops.erase(it);
  return true;
}

std::vector<std::string> registered_custom_ops() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, impl] : r.ops) names.push_back(name);
  return names;
}

namespace runner {
CustomOpImpl find_custom_op(const std::string& target) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.ops.find(target);
  if (it != r.ops.end()) return it->second;
  const size_t dot = target.find('.');
  if (dot != std::string::npos) {
    it = r.ops.find(target.substr(0, dot));
    if (it != r.ops.end()) return it->second;
  }
  return nullptr;
}
}  // namespace runner

}  // namespace aotishim
