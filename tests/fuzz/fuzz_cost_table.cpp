// libFuzzer harness for the measured cost table reader: see cost_table_input.hpp for what counts as a
// finding. A goopt::error is a clean rejection; any other exception (fuzz::finding included), a
// crash, a sanitizer report, a timeout or more than the RSS limit is a finding that libFuzzer keeps.
#include "cost_table_input.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)goopt::fuzz::cost_table_input(goopt::fuzz::as_text(data, size));
    return 0;
}
