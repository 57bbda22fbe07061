#include "runner/elf_symbols.h"

#include <cstdint>
#include <cstring>

#include "aotishim/error.h"
#include "runner/mapped_file.h"

#if defined(__linux__) || defined(__FreeBSD__)
#include <elf.h>
#define AOTISHIM_HAVE_ELF 1
#endif

namespace aotishim::runner {

bool elf_platform() {
#ifdef AOTISHIM_HAVE_ELF
  return true;
#else
  return false;
#endif
}

#ifdef AOTISHIM_HAVE_ELF
namespace {

// Every read is bounds-checked: a damaged file must give an error, not a crash.
template <typename T>
T read_at(const MappedFile& bytes, uint64_t offset, const std::string& path) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) {
    throw Error("'" + path + "' is a damaged ELF file (read past its end)");
  }
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

bool host_is_little_endian() {
  const uint16_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

}  // namespace

DynamicSymbols read_dynamic_symbols(const std::string& path) {
  // Mapped, not read: a CUDA model's library can be tens of MB, and only its
  // headers and dynamic symbol tables are looked at.
  const MappedFile bytes(path, "model library");
  if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    throw Error("'" + path + "' is not a shared library (no ELF header)");
  }
  if (bytes.data()[EI_CLASS] != ELFCLASS64) {
    throw Error("'" + path + "' is not a 64-bit ELF shared library");
  }
  const unsigned char data = bytes.data()[EI_DATA];
  if ((data == ELFDATA2LSB) != host_is_little_endian()) {
    throw Error("'" + path + "' was built for another byte order");
  }
  const auto header = read_at<Elf64_Ehdr>(bytes, 0, path);
  if (header.e_type != ET_DYN) {
    throw Error("'" + path + "' is an ELF file but not a shared library");
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr)) {
    throw Error("'" + path + "' has an unexpected ELF section header size");
  }

  DynamicSymbols out;
  for (uint16_t i = 0; i < header.e_shnum; ++i) {
    const auto section =
        read_at<Elf64_Shdr>(bytes, header.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), path);
    if (section.sh_type != SHT_DYNSYM) continue;
    if (section.sh_link >= header.e_shnum || section.sh_entsize != sizeof(Elf64_Sym)) {
      throw Error("'" + path + "' has a damaged dynamic symbol table");
    }
    const auto strings = read_at<Elf64_Shdr>(
        bytes, header.e_shoff + uint64_t{section.sh_link} * sizeof(Elf64_Shdr), path);
    if (strings.sh_offset > bytes.size() || bytes.size() - strings.sh_offset < strings.sh_size) {
      throw Error("'" + path + "' has a damaged dynamic string table");
    }
    const uint64_t count = section.sh_size / sizeof(Elf64_Sym);
    for (uint64_t s = 1; s < count; ++s) {  // entry 0 is the reserved null symbol
      const auto sym = read_at<Elf64_Sym>(bytes, section.sh_offset + s * sizeof(Elf64_Sym), path);
      if (sym.st_name >= strings.sh_size) continue;
      const char* begin =
          reinterpret_cast<const char*>(bytes.data()) + strings.sh_offset + sym.st_name;
      const size_t limit = strings.sh_size - sym.st_name;
      const size_t length = strnlen(begin, limit);
      if (length == 0 || length == limit) continue;  // unnamed or unterminated
      std::string name(begin, length);
      (sym.st_shndx == SHN_UNDEF ? out.undefined : out.defined).push_back(std::move(name));
    }
  }
  return out;
}

#else

DynamicSymbols read_dynamic_symbols(const std::string& path) {
  throw Error("reading symbols of '" + path + "' needs an ELF platform");
}

#endif

}  // namespace aotishim::runner
