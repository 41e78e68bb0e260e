// Forward + backward speed of nn::go_policy<float> (GO's shape: 2 max-pool SAGE layers of 128, 3
// attention layers of 8 heads, segments of 256) on graphs of 1k, 10k ops and the 8-layer GNMT
// training graph, next to Eigen's large square float product measured in the same run and the same
// network in PyTorch (benchmarks/policy_speed_torch.py, when python3 with torch is present).
//   policy_speed [--out FILE] [--repeats N] [--no-torch] [--torch-script FILE]
// Writes a JSON list of {"graph", "nodes", "flops", "goopt_ms", "gflops", "gemm_peak_gflops",
// "fraction_of_peak", "torch_ms", "ratio", "peak_memory_bytes"} (atomically) to FILE (default
// policy_speed.json). flops are counted from the layer shapes (go_policy::flops_forward_backward);
// peak_memory_bytes is the process's peak resident set (getrusage) after that graph's runs.
// glibc's malloc is told to keep freed memory (as PyTorch's CPU allocator does): otherwise every
// fresh n x 128 matrix is returned to the kernel and page-faulted in again (one fault per 4 KiB),
// measured at ~40 % of a pass on one core of this (virtual) machine.
#include "benchmark_main.hpp"

#include <goopt/graph/computation_graph.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/nn.hpp>

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace goopt;
using clock_type = std::chrono::steady_clock;

namespace {

/// A random DAG of `n` ops on [1, 128] tensors (elementwise ops and adds over recent tensors), the
/// shape of a graph a compiler sees after fusion-free lowering.
graph::computation_graph random_graph(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    graph::computation_graph g("random" + std::to_string(n));
    g.reserve(n, n);
    std::vector<graph::tensor_id> ts{g.input("x", ops::shape{1, 128})};
    const ops::op_kind kinds[] = {ops::op_kind::relu, ops::op_kind::tanh, ops::op_kind::sigmoid, ops::op_kind::ewadd};
    std::uniform_int_distribution<int> kind(0, 3);
    while (g.num_ops() < n) {
        std::uniform_int_distribution<std::size_t> pick(ts.size() > 16 ? ts.size() - 16 : 0, ts.size() - 1);
        const auto k = kinds[kind(rng)];
        if (k == ops::op_kind::ewadd) ts.push_back(g.add1(k, {ts[pick(rng)], ts[pick(rng)]}));
        else ts.push_back(g.add1(k, {ts[pick(rng)]}));
    }
    return g;
}

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Eigen's float GEMM on 2048x2048 operands (about 17 GFLOP per product), best of 3.
double gemm_peak_gflops() {
    const Eigen::Index n = 2048;
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
    c.noalias() = a * b;  // warm-up
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
        const auto t0 = clock_type::now();
        c.noalias() = a * b;
        best = std::min(best, seconds_since(t0));
    }
    if (c(0, 0) == 12345.f) std::puts("");  // keep the product observable
    return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best / 1e9;
}

