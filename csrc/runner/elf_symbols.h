// Reads the dynamic symbol table of an ELF64 shared object without loading
// it, so a model's needs can be checked before any of its code runs.
#pragma once

#include <string>
#include <vector>

namespace aotishim::runner {

struct DynamicSymbols {
  std::vector<std::string> undefined;  // symbols the object needs from others
  std::vector<std::string> defined;    // symbols it exports
};

// True where shared objects are ELF (not on macOS or Windows).
bool elf_platform();

// Throws aotishim::Error naming the path when the file cannot be read or is
// not an ELF64 shared object of this machine's byte order.
DynamicSymbols read_dynamic_symbols(const std::string& path);

}  // namespace aotishim::runner
