// `goopt generate-rules`: TASO-style substitution generation (TASO, SOSP'19 §3): every graph of up
// to K ops over TASO's operator set, fingerprinted, paired, pruned, re-checked and proven from the
// operator axioms; writes the verified rules. Under mpirun the ranks divide the work (rank 0 writes
// the file, the single process's byte for byte).
#include "cli.hpp"
#include "ranks.hpp"

#include <goopt/io/rule_json.hpp>
#include <goopt/subst/generation/generate_rules.hpp>
#include <goopt/subst/world.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>

namespace goopt::cli {

namespace {

struct generate_rules_flags {
    std::size_t max_ops = 3;
    std::size_t threads = 0;
    std::string out;
};

int run_generate_rules(const generate_rules_flags& f) {
    subst::generation_config cfg{.max_ops = f.max_ops, .threads = f.threads, .sharding = ranks().generation};
    if (cfg.threads == 0) cfg.threads = std::max(1u, std::thread::hardware_concurrency());
    const auto world = subst::taso_world();
    const subst::world check[] = {subst::taso_world({.n = 5, .c = 2, .h = 7, .w = 4}),
                                  subst::taso_world({.n = 3, .c = 4, .h = 6, .w = 6})};
    const auto result = subst::generate_rules(world, check, cfg);
    io::write_rules_file(f.out, result.rules);
    const auto& s = result.stats;
    std::printf(
        "up to %zu ops, %zu threads%s, %.1f s: %zu graphs, %zu candidates, %zu after renaming, %zu after "
        "subgraph, %zu after supergraph, %zu after transitivity; %zu verified, %zu rejected (%zu not proven)\n"
        "wrote %zu rules to %s\n",
        s.max_ops, cfg.threads, cfg.sharding ? concat(" on each of ", cfg.sharding->ranks(), " ranks").c_str() : "",
        s.seconds, s.graphs, s.candidates, s.after_renaming, s.after_subgraph, s.after_supergraph, s.after_transitivity,
        s.verified, s.rejected, s.not_proven, result.rules.size(), f.out.c_str());
    return 0;
}

}  // namespace

command add_generate_rules_command(CLI::App& root) {
    auto flags = std::make_shared<generate_rules_flags>();
    auto* app = root.add_subcommand("generate-rules",
                                    "Generate and prove TASO-style substitution rules from graphs of up to K ops");
    app->add_option("--max-ops", flags->max_ops, "K: ops on each side of a rule (3: half a minute on 2 cores)")
        ->check(CLI::Range(1, 4))
        ->capture_default_str();
    app->add_option("--threads", flags->threads, "Worker threads (0: all cores)")->capture_default_str();
    app->add_option("-o,--out", flags->out, "The rule file to write (atomically)")
        ->type_name("FILE.json")
        ->check(writable_file())
        ->required();
    return {app, [flags] { return run_generate_rules(*flags); }};
}

}  // namespace goopt::cli
