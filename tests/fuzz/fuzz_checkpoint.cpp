// libFuzzer harness for a trainer's checkpoint (rl::ppo's record with tasks::train's inside), read
// back by a resumed training: see checkpoint_input.hpp for the input's layout (record bodies, signed
// by the harness) and for what counts as a finding. A goopt::error is a clean rejection; any other
// exception (fuzz::finding included), a crash, a sanitizer report, a timeout or more than the RSS
// limit is a finding that libFuzzer keeps.
#include "checkpoint_input.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)goopt::fuzz::checkpoint_input(goopt::fuzz::as_text(data, size));
    return 0;
}
