// The Catch2 main of the core tests (tests/cpp/CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
