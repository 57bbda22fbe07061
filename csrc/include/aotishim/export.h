// Symbol visibility for the aotishim shared library.
#pragma once

#if defined(_WIN32)
#define AOTISHIM_API __declspec(dllexport)
#else
#define AOTISHIM_API __attribute__((visibility("default")))
#endif
