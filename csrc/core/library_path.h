// Which shared library a symbol lives in, for finding files shipped beside
// it (backend plugins, cuBLAS wheels) and for naming libraries in errors.
#pragma once

#include <string>

#include "aotishim/export.h"

namespace aotishim {

// The path of the loaded library (or program) containing `address`; "" if unknown.
AOTISHIM_API std::string library_file_of(const void* address);
// "dir/" of "dir/file" ("" when there is no directory part).
AOTISHIM_API std::string directory_of(const std::string& path);

}  // namespace aotishim
