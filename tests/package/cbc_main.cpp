// Links goopt::cbc from the installed package: the ILP extraction takes an op shared by both
// outputs of a small extraction program, which a one-class-at-a-time search cannot reach.
#include <goopt/subst/search/ilp_extraction.hpp>

#include <chrono>
#include <iostream>
#include <memory>

int main() try {
    goopt::subst::extraction_problem p;
    p.nodes.resize(3);
    p.op_cost = {0.0, 3e-6, 3e-6, 5e-6};  // a free leaf, each output's own op, one two-output op
    p.nodes[2] = {{0, 0, {}}};
    p.nodes[0] = {{0, 1, {2}}, {1, 3, {2}}};
    p.nodes[1] = {{0, 2, {2}}, {1, 3, {2}}};
    p.roots = {0, 1};
    auto report = std::make_shared<goopt::subst::ilp_report>();
    const auto ch = goopt::subst::cbc_extraction({}, report)(
        p, {0, 0, 0}, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    std::cout << "ilp extraction: " << (ch ? "a choice" : "no choice") << ", cost " << report->objective * 1e6
              << " us, " << (report->optimal ? "optimal" : "not proven optimal") << '\n';
    return ch && (*ch)[0] == 1 && (*ch)[1] == 1 && report->optimal ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
}
