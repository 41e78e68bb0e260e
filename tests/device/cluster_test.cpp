#include <goopt/device.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace goopt;

namespace {
struct no_capacity {  // lacks mem_capacity(): not a device
    double peak_flops(ops::dtype) const { return 1; }
    double mem_bandwidth() const { return 1; }
};
struct bare_device {  // the three required members only: traits give the rest
    double peak_flops(ops::dtype) const { return 1; }
    double mem_bandwidth() const { return 1; }
    double mem_capacity() const { return 1; }
};
}  // namespace

static_assert(device::DeviceModel<device::preset>);
static_assert(device::DeviceModel<device::device_spec>);
static_assert(device::DeviceModel<bare_device>);
static_assert(!device::DeviceModel<no_capacity>);

TEST_CASE("presets carry their datasheet figures and traits fill in defaults") {
    CHECK(device::v100.peak_flops(ops::dtype::f32) == 15.7e12);
    CHECK(device::v100.peak_flops(ops::dtype::f16) == 125e12);  // tensor cores
    CHECK(device::a100.mem_bandwidth() == 1555e9);
    CHECK(device::h100.mem_capacity() == 80.0 * (1 << 30));
    CHECK(device::k80.peak_flops(ops::dtype::f64) == 1.455e12);
    CHECK(device::t4.peak_flops(ops::dtype::i8) == 130e12);
    CHECK(device::p100.mem_bandwidth() == 732e9);
    CHECK(device::xeon_8380.peak_flops(ops::dtype::f32) == doctest::Approx(40 * 2.3e9 * 64));
    for (const device::preset* p : device::presets) {
        CHECK_FALSE(p->source.empty());
        CHECK_NOTHROW(device::describe(*p).validate(std::string(p->label)));
    }
    CHECK(device::device_traits<bare_device>::launch_overhead(bare_device{}) == 5e-6);
    CHECK(device::device_traits<bare_device>::name(bare_device{}) == "device");
    CHECK(device::device_traits<device::preset>::name(device::t4) == "T4");
    CHECK(device::find_preset("h100")->name() == "H100");
    CHECK_FALSE(device::find_preset("H200"));
}

TEST_CASE("cluster spec strings build the documented topologies") {
    const auto nv = device::parse_cluster("4xV100:nvlink");
    CHECK(nv.num_devices() == 4);
    CHECK(nv.num_links() == 12);  // one per ordered pair
    CHECK(nv.route(0, 3) != nv.route(3, 0));
    CHECK(nv.get_link(nv.route(1, 2)).bandwidth == 150e9);
    CHECK(nv.route(2, 2) == device::no_link);
    CHECK(nv.description() == "4xV100:nvlink");
    CHECK(nv.device(3).name() == "V100");

    const auto pcie = device::parse_cluster("2xK80:pcie");
    CHECK(pcie.num_devices() == 2);
    CHECK(pcie.num_links() == 1);  // one shared host bus
    CHECK(pcie.route(0, 1) == pcie.route(1, 0));
    CHECK(pcie.get_link(0).transfer_time(15.75e9) == doctest::Approx(1.0 + device::pcie_latency));
    CHECK(device::parse_cluster("8xA100:nvlink").num_links() == 56);
    CHECK(device::parse_cluster("1xcpu:pcie").num_links() == 0);
}

TEST_CASE("impossible cluster specs are clear errors") {
    CHECK_THROWS_WITH_AS(device::parse_cluster("0xV100:nvlink"), doctest::Contains("device count is 0"), error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("4xV200:nvlink"),
                         doctest::Contains("unknown device 'V200': expected one of K80, P100, V100"), error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("4xV100:ring"),
                         doctest::Contains("unknown topology 'ring': expected nvlink or pcie"), error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("V100"), doctest::Contains("expected <count>x<device>:<topology>"),
                         error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("fourxV100:nvlink"), doctest::Contains("is not a number"), error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("-1xV100:nvlink"), doctest::Contains("is not a number"), error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("2xT4:nvlink"),
                         doctest::Contains("T4 has no NVLink: expected 2xT4:pcie"), error);
    CHECK_THROWS_AS(device::parse_cluster("5000xV100:pcie"), error);
    // what is missing or too large is named, with what would be accepted
    CHECK_THROWS_WITH_AS(device::parse_cluster("2xV100"),
                         "cluster spec '2xV100': no topology after the device: expected ':nvlink' or ':pcie' after it, "
                         "e.g. 2xV100:nvlink",
                         error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("3xt4"),
                         doctest::Contains("no topology after the device: expected "
                                           "':nvlink' or ':pcie' after it, e.g. 3xT4:pcie"),
                         error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("99999999999xV100"),
                         "cluster spec '99999999999xV100': device count 99999999999 is more than 1024: expected at "
                         "most 1024",
                         error);
    CHECK_THROWS_WITH_AS(
        device::parse_cluster("99999999999999999999999xV100:pcie"),
        doctest::Contains("device count 99999999999999999999999 is more than 1024: expected at most 1024"), error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("5000xV100:pcie"),
                         doctest::Contains("device count 5000 is more than 1024: expected at most 1024"), error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("4x:nvlink"),
                         doctest::Contains("no device after the count: expected one of K80, P100, V100"), error);
    CHECK_THROWS_WITH_AS(device::parse_cluster("4V100:nvlink"),
                         doctest::Contains("no 'x' between a device count and a device: expected <count>x<device>"),
                         error);
    CHECK(device::parse_cluster("1024xcpu:pcie").num_devices() == 1024);
}

TEST_CASE("links and devices with impossible figures are rejected") {
    device::cluster<> c;
    c.add_device(device::describe(device::v100));
    CHECK_THROWS_WITH_AS(c.add_link({"bad", std::numeric_limits<double>::quiet_NaN(), 0}),
                         doctest::Contains("link 'bad': bandwidth is nan"), error);
    CHECK_THROWS_AS(c.add_link({"bad", 1e9, -1}), error);
    CHECK_THROWS_AS(c.connect(0, 0, 0), error);
    CHECK_THROWS_AS(c.connect(0, 1, 0), error);
    device::device_spec d = device::describe(device::t4);
    d.bandwidth = -5;
    CHECK_THROWS_WITH_AS(d.validate("cluster.json"),
                         doctest::Contains("cluster.json: device 'T4': mem_bandwidth is -5"), error);
    d = device::describe(device::t4);
    d.peak[static_cast<std::size_t>(ops::dtype::bf16)] = std::nan("");
    CHECK_THROWS_WITH_AS(d.validate("x"), doctest::Contains("peak_flops.bf16"), error);
    CHECK_THROWS_AS(device::cluster<>::all_to_all(d, 0, 1, 0), error);
}
