#include <goopt/goopt.hpp>

#include <iostream>
#include <string_view>

int main() {
    const std::string_view version = goopt::version_string;
    std::cout << "goopt " << version << '\n';
    return version.empty() ? 1 : 0;
}
