#include "devices/sim/hazard_checker.h"

#include <sstream>

namespace aotishim::sim_detail {

namespace {

bool overlap(uintptr_t a0, uintptr_t a1, uintptr_t b0, uintptr_t b1) {
  return a0 < b1 && b0 < a1;
}

}  // namespace

std::optional<std::string> find_command_hazard(const Command& incoming,
                                               const std::vector<Command>& pending) {
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
    const Command& p = *it;
    for (const Binding& pb : p.bindings) {
      for (const Binding& ib : incoming.bindings) {
        if (pb.buffer == ib.buffer || !(pb.write || ib.write) || pb.nbytes == 0 || ib.nbytes == 0)
          continue;
        if (!overlap(pb.begin(), pb.end(), ib.begin(), ib.end())) continue;
        std::ostringstream os;
        os << "sim hazard: '" << incoming.name << "' " << describe(ib) << ", but pending "
           << describe(p) << " " << describe(pb)
           << "; the bytes overlap through different buffer objects, so nothing orders them";
        return os.str();
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> find_host_hazard(const std::string& what, const void* ptr,
                                            size_t nbytes, bool write,
                                            const std::vector<Command>& pending) {
  if (nbytes == 0) return std::nullopt;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t end = begin + nbytes;
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) {
    const Command& p = *it;
    for (const Binding& pb : p.bindings) {
      if (!(pb.write || write) || pb.nbytes == 0) continue;
      if (!overlap(begin, end, pb.begin(), pb.end())) continue;
      std::ostringstream os;
      os << "sim hazard: " << what << " of " << nbytes << " bytes at 0x" << std::hex << begin
         << std::dec << ", but pending " << describe(p) << " " << describe(pb)
         << "; the host did not wait for it";
      return os.str();
    }
  }
  return std::nullopt;
}

}  // namespace aotishim::sim_detail
