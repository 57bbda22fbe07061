// The C++ unit tests' entry point (doctest, from the system's doctest-dev).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
