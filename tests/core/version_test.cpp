#include <goopt/error.hpp>
#include <goopt/version.hpp>

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <type_traits>

TEST_CASE("version_string equals the CMake project version") {
    CHECK(std::string(goopt::version_string) == GOOPT_PROJECT_VERSION);
    const std::string from_parts = std::to_string(goopt::version_major) + "." + std::to_string(goopt::version_minor) +
                                   "." + std::to_string(goopt::version_patch);
    CHECK(from_parts == GOOPT_PROJECT_VERSION);
}

TEST_CASE("goopt::error is a std::runtime_error carrying its message") {
    static_assert(std::is_base_of_v<std::runtime_error, goopt::error>);
    const std::string message = "graph.json: node 'conv1': field 'inputs': expected an array";
    try {
        throw goopt::error(message);
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == message);
        CHECK(dynamic_cast<const goopt::error*>(&e) != nullptr);
        return;
    }
    FAIL("goopt::error was not caught as std::runtime_error");
}
