// libFuzzer harness for the decisions reader and the simulator that scores what it reads: see
// decisions_json_input.hpp for what counts as a finding. A goopt::error is a clean rejection; any
// other exception (fuzz::finding included), a crash, a sanitizer report, a timeout or more than the
// RSS limit is a finding that libFuzzer keeps.
#include "decisions_json_input.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)goopt::fuzz::decisions_json_input(goopt::fuzz::as_text(data, size));
    return 0;
}
