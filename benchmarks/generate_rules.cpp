// Generates TASO-style substitution rules: enumerates every graph of up to K ops over TASO's
// operator set, pairs graphs with equal fingerprints, prunes redundant pairs, re-checks the rest
// with the float interpreter at two other sets of shapes, proves each from the operator axioms,
// and writes the rule file.
//
//   build/benchmarks/generate_rules --max-ops K [--threads N] --out rules.json
//
// stdout: one JSON line {"max_ops", "graphs", "candidates", "after_renaming", "after_subgraph",
// "after_supergraph", "after_transitivity", "verified", "rejected", "not_proven", "seconds",
// "peak_memory_bytes"} (verified: passed the float re-check and proven from the axioms; not_proven:
// rejected although the float re-check passed);
// stderr: a table.
#include "benchmark_main.hpp"

#include <goopt/io/rule_json.hpp>
#include <goopt/subst.hpp>

#include <cstdio>
#include <string>
#include <thread>

int main(int argc, char** argv) {
    return goopt::bench::run_main("generate_rules", [&] {
        goopt::subst::generation_config cfg{.max_ops = 3, .threads = 0};
        std::string out = "rules.json";
        goopt::bench::command_line cli("generate_rules",
                                       "Enumerates TASO's graphs of up to K ops, pairs those of equal fingerprints, "
                                       "prunes, re-checks and proves the pairs, and writes the rule file.");
        cli.add_option("--max-ops", cfg.max_ops, "K: ops on each side of a rule")
            ->transform(goopt::bench::count())
            ->type_name("K")
            ->capture_default_str();
        cli.add_option("--threads", cfg.threads, "Worker threads (0: all cores)")
            ->transform(goopt::bench::count())
            ->type_name("N")
            ->capture_default_str();
        cli.add_option("--out", out, "The rule file to write")
            ->type_name("FILE")
            ->check(goopt::bench::writable_file())
            ->capture_default_str();
        if (!cli.parse_flags(argc, argv)) return 0;
        if (cfg.threads == 0) cfg.threads = std::max(1u, std::thread::hardware_concurrency());
        const auto world = goopt::subst::taso_world();
        const goopt::subst::world check[] = {goopt::subst::taso_world({.n = 5, .c = 2, .h = 7, .w = 4}),
                                             goopt::subst::taso_world({.n = 3, .c = 4, .h = 6, .w = 6})};
        const auto result = goopt::subst::generate_rules(world, check, cfg);
        goopt::io::write_rules_file(out, result.rules);
        const auto& s = result.stats;
        std::fprintf(stderr,
                     "max ops %zu, %zu threads\n  graphs enumerated  %12zu\n  candidates         %12zu\n"
                     "  after renaming     %12zu\n  after subgraph     %12zu\n  after supergraph   %12zu\n"
                     "  after transitivity %12zu\n  verified (proven)  %12zu\n  rejected           %12zu\n"
                     "    of which not proven %9zu\n  seconds            %12.2f\n"
                     "rules written to %s\n",
                     s.max_ops, cfg.threads, s.graphs, s.candidates, s.after_renaming, s.after_subgraph,
                     s.after_supergraph, s.after_transitivity, s.verified, s.rejected, s.not_proven, s.seconds,
                     out.c_str());
        std::printf(
            "{\"max_ops\": %zu, \"graphs\": %zu, \"candidates\": %zu, \"after_renaming\": %zu, "
            "\"after_subgraph\": %zu, \"after_supergraph\": %zu, \"after_transitivity\": %zu, \"verified\": %zu, "
            "\"rejected\": %zu, \"not_proven\": %zu, "
            "\"seconds\": %.3f, \"peak_memory_bytes\": %zu}\n",
            s.max_ops, s.graphs, s.candidates, s.after_renaming, s.after_subgraph, s.after_supergraph,
            s.after_transitivity, s.verified, s.rejected, s.not_proven, s.seconds, goopt::bench::peak_memory_bytes());
        return 0;
    });
}
