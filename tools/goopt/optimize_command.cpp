// `goopt optimize`: the main job. A graph and a cluster in; every heuristic baseline and every
// available optimizer of goopt scored by the same simulator; a table of step time and peak memory
// per device with speedups; result.json, the timeline of the best decisions and the search curve.
#include "cli.hpp"

#include <goopt/io/result_json.hpp>
#include <goopt/io/svg_timeline.hpp>
#include <goopt/io/svg_training_curve.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/tasks/joint.hpp>
#include <goopt/tasks/nothing_to_decide.hpp>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <stdexcept>

namespace goopt::cli {

namespace {

/// One task of --tasks: what it does, whether this build has it, and how it runs. A graph-to-graph
/// stage (`rewrite`: substitution) runs first, on the graph given; a decision task (`decide`) runs on
/// the graph the stages leave, after the baselines, from m-ETF's decision. The table drives the help,
/// the validation of --tasks, the default (every available task, in this order) and the dispatch.
struct task_entry {
    std::string_view name;
    std::string_view help;  ///< what it decides, for --help
    task_status (*status)();
    bool learned;  ///< trains a policy, so --checkpoint can start it
    stage_result (*rewrite)(const optimize_context&);
    method_result (*decide)(const optimize_context&, const decisions& m_etf);
};

constexpr task_entry task_table[] = {
    {"substitution", "a cheaper equivalent graph, before the others", substitution_status, false, optimize_substitution,
     nullptr},
    {"placement", "a device per op", placement_status, true, nullptr, optimize_placement},
    {"scheduling", "a priority per op", scheduling_status, true, nullptr,
     [](const optimize_context& ctx, const decisions& metf) { return optimize_scheduling(ctx, metf); }},
    {"fusion", "fusion groups", fusion_status, true, nullptr, optimize_fusion},
};

/// Every task either rewrites the graph or decides on it, and only deciding tasks learn a policy.
/// Checked when the command is made, not by a static_assert: a function's address compared with
/// null is not a constant expression in every build (GCC 12 with the sanitizers refuses it).
bool well_formed(const task_entry& t) {
    return t.status && (t.rewrite == nullptr) != (t.decide == nullptr) && (!t.learned || t.decide);
}

/// The entry of a task name that --tasks accepted (CLI::IsMember of task_names()).
const task_entry& task_named(std::string_view name) {
    const auto* t =
        std::find_if(std::begin(task_table), std::end(task_table), [&](const task_entry& e) { return e.name == name; });
    GOOPT_ASSERT(t != std::end(task_table));
    return *t;
}

std::vector<std::string> task_names() {
    if (!std::all_of(std::begin(task_table), std::end(task_table), well_formed))
        throw std::logic_error(
            "goopt optimize: a task of the table neither rewrites nor decides, or learns without "
            "deciding");
    std::vector<std::string> names;
    for (const auto& t : task_table) names.emplace_back(t.name);
    return names;
}

/// "placement, scheduling or fusion": the tasks that learn a policy.
std::string learned_tasks() {
    std::vector<std::string_view> names;
    for (const auto& t : task_table)
        if (t.learned) names.push_back(t.name);
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i)
        out += concat(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
    return out;
}

std::string tasks_help() {
    std::string out = "What goopt optimizes, comma-separated:";
    for (const auto& t : task_table)
        out += concat(" ", t.name, " (", t.help, ")", &t + 1 == std::end(task_table) ? "" : ",");
    return out +
           "; default: every task this build has. Two or more of placement, scheduling and fusion also train "
           "one policy deciding them together (go_placement+scheduling+fusion, ...)";
}

struct optimize_flags {
    graph_source source;
    std::string cluster;
    std::vector<std::string> tasks;
    budget limits;
    std::uint64_t seed = 1;
    std::string checkpoint, out, svg, curve;
    bool quiet = false;
    cost_table_flags measured;  // --cost-table: the simulator's and the substitution stage's op times
    cost_model_type cost{};     // made from it once the graph and cluster are loaded
};

/// The tasks to run: the ones asked for (each must be available), or every available one.
std::vector<std::string> tasks_to_run(const optimize_flags& f) {
    std::vector<std::string> run;
    if (f.tasks.empty()) {
        for (const auto& t : task_table)
            if (t.status().available) run.emplace_back(t.name);
        return run;
    }
    for (const auto& t : f.tasks) {
        if (std::find(run.begin(), run.end(), t) != run.end()) continue;
        if (const auto st = task_named(t).status(); !st.available) throw missing_capability(t, st.capability);
        run.push_back(t);
    }
    return run;
}

std::string memory_list(const sim::simulation_result& r) {
    std::int64_t top = 0;
    for (auto b : r.peak_memory) top = std::max(top, b);
    const bool gib = top >= std::int64_t{1} << 30;
    const double unit = gib ? 1024.0 * 1024 * 1024 : 1024.0 * 1024;
    std::string s;
    char buf[32];
    for (std::size_t k = 0; k < r.peak_memory.size(); ++k) {
        std::snprintf(buf, sizeof buf, "%s%.*f%s", k ? " " : "", gib ? 2 : 1,
                      static_cast<double>(r.peak_memory[k]) / unit,
                      k < r.out_of_memory.size() && r.out_of_memory[k] ? "!" : "");
        s += buf;
    }
    return s + (gib ? " GiB" : " MiB");
}

/// a / b, or 0 when b is not positive (a graph whose ops all take no time)
double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

io::method_summary summary_of(const method_result& m, double reference) {
    return {.name = m.name,
            .description = m.description,
            .step_time = m.result.step_time,
            .speedup = ratio(reference, m.result.step_time),
            .peak_memory = m.result.peak_memory,
            .oom = m.result.oom,
            .transfers = m.result.num_transfers,
            .bytes_moved = m.result.bytes_moved,
            .decision_seconds = m.seconds};
}

io::training_curve curve_of(const method_result& m) {
    io::training_curve c{.method = m.name};
    for (const auto& p : m.curve) c.points.push_back({p.update, p.samples, p.best_step_time, p.mean_step_time});
    return c;
}

/// One pipeline: the baselines, then the deciding tasks (from m-ETF's decision), on one graph.
struct pipeline {
    std::string label;  ///< "" when the run has one pipeline, else "original" or "rewritten"
    std::size_t ops = 0;
    std::vector<method_result> methods = {};
    std::size_t first_learned = 0, best = 0, best_baseline = 0;
    std::vector<io::skipped_task> skipped = {};  ///< default tasks the graph left nothing to decide
};

pipeline run_pipeline(std::string label, const loaded_graph& input, const cluster_type& cluster,
                      const std::vector<std::string>& tasks, const budget& limits, const optimize_flags& f,
                      progress_line& progress) {
    simulator_type s(input.graph, cluster, f.cost);
    const optimize_context ctx{input, s, limits, f.seed, f.checkpoint, progress};
    pipeline p{std::move(label), input.graph.num_ops(), run_baselines(ctx)};
    p.first_learned = p.methods.size();
    // m-ETF's decision starts the learned placement (a copy: `methods` grows below)
    const auto metf =
        std::find_if(p.methods.begin(), p.methods.end(), [](const method_result& m) { return m.name == "m_etf"; });
    if (metf == p.methods.end()) throw error("goopt optimize", "no m_etf baseline", "run_baselines to include m_etf");
    const decisions metf_decision = metf->chosen;
    // Run by default (no --tasks), a task the graph leaves nothing to decide (a graph with no pair that
    // can fuse, a placement with no device holding two ops to order) is left out with its reason;
    // asked for by name, that is the run's error (the user asked a question with no answer).
    auto run = [&](std::string name, auto&& decide) {
        try {
            p.methods.push_back(decide());
            return true;
        } catch (const tasks::nothing_to_decide& e) {
            if (!f.tasks.empty()) throw;
            p.skipped.push_back({std::move(name), e.what(), p.label});
            return false;
        }
    };
    std::vector<std::string> decided;  // the deciding tasks that ran
    for (const auto& t : tasks)
        if (const auto decide = task_named(t).decide)
            if (run(t, [&] { return decide(ctx, metf_decision); })) decided.push_back(t);
    // two or more deciding tasks: also one policy deciding them together (GO's joint optimization)
    auto ran = [&](std::string_view t) { return std::find(decided.begin(), decided.end(), t) != decided.end(); };
    if (ran("placement") + ran("scheduling") + ran("fusion") >= 2) {
        // the best baseline's placement: the pairs' default placement and the placement decoder's anchor
        std::size_t best = 0;
        for (std::size_t i = 1; i < p.first_learned; ++i)
            if (better_method(p.methods[i], p.methods[best])) best = i;
        const auto anchor = p.methods[best];  // a copy: `methods` grows below
        const tasks::joint_tasks joint{ran("placement"), ran("scheduling"), ran("fusion")};
        run("go_" + joint.name(), [&] {
            return optimize_joint(ctx, metf_decision, anchor, ran("placement"), ran("scheduling"), ran("fusion"));
        });
    }
    progress.clear();
    for (std::size_t i = 0; i < p.methods.size(); ++i)
        if (better_method(p.methods[i], p.methods[p.best])) p.best = i;
    for (std::size_t i = 0; i < p.first_learned; ++i)
        if (better_method(p.methods[i], p.methods[p.best_baseline])) p.best_baseline = i;
    return p;
}

void print_row(const method_result& m, double reference, int width) {
    std::printf("%-*s %12s %3s %7.2fx  %-36s %10s\n", width, m.name.c_str(), format_seconds(m.result.step_time).c_str(),
                m.result.oom ? "OOM" : "", ratio(reference, m.result.step_time), memory_list(m.result).c_str(),
                format_seconds(m.seconds).c_str());
}

int run_optimize(optimize_flags& f) {
    // a checkpoint with only non-learned tasks asked for is a usage mistake, whatever this build has
    auto learned = [](const std::vector<std::string>& ts) {
        return std::any_of(ts.begin(), ts.end(), [](const std::string& t) { return task_named(t).learned; });
    };
    const auto no_learned_task = [&] {
        return error(concat("--checkpoint ", f.checkpoint), "none of the tasks to run learns a policy",
                     concat("a learned task (", learned_tasks(), ") to start from the pre-trained policy"));
    };
    if (!f.checkpoint.empty() && !f.tasks.empty() && !learned(f.tasks)) throw no_learned_task();
    const auto tasks = tasks_to_run(f);
    if (!f.checkpoint.empty() && !learned(tasks)) throw no_learned_task();
    f.limits.start = std::chrono::steady_clock::now();
    progress_line progress(f.quiet);
    const loaded_graph input = load_graph(f.source);
    const auto cluster = load_cluster(f.cluster);
    const std::size_t original_ops = input.graph.num_ops();
    if (const auto table = load_cost_table(f.measured)) {  // measured op times, on every device of the cluster
        f.cost = cost_model_of(f.measured, *table, input.graph, cluster.device(0));
        std::printf(
            "cost table %s: %s; the rest by %s of %s\n", f.measured.file.c_str(),
            describe_coverage(cost::coverage(*table, input.graph, subst::runs_per_inference(input.graph))).c_str(),
            describe_fallback(f.cost.fallback()).c_str(), cluster.device(0).name().c_str());
    }

    // Substitution is a graph-to-graph stage; the original graph's default (one device, FIFO) stays
    // in the table as the reference. A stage hands on a rewritten graph only when it is faster on one
    // device; merging branches can still take parallelism from a placement, so the baselines and the
    // deciding tasks then run on both graphs (two pipelines) and the better one is goopt's result.
    method_result original{
        "original_graph", "the graph before substitution: every op on device 0, FIFO", {}, {}, 0, {}, {}};
    loaded_graph rewritten = input;
    bool substituted = false, rewrote = false;
    std::string stage_notes;
    for (const auto& t : tasks) {
        const auto rewrite = task_named(t).rewrite;
        if (!rewrite) continue;
        simulator_type before(rewritten.graph, cluster, f.cost);
        if (!substituted) {
            original.chosen.placement.assign(input.graph.num_ops(), 0);
            original.result = before.run(original.chosen.placement, {.record_trace = false});
        }
        optimize_context ctx{rewritten, before, f.limits, f.seed, f.checkpoint, progress};
        auto stage = rewrite(ctx);
        stage_notes += concat(stage_notes.empty() ? "" : "; ", t, ": ", stage.note);
        rewrote = rewrote || stage.rewritten;
        rewritten.graph = std::move(stage.graph);
        substituted = true;
    }

    // each pipeline gets --steps; with --time, each gets half of what the stages left
    std::vector<pipeline> pipelines;
    const std::size_t runs = rewrote ? 2 : 1;
    for (std::size_t k = 0; k < runs; ++k) {
        budget limits = f.limits;
        if (f.limits.seconds > 0) {
            const double left =
                f.limits.seconds -
                std::chrono::duration<double>(std::chrono::steady_clock::now() - f.limits.start).count();
            limits.seconds = std::max(left, 1e-3) / static_cast<double>(runs - k);
            limits.start = std::chrono::steady_clock::now();
        }
        const bool on_original = rewrote && k == 0;
        pipelines.push_back(run_pipeline(rewrote ? (on_original ? "original" : "rewritten") : "",
                                         on_original ? input : rewritten, cluster, tasks, limits, f, progress));
    }
    // the rewritten graph's pipeline wins only when its best is strictly better
    std::size_t chosen = 0;
    for (std::size_t k = 1; k < pipelines.size(); ++k)
        if (better_method(pipelines[k].methods[pipelines[k].best], pipelines[chosen].methods[pipelines[chosen].best]))
            chosen = k;
    const pipeline& won = pipelines[chosen];
    const loaded_graph& decided = rewrote && chosen == 0 ? input : rewritten;
    const method_result& winner = won.methods[won.best];
    const method_result& best_baseline = won.methods[won.best_baseline];
    const method_result& reference_method = substituted ? original : pipelines.front().methods.front();
    const double reference = reference_method.result.step_time;  // the default: original graph, one device, FIFO

    std::printf("%s: %s, %zu ops%s, on %s (%zu devices); seed %llu, %zu steps%s%s\n", input.name.c_str(),
                input.training ? "training step" : "inference", rewritten.graph.num_ops(),
                rewritten.graph.num_ops() != original_ops
                    ? (" (" + std::to_string(original_ops) + " before substitution)").c_str()
                    : "",
                cluster.description().c_str(), cluster.num_devices(), static_cast<unsigned long long>(f.seed),
                f.limits.steps, f.limits.seconds > 0 ? (", at most " + format_seconds(f.limits.seconds)).c_str() : "",
                runs > 1 ? " per pipeline" : "");
    int width = 16;  // the method column: as wide as the longest name (go_placement+scheduling+fusion)
    for (const auto& p : pipelines)
        for (const auto& m : p.methods) width = std::max(width, static_cast<int>(m.name.size()));
    std::printf("%-*s %12s %3s %8s  %-36s %10s\n", width, "method", "step time", "", "speedup",
                "peak memory per device", "decided in");
    if (substituted) print_row(original, reference, width);
    for (const auto& p : pipelines) {
        if (!p.label.empty()) std::printf("-- on the %s graph (%zu ops):\n", p.label.c_str(), p.ops);
        for (const auto& m : p.methods) print_row(m, reference, width);
    }
    std::printf("goopt's result: %s%s, %s, %.2fx the default (%s), %.2fx the best baseline (%s)\n", winner.name.c_str(),
                won.label.empty() ? "" : (" on the " + won.label + " graph").c_str(),
                format_seconds(winner.result.step_time).c_str(), ratio(reference, winner.result.step_time),
                reference_method.name.c_str(), ratio(best_baseline.result.step_time, winner.result.step_time),
                best_baseline.name.c_str());
    if (runs > 1) {
        const auto& o = pipelines[0].methods[pipelines[0].best];
        const auto& r = pipelines[1].methods[pipelines[1].best];
        std::printf("pipelines: original graph %s (%s), rewritten graph %s (%s): the %s graph's is kept\n",
                    format_seconds(o.result.step_time).c_str(), o.name.c_str(),
                    format_seconds(r.result.step_time).c_str(), r.name.c_str(), won.label.c_str());
    }
    if (!stage_notes.empty()) std::printf("%s\n", stage_notes.c_str());
    for (const auto& p : pipelines)
        for (const auto& m : p.methods)
            if (!m.note.empty())
                std::printf("%s%s: %s\n", m.name.c_str(), p.label.empty() ? "" : (" (" + p.label + ")").c_str(),
                            m.note.c_str());
    std::vector<std::string> left_out;
    for (const auto& t : task_table)
        if (std::find(tasks.begin(), tasks.end(), t.name) == tasks.end() && !t.status().available)
            left_out.emplace_back(t.name);
    for (const auto& p : pipelines)
        for (const auto& t : p.skipped)
            std::printf("left out (nothing to decide%s): %s: %s\n",
                        t.pipeline.empty() ? "" : (" on the " + t.pipeline + " graph").c_str(), t.task.c_str(),
                        t.reason.c_str());
    if (f.tasks.empty() && !left_out.empty()) {
        std::string names;
        for (const auto& t : left_out) names += (names.empty() ? "" : ", ") + t;
        std::printf("not in this build yet: %s (so goopt's result is the best heuristic)\n", names.c_str());
    }
    std::printf("OOM: some device is over its memory capacity (marked '!'); speedup: %s's step time / the method's\n",
                reference_method.name.c_str());

    // the curve shown: that of the best method of the kept pipeline that has one (learned methods
    // and random search)
    const method_result* curved = nullptr;
    for (const auto& m : won.methods)
        if (!m.curve.empty() && (!curved || better_method(m, *curved))) curved = &m;

    if (!f.out.empty()) {
        io::optimize_result r{.model = input.name,
                              .ops = decided.graph.num_ops(),
                              .ops_before_substitution = original_ops,
                              .cluster = cluster.description(),
                              .seed = f.seed,
                              .steps = f.limits.steps,
                              .seconds = f.limits.seconds,
                              .tasks = tasks,
                              .best = winner.name,
                              .best_baseline = best_baseline.name,
                              .decisions = {winner.chosen, winner.name},
                              .substitution = stage_notes};
        for (std::size_t k = 0; k < cluster.num_devices(); ++k)
            r.devices.push_back(
                {cluster.device(k).name(), static_cast<std::int64_t>(cluster.device(k).mem_capacity())});
        if (substituted) r.methods.push_back(summary_of(original, reference));
        for (const auto& p : pipelines)
            for (const auto& m : p.methods) {
                r.methods.push_back(summary_of(m, reference));
                r.methods.back().pipeline = p.label;
            }
        for (const auto& p : pipelines) r.skipped.insert(r.skipped.end(), p.skipped.begin(), p.skipped.end());
        if (runs > 1)
            for (const auto& p : pipelines)
                r.pipelines.push_back({p.label, p.ops, p.methods[p.best].name, p.methods[p.best].result.step_time});
        // after substitution the decisions index the rewritten graph's ops: it travels with them
        if (&decided == &rewritten && substituted) r.graph = rewritten.graph;
        if (curved) r.curve = curve_of(*curved);
        io::write_result_file(f.out, r);
    }
    if (!f.svg.empty()) {
        simulator_type s(decided.graph, cluster, f.cost);
        const auto traced =
            s.run(winner.chosen.placement,
                  {.priorities = winner.chosen.priorities, .fusion = winner.chosen.fusion, .record_trace = true});
        io::write_svg_timeline(f.svg, decided.graph, cluster, traced,
                               {.title = input.name + ": " + winner.name + " on " + cluster.description(),
                                .fusion = winner.chosen.fusion});
    }
    if (!f.curve.empty()) {
        if (!curved)
            throw error(concat("--curve ", f.curve), "no method with a curve ran",
                        "an iterative method among those run");
        std::vector<io::curve_point> points;
        for (const auto& p : curved->curve)
            points.push_back({static_cast<double>(p.update), p.best_step_time, p.mean_step_time});
        std::vector<io::reference_line> lines;
        for (std::size_t i = 0; i < won.first_learned; ++i)
            if (&won.methods[i] != curved && !won.methods[i].result.oom)
                lines.push_back({won.methods[i].name, won.methods[i].result.step_time});
        io::write_svg_training_curve(f.curve, points, lines,
                                     {.title = input.name + " on " + cluster.description() + ": " + curved->name,
                                      .x_label = curved->curve_unit});
    }
    return 0;
}

}  // namespace

command add_optimize_command(CLI::App& root) {
    auto flags = std::make_shared<optimize_flags>();
    auto* app = root.add_subcommand("optimize",
                                    "Optimize a graph on a cluster: every baseline and every available "
                                    "optimizer, scored by one simulator");
    flags->source.add_flags(*app);
    add_cluster_flag(*app, flags->cluster, "4xV100:nvlink");
    app->add_option("--tasks", flags->tasks, tasks_help())
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(CLI::IsMember(task_names()))
        ->type_name("TASK,...");
    app->add_option("--steps", flags->limits.steps, "Rounds of the iterative methods (PPO updates, search rounds)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}))
        ->capture_default_str();
    app->add_option("--time", flags->limits.seconds, "Wall-time budget of the iterative methods in seconds (0: none)")
        ->check(finite_range(0.0, 1e9))
        ->type_name("SECONDS")
        ->capture_default_str();
    app->add_option("--seed", flags->seed, "Seed of every random choice (same seed, same result)")
        ->transform(count())
        ->capture_default_str();
    app->add_option("--checkpoint", flags->checkpoint,
                    "Start the learned placement from a pre-trained policy: FILE, \"shipped\" (the one goopt ships, "
                    "the default where this build has one) or \"none\" (fresh weights)")
        ->type_name("FILE|shipped|none");
    app->add_option("-o,--out", flags->out, "Write the results as JSON (atomically; schema in docs/formats.md)")
        ->type_name("FILE.json")
        ->check(writable_file());
    app->add_option("--svg", flags->svg, "Write the timeline of goopt's result")
        ->type_name("FILE.svg")
        ->check(writable_file());
    app->add_option("--curve", flags->curve, "Write the search/training curve with the baselines as lines")
        ->type_name("FILE.svg")
        ->check(writable_file());
    flags->measured.add_flags(*app);
    app->add_flag("-q,--quiet", flags->quiet, "No progress line (there is none either when stdout is not a terminal)");
    return {app, [flags] { return run_optimize(*flags); }};
}

}  // namespace goopt::cli
