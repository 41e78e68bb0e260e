// Substitution search on a small inception-style block: three convolutions read one input, each
// followed by batchnorm and relu, and their outputs are concatenated. The greedy search rewrites it
// with the rule library when this build has one and TASO's built-in transformations always (TASO
// SOSP'19 §5: batchnorm folding, activation fusion, merging the convolutions of a shared input,
// kept where they lower the roofline cost); the interpreter then checks that the rewritten block
// computes what the original does.
//
//   build/examples/superoptimize [--rules FILE]
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/graph/builder.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/subst/rewriting/equivalence.hpp>
#include <goopt/subst/search/optimize.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

using namespace goopt;

namespace {

graph::computation_graph inception_block(std::int64_t c, std::int64_t hw) {
    graph::computation_graph g("inception_block");
    graph::builder b(g);
    const auto x = b.input("x", {1, c, hw, hw});
    std::vector<graph::tensor_id> branches;
    for (const std::int64_t k : {1, 3, 3}) {
        const std::string n = "branch" + std::to_string(branches.size());
        auto y = b.conv2d(x, b.weight(n + ".w", {c, c, k, k}), {.name = n + ".conv"});
        y = b.batchnorm(y, b.weight(n + ".scale", {c}), b.weight(n + ".bias", {c}), b.weight(n + ".mean", {c}),
                        b.weight(n + ".var", {c}), 1e-5, n + ".bn");
        branches.push_back(b.relu(y, n + ".relu"));
    }
    g.mark_output(b.concat(branches, 1, "concat"));
    return g;
}

}  // namespace

int main(int argc, char** argv) try {
    std::filesystem::path rules_file;
    if (argc == 3 && std::string(argv[1]) == "--rules") rules_file = argv[2];
    else if (argc != 1) throw error("superoptimize", "unexpected arguments", "none, or --rules FILE");
#if defined(GOOPT_RULES_FILE)
    if (rules_file.empty() && std::filesystem::exists(io::default_rules_file())) rules_file = io::default_rules_file();
#endif
    const std::vector<subst::rule> rules =
        rules_file.empty() ? std::vector<subst::rule>{} : io::read_rules_file(rules_file);
    std::printf("rules: %zu from %s, and TASO's built-in transformations\n", rules.size(),
                rules_file.empty() ? "no rule library (none found)" : rules_file.string().c_str());

    const auto g = inception_block(32, 28);
    const auto v100 = device::parse_cluster("1xV100:pcie").device(0);
    // the greedy search (the default), stopped by its count budget; any SubstitutionSearch fits here
    const auto r =
        subst::optimize(g, rules, cost::roofline_model{}, v100, subst::rewrite_space{}, subst::greedy_method{});
    const auto& s = r.stats;
    std::printf("%zu ops -> %zu ops, inference cost %.1f us -> %.1f us on a V100 (%.2fx), %zu rewrites, bound: %s\n",
                g.num_ops(), r.graph.num_ops(), s.cost_before * 1e6, s.cost_after * 1e6, s.cost_before / s.cost_after,
                s.rules_applied, std::string(subst::name(s.bound)).c_str());
    for (std::size_t i = 0; i < s.applied.size() && i < 6; ++i) std::printf("  %.110s\n", s.applied[i].c_str());
    const double diff = subst::max_relative_difference(g, r.graph);
    std::printf("interpreter: max relative output difference %.2g\n", diff);
    if (!(s.cost_after < s.cost_before) || !(diff < 1e-9))
        throw error("superoptimize", "the search found no cheaper equivalent block", "a gain and equal outputs");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "superoptimize: error: %s\n", e.what());
    return 1;
}