std::int64_t peak_rss_bytes() {
    struct rusage u {};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<std::int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

/// A python3 that imports torch: $PYTHON, then python3 on PATH, then /usr/bin/python3 (Debian's
/// python3-torch lives there even when another python3 comes first on PATH).
std::optional<std::string> find_torch_python() {
    std::vector<std::string> candidates;
    if (const char* p = std::getenv("PYTHON")) candidates.emplace_back(p);
    candidates.emplace_back("python3");
    candidates.emplace_back("/usr/bin/python3");
    for (const auto& c : candidates)
        if (std::system((c + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0) return c;
    return std::nullopt;
}

template <class T> void write_raw(const std::filesystem::path& p, const T* data, std::size_t count) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
    if (!f) throw error("policy_speed", concat("cannot write '", p.string(), "'"));
}

std::optional<double> run_torch(const std::string& python, const std::filesystem::path& script,
                                const nn::graph_features<float>& f, const nn::policy_config& c, int repeats) {
    const auto dir = std::filesystem::temp_directory_path() / ("goopt_policy_speed_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    write_raw(dir / "x.bin", f.x.data(), static_cast<std::size_t>(f.x.size()));
    write_raw(dir / "offsets.bin", f.adj.offsets.data(), f.adj.offsets.size());
    write_raw(dir / "indices.bin", f.adj.indices.data(), f.adj.indices.size());
    write_raw(dir / "order.bin", f.order.data(), f.order.size());
    const std::string cmd =
        python + " '" + script.string() + "' '" + dir.string() + "' " + std::to_string(f.x.rows()) + " " +
        std::to_string(c.features) + " " + std::to_string(c.hidden) + " " + std::to_string(c.sage_layers) + " " +
        std::to_string(c.shared_attention_layers + c.task_choices.size()) + " " + std::to_string(c.heads) + " " +
        std::to_string(c.segment) + " " + std::to_string(c.task_choices[0]) + " " + std::to_string(repeats) + " 2>&1";
    std::string text;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        while (std::fgets(buf, sizeof buf, p)) text += buf;
        ::pclose(p);
    }
    std::filesystem::remove_all(dir);
    const auto at = text.rfind("{\"torch_ms\"");
    if (at == std::string::npos) {
        std::cerr << "policy_speed: the PyTorch script failed: " << text << "\n";
        return std::nullopt;
    }
    return nlohmann::json::parse(text.substr(at, text.find('\n', at) - at)).at("torch_ms").get<double>();
}

int run(int argc, char** argv) {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum: blocks up to 32 MiB come from the heap...
    mallopt(M_TRIM_THRESHOLD, 1 << 30);   // ... and freed heap memory stays mapped (up to 1 GiB)
#endif
    std::string out = "policy_speed.json", script_file;
    int repeats = 3;
    bool no_torch = false;
    bench::command_line cli("policy_speed",
                            "Forward + backward speed of nn::go_policy<float> (GO's shape) on graphs of 1k and 10k "
                            "ops and the 8-layer GNMT training graph, beside Eigen's GEMM peak and the same network "
                            "in PyTorch.");
    cli.add_option("--out", out, "Write the table as a JSON list")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file())
        ->capture_default_str();
    cli.add_option("--repeats", repeats, "Timed runs of each graph (the best counts), after one warm-up")
        ->transform(bench::count(1, 1000))
        ->type_name("N")
        ->capture_default_str();
    cli.add_flag("--no-torch", no_torch, "Do not measure PyTorch");
    cli.add_option("--torch-script", script_file,
                   "The PyTorch script (default: policy_speed_torch.py beside this source)")
        ->type_name("FILE");
    if (!cli.parse_flags(argc, argv)) return 0;
    const bool torch = !no_torch;
    std::filesystem::path script = script_file;
    const double peak = gemm_peak_gflops();
    std::cout << "Eigen float GEMM 2048^3: " << peak << " GFLOP/s (" << Eigen::nbThreads() << " threads)\n";

    std::optional<std::string> python;
    // next to this source file. CMake passes absolute source paths, but ccache with CCACHE_BASEDIR
    // makes __FILE__ relative to the compiler's working directory, the folder of this executable.
    if (script.empty()) {
        script = std::filesystem::path(__FILE__).parent_path() / "policy_speed_torch.py";
        std::error_code ec;
        if (script.is_relative()) script = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / script;
    }
    if (torch) {
        python = find_torch_python();
        if (!python)
            std::cout << "PyTorch: not measured (no python3 with torch found; apt-get install python3-torch)\n";
        else std::cout << "PyTorch: measured with " << *python << "\n";
    }

    struct named {
        std::string name;
        std::function<graph::computation_graph()> build;
    };
    const std::vector<named> graphs{{"random_1k", [] { return random_graph(1000, 1); }},
                                    {"random_10k", [] { return random_graph(10000, 2); }},
                                    {"gnmt8_train", [] { return models::find_workload("gnmt8").build(); }}};
    std::cout
        << "random_1k, random_10k: random DAGs of 1,000 / 10,000 elementwise ops (relu, tanh, sigmoid, add) on\n"
           "  [1, 128] tensors, each input drawn uniformly from the 16 latest tensors (seeds 1, 2); gnmt8_train:\n"
           "  the model zoo's 8-layer GNMT with its backward pass and optimizer (models::find_workload(\"gnmt8\"))\n";
    const nn::policy_config cfg{};  // GO's shape: 128 wide, 2 SAGE, 2 shared + 1 task attention layers, 8 heads, 256
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    std::printf("%-12s %8s %10s %10s %8s %9s %10s %7s %9s\n", "graph", "nodes", "GFLOP", "goopt ms", "GFLOP/s",
                "of peak", "torch ms", "ratio", "peak MiB");
    for (const auto& gdesc : graphs) {
        const auto g = gdesc.build();
        const auto f = nn::node_features<float>(g);
        std::mt19937_64 rng(42);
        nn::go_policy<float> pol(cfg, rng);
        auto ps = pol.parameters();
        const auto n = static_cast<Eigen::Index>(g.num_ops());
        const std::vector<nn::matrix<float>> dlogits{
            nn::matrix<float>::Random(n, static_cast<Eigen::Index>(cfg.task_choices[0]))};
        double best = 1e30;
        for (int r = 0; r <= repeats; ++r) {  // the first run warms up
            nn::zero_grad(ps);
            const auto t0 = clock_type::now();
            pol.evaluate(f, {});
            pol.backward(dlogits, 1.0f);
            const double t = seconds_since(t0);
            if (r > 0) best = std::min(best, t);
        }
        const double flops = pol.flops_forward_backward(g.num_ops(), f.adj.indices.size());
        const double gflops = flops / best / 1e9;
        const std::int64_t mem = peak_rss_bytes();
        std::optional<double> torch_ms;
        if (python) torch_ms = run_torch(*python, script, f, cfg, repeats);
        nlohmann::ordered_json row{{"graph", gdesc.name},
                                   {"nodes", g.num_ops()},
                                   {"flops", flops},
                                   {"goopt_ms", best * 1e3},
                                   {"gflops", gflops},
                                   {"gemm_peak_gflops", peak},
                                   {"fraction_of_peak", gflops / peak}};
        row["torch_ms"] = torch_ms ? nlohmann::json(*torch_ms) : nlohmann::json(nullptr);
        row["ratio"] = torch_ms ? nlohmann::json(best * 1e3 / *torch_ms) : nlohmann::json(nullptr);
        row["peak_memory_bytes"] = mem;
        results.push_back(row);
        std::printf("%-12s %8zu %10.1f %10.1f %8.1f %8.1f%% %10s %7s %9.0f\n", gdesc.name.c_str(), g.num_ops(),
                    flops / 1e9, best * 1e3, gflops, 100 * gflops / peak,
                    torch_ms ? std::to_string(*torch_ms).substr(0, 9).c_str() : "-",
                    torch_ms ? std::to_string(best * 1e3 / *torch_ms).substr(0, 5).c_str() : "-",
                    static_cast<double>(mem) / (1 << 20));
        std::fflush(stdout);
    }
    bench::write_results(out, results.dump(2) + "\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::run_main("policy_speed", [&] { return run(argc, argv); });
}
