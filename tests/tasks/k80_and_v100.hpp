#pragma once
// A two-device cluster of different kinds, for the tests of tests/tasks/ (one definition: the
// module's test files share one translation unit).
#include <goopt/device.hpp>

namespace goopt::test {

/// A K80 (device 0) and a V100 (device 1) joined by one link each way: every op is faster on the
/// V100, and moving a tensor costs, so the optimum is every op there; an independent choice per op
/// can learn it, and a pair head tells the two devices apart without a reference placement.
inline device::cluster<device::device_spec> k80_and_v100() {
    device::cluster<device::device_spec> c;
    c.add_device(device::describe(device::k80));
    c.add_device(device::describe(device::v100));
    c.connect(0, 1, c.add_link({"pcie 0->1", 12e9, 10e-6}));
    c.connect(1, 0, c.add_link({"pcie 1->0", 12e9, 10e-6}));
    c.set_description("K80 + V100");
    return c;
}

}  // namespace goopt::test
