// Benchmark: goopt's optimized models on a real runtime (issue #26, section 4). For each ONNX test
// model, at batch 1 and 8, and for TASO's models as its model files build them (exported with random
// weights, at batch 1), goopt imports the file, searches (greedy unless --method eqsat, roofline cost
// of the CPU preset) and exports the result in this process; onnxruntime (Node.js, tools/ort/time_models.js,
// a child process) runs the original and goopt's model at its highest graph optimization level with
// 1 and 2 threads, compares their outputs on random inputs in [-1, 1] and times both, interleaved.
//
//   runtime [--out FILE] [--quick] [--model NAME]... [--repeat 30] [--rules FILE] [--keep DIR]
//           [--cost-model roofline|measured --cost-table FILE] [--unmeasured scaled|shape|refuse]
//           [--min-gain G] [--runtime-gate G] [--control] [--batch N]... [--method greedy|eqsat]
//
// With --cost-model measured the search costs ops by a table 'goopt calibrate' measured on this
// machine (the rest by the roofline scaled by the table's error, cost::unbiased_model). With a
// --cost-table (either model) the rows run at the table's thread count only, and each row gives the
// gain both models predict for goopt's graph. --unmeasured refuse keeps the measured search to
// configurations the table measured (each one it lacks costs about a second), so that its predicted
// gain is a measured one (a result with a configuration the table lacks is handed back). --min-gain G hands back the
// original file itself where the search's own model predicts less than G (a gain under the table's noise is not worth
// the risk of a slowdown; zero gain is never slower). --control also times the original against itself in the same
// rounds (control_gain: the noise of the row's own timing). --runtime-gate G times goopt's model against the original
// first, in rounds of its own on other inputs, and hands back the original where the median round gains less than G
// (runtime_gate_gain; goopt superopt --runtime-gate): the row's timing is then a second, independent measurement.
// With a table, the gate's rounds also give each cost model's fidelity over every graph the search
// returned, kept or handed back (runtime_gate_median_gain against runtime_gate_predicted_gain).
//
// Why a C++ program driving node rather than a script: goopt's side (import, search, export, the
// predicted gain) is the library's API, called as a user of it would, and the rows need the search's
// own figures; onnxruntime's only offline CPU build here is the Node.js package, so that half runs
// in node. The row's max_rel_diff must be at most 1e-4 (else the program exits 1 after the table).
#include "benchmark_main.hpp"

#include <goopt/error.hpp>
#if defined(GOOPT_HAS_ONNX)
#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/roofline_model.hpp>
#include <goopt/device/cluster_spec.hpp>
#include <goopt/device/preset.hpp>
#include <goopt/graph/validate.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/cost_table_json.hpp>
#include <goopt/io/onnx.hpp>
#include <goopt/io/rule_json.hpp>
#include <goopt/models/zoo.hpp>
#include <goopt/subst/inference_cost.hpp>
#include <goopt/subst/search/eqsat_search.hpp>
#include <goopt/subst/search/optimize.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#endif

namespace goopt {
namespace {

#if defined(GOOPT_HAS_ONNX)

/// A model of the table: its file under tests/data/onnx (or, for a built-in graph, none) and the
/// batch axis of each data input, in the file's order (sequence-first tensors have it at 1; a GRU's
/// batch-first input x and its initial state differ).
struct runtime_model {
    const char* name;
    const char* file;               ///< nullptr: the built-in graph `build` makes, exported with random weights
    std::array<int, 3> batch_axes;  ///< of the data inputs (the last one for any further input)
    bool quick;                     ///< in the --quick table (small models: seconds, not minutes)
    /// A built-in graph at a batch (its builder's own knob: the reshapes it bakes in follow it).
    graph::computation_graph (*build)(std::int64_t batch) = nullptr;
    std::int64_t own_batch = 0;      ///< a built-in graph's batch in its builder's defaults
    const char* batch_meaning = "";  ///< a built-in graph: what its batch counts, when not the first input's axis
};

/// A row of a built-in graph: `build` makes it at a batch, `own_batch` is its builders' default,
/// `batch_meaning` what its batch counts where that is not its first input's first axis.
constexpr runtime_model built_in(const char* name, graph::computation_graph (*build)(std::int64_t),
                                 std::int64_t own_batch = 1, const char* batch_meaning = "", bool quick = false) {
    return {name, nullptr, {0, 0, 0}, quick, build, own_batch, batch_meaning};
}

/// The table's models: the ONNX test files, then TASO's five models as TASO's model files build them
/// and ResNet-50 (models/taso_graphs.hpp, the graphs of Tensat's gains; NasRNN is models::nasrnn()),
/// built at the row's batch by their builders and exported by goopt with seeded random weights as
/// initializers. Their own batch is TASO's (1; BERT: 16 sequences of 64 tokens).
constexpr std::array<runtime_model, 16> runtime_models{{
    {"resnet50", "resnet50.onnx", {0, 0, 0}, false},
    {"inception_v3", "inception_v3.onnx", {0, 0, 0}, false},
    {"squeezenet1_1", "squeezenet1_1.onnx", {0, 0, 0}, true},
    {"bert_tiny", "bert_tiny.onnx", {0, 0, 0}, true},
    {"vit_tiny", "vit_tiny.onnx", {0, 0, 0}, true},
    {"transformer_encoder", "transformer_encoder.onnx", {1, 1, 1}, false},
    {"lstm_lm", "lstm_lm.onnx", {1, 1, 1}, true},
    {"gru_bidir", "gru_bidir.onnx", {0, 1, 1}, false},
    {"opaque_ops", "opaque_ops.onnx", {0, 0, 0}, true},
    built_in("resnet50_taso", [](std::int64_t b) { return models::resnet50_taso({.batch = b}); }),
    built_in("resnext50_taso", [](std::int64_t b) { return models::resnext50_taso({.batch = b}); }),
    built_in("inception_v3_taso", [](std::int64_t b) { return models::inception_v3_taso({.batch = b}); }),
    built_in("nasnet_a_taso", [](std::int64_t b) { return models::nasnet_a_taso({.batch = b}); }),
    built_in(
        "nasrnn_taso", [](std::int64_t b) { return models::nasrnn({.batch = b}); }, 1, "", true),
    // a trained NasRNN: one set of weights for every step, as an RNN runs after training
    built_in("nasrnn_shared", [](std::int64_t b) { return models::nasrnn({.batch = b, .shared_weights = true}); }),
    built_in(
        "bert_taso", [](std::int64_t b) { return models::bert_taso({.batch = b}); }, 16,
        "sequences of 64 tokens (the first input is [batch x 64, 768])"),
}};

constexpr double tolerance = 1e-4;  // max |a - b| / max |b| of every row (the bound)

onnx::ModelProto read_model(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    onnx::ModelProto m;
    if (!in || !m.ParseFromIstream(&in)) throw error(file.string(), "not a readable ONNX model", "an ONNX file");
    return m;
}

/// Gives every initializer whose data the file stripped (external data in a file not kept) random
/// values, uniform in +-1/sqrt(fan-in) as a fresh layer of torch.nn would have (all of them are
/// float weights of convolutions, matmuls and gemms in these files). Returns how many it filled.
std::size_t fill_stripped_weights(onnx::ModelProto& m, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::size_t filled = 0;
    for (auto& t : *m.mutable_graph()->mutable_initializer()) {
        if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
        if (t.data_type() != onnx::TensorProto_DataType_FLOAT)
            throw error(concat("initializer '", t.name(), "'"), "stripped and not float32",
                        "stripped weights that are float32 (they get random values)");
        std::int64_t count = 1, fan_in = 1;
        for (int k = 0; k < t.dims_size(); ++k) {
            count *= t.dims(k);
            if (k > 0 || t.dims_size() == 1) fan_in *= t.dims(k);
        }
        const float bound = 1.0F / std::sqrt(static_cast<float>(std::max<std::int64_t>(fan_in, 1)));
        std::uniform_real_distribution<float> u(-bound, bound);
        std::vector<float> values(static_cast<std::size_t>(count));
        for (auto& v : values) v = u(rng);
        t.clear_external_data();
        t.set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
        t.set_raw_data(values.data(), values.size() * sizeof(float));
        ++filled;
    }
    return filled;
}

/// A test model's ONNX file as stored, its stripped initializers given random values;
/// `random_weights` is set to how many.
onnx::ModelProto file_model(const runtime_model& rm, std::size_t& random_weights) {
    auto m = read_model(std::filesystem::path(GOOPT_ONNX_TEST_DIR) / rm.file);
    random_weights = fill_stripped_weights(m, 26);
    return m;
}

/// A built-in graph at `batch`, exported with random weights; `random_weights` is set to how many.
onnx::ModelProto built_in_model(const runtime_model& rm, std::int64_t batch, std::size_t& random_weights) {
    const auto g = rm.build(batch);
    io::onnx_model origin;
    origin.weight_values = io::random_weight_values(g, 26);
    random_weights = origin.weight_values.size();
    return io::to_onnx(g, {.source = &origin}).model;
}

/// The graph inputs that are data (not initializers listed as inputs), in the file's order.
std::vector<onnx::ValueInfoProto*> data_inputs(onnx::ModelProto& m) {
    auto& g = *m.mutable_graph();
    std::vector<std::string> initializers;
    for (const auto& t : g.initializer()) initializers.push_back(t.name());
    std::vector<onnx::ValueInfoProto*> inputs;
    for (auto& v : *g.mutable_input())
        if (std::find(initializers.begin(), initializers.end(), v.name()) == initializers.end()) inputs.push_back(&v);
    return inputs;
}

/// The batch axis of the model's k-th data input.
int batch_axis(const runtime_model& rm, std::size_t k) { return rm.batch_axes[std::min<std::size_t>(k, 2)]; }

/// The batch of the model's first data input, as the file states it.
std::int64_t file_batch(onnx::ModelProto& m, const runtime_model& rm) {
    const auto inputs = data_inputs(m);
    const int axis = batch_axis(rm, 0);
    if (inputs.empty() || inputs[0]->type().tensor_type().shape().dim_size() <= axis)
        throw error(rm.name, "no data input with a batch axis", "a graph input of rank >= 2");
    return inputs[0]->type().tensor_type().shape().dim(axis).dim_value();
}

/// Sets the batch axis of every data input to `batch`, and forgets the shapes the file stated
/// elsewhere (value_info, outputs), which were for its own batch; runtimes infer them again.
void rebatch(onnx::ModelProto& m, const runtime_model& rm, std::int64_t batch) {
    const auto inputs = data_inputs(m);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        auto& shape = *inputs[k]->mutable_type()->mutable_tensor_type()->mutable_shape();
        if (shape.dim_size() > batch_axis(rm, k)) shape.mutable_dim(batch_axis(rm, k))->set_dim_value(batch);
    }
    auto& g = *m.mutable_graph();
    g.clear_value_info();
    for (auto& o : *g.mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
}

std::string serialize(const onnx::ModelProto& m) {
    std::string bytes;
    if (!m.SerializeToString(&bytes)) throw error("protobuf", "could not serialize a model");
    return bytes;
}

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

/// Runs `command` in a shell; its stdout and stderr, and whether it exited 0.
std::pair<std::string, bool> run_command(const std::string& command) {
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (!pipe) throw error(concat("cannot run '", command, "'"));
    std::string out;
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
    const int status = pclose(pipe);
    return {out, status == 0};
}

double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(std::floor(q * static_cast<double>(v.size() - 1) + 0.5))];
}

/// Median and quartiles of a sample, as a row's figure and its spread.
struct spread {
    double median, q1, q3;
};
spread spread_of(const std::vector<double>& v) { return {quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75)}; }

/// Pearson's correlation of the pairs (x[k], y[k]); NaN for fewer than two or no spread.
double correlation(const std::vector<double>& x, const std::vector<double>& y) {
    const double n = static_cast<double>(x.size());
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (std::size_t k = 0; k < x.size(); ++k) mx += x[k] / n, my += y[k] / n;
    for (std::size_t k = 0; k < x.size(); ++k) {
        sxy += (x[k] - mx) * (y[k] - my);
        sxx += (x[k] - mx) * (x[k] - mx);
        syy += (y[k] - my) * (y[k] - my);
    }
    return x.size() < 2 || sxx <= 0 || syy <= 0 ? NAN : sxy / std::sqrt(sxx * syy);
}

/// The cost table of --cost-table, refused unless measured here with the onnxruntime-node of `ort_dir`.
cost::cost_table read_table(const std::string& file, const std::string& ort_dir) {
    const auto package = std::filesystem::path(ort_dir) / "node_modules" / "onnxruntime-node" / "package.json";
    std::ifstream in(package);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("version"))
        throw error("flag --ort-dir", concat("no onnxruntime-node version in ", package.string()),
                    "./bootstrap.sh ort");
    auto table = io::read_measured_table_file(file);
    cost::check_environment(file, table.environment,
                            cost::this_machine(j["version"].get<std::string>(), table.environment.threads), false);
    return table;
}

int run(int argc, char** argv) {
    std::string out, rules_file, keep, node = "node", ort_dir = GOOPT_ORT_DIR;
    std::vector<std::string> only;
    bool quick = false;
    std::size_t repeat = 30;
    std::string cost_flag = "roofline", table_file, unmeasured = "scaled", method = "greedy";
    double min_gain = 0;
    std::optional<double> runtime_gate;
    bool control = false;
    std::vector<std::int64_t> batch_flag;
    bench::command_line cli("runtime",
                            "goopt's optimized ONNX models in onnxruntime: the original and goopt's export, both at "
                            "onnxruntime's highest optimization level, timed interleaved at batch 1 and 8 and 1 and "
                            "2 threads, outputs compared on every row (max_rel_diff <= 1e-4)");
    cli.add_option("--out", out, "Write the rows as a JSON list")
        ->type_name("FILE")
        ->check(goopt::bench::writable_file());
    cli.add_flag("--quick", quick,
                 "Only the small models (squeezenet1_1, bert_tiny, vit_tiny, lstm_lm, opaque_ops, nasrnn_taso)");
    cli.add_option("--model", only, "A model of this benchmark (repeatable; default: all)")
        ->allow_extra_args(false)
        ->type_name("NAME");
    cli.add_option("--repeat", repeat, "Interleaved timed runs of each model per row")
        ->transform(bench::count(30, 100000))
        ->capture_default_str();
    cli.add_option("--rules", rules_file, "The rule library (default: this build's, or $GOOPT_RULES_FILE)")
        ->type_name("FILE");
    cli.add_option("--keep", keep, "Keep the models run (original with its batch and weights, goopt's) in DIR")
        ->type_name("DIR");
    cli.add_option("--cost-model", cost_flag,
                   "What the search minimizes: the roofline of the CPU preset, or op times measured here "
                   "(--cost-table, by 'goopt calibrate'; the rest by the roofline scaled by the table's error)")
        ->check(CLI::IsMember({"roofline", "measured"}))
        ->capture_default_str();
    cli.add_option("--method", method,
                   "The substitution search: greedy, or equality saturation (eqsat, goopt superopt --method eqsat)")
        ->check(CLI::IsMember({"greedy", "eqsat"}))
        ->capture_default_str();
    cli.add_option("--cost-table", table_file,
                   "The table of --cost-model measured; with either model, the rows run at its thread count and give "
                   "the gain both models predict")
        ->type_name("FILE");
    cli.add_option("--unmeasured", unmeasured,
                   "What the measured search costs a configuration the table lacks: the scaled roofline, the "
                   "roofline scaled by the kind's factor at that size (shape), or about a second (refuse: its "
                   "result is fully measured)")
        ->check(CLI::IsMember({"scaled", "shape", "refuse"}))
        ->capture_default_str();
    cli.add_option("--min-gain", min_gain,
                   "Hand back the original file where the search's model predicts a gain below this fraction")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    cli.add_option("--runtime-gate", runtime_gate,
                   "Hand back the original file unless goopt's model, timed against it in onnxruntime in rounds of "
                   "its own before the row's (at the first thread count, other random inputs), gains at least this "
                   "fraction in three rounds of four (the lower quartile; goopt superopt --runtime-gate)")
        ->check(CLI::Range(-1.0, 1.0));
    cli.add_option("--batch", batch_flag, "A batch to run (repeatable; default: 1 and 8)")
        ->allow_extra_args(false)
        ->check(CLI::Range(1, 4096))
        ->type_name("N");
    cli.add_flag("--control", control, "Also time the original against itself in the same rounds (control_gain)");
    cli.add_option("--node", node, "The Node.js program")->capture_default_str();
    cli.add_option("--ort-dir", ort_dir, "Where time_models.js and onnxruntime-node are (./bootstrap.sh ort)")
        ->capture_default_str();
    if (!cli.parse_flags(argc, argv)) return 0;
    for (const auto& name : only)
        if (std::none_of(runtime_models.begin(), runtime_models.end(), [&](const auto& m) { return m.name == name; }))
            throw error("flag --model", concat("unknown model '", name, "'"), "a model of this benchmark");
    const std::filesystem::path script = std::filesystem::path(ort_dir) / "time_models.js";
    if (!std::filesystem::exists(std::filesystem::path(ort_dir) / "node_modules" / "onnxruntime-node"))
        throw error("flag --ort-dir", concat("onnxruntime-node is not installed in ", ort_dir), "./bootstrap.sh ort");
    const auto rules =
        io::read_rules_file(rules_file.empty() ? io::default_rules_file() : std::filesystem::path(rules_file));
    const std::filesystem::path dir =
        keep.empty() ? std::filesystem::temp_directory_path() / concat("goopt_runtime_", ::getpid())
                     : std::filesystem::path(keep);
    std::filesystem::create_directories(dir);
    const device::device_spec cpu = device::describe(device::xeon_8380);
    if (cost_flag == "measured" && table_file.empty())
        throw error("flag --cost-model", "measured without --cost-table", "--cost-table FILE ('goopt calibrate')");
    if (unmeasured == "refuse" && cost_flag != "measured")
        throw error("flag --unmeasured", "refuse without --cost-model measured", "--cost-model measured");
    const auto table = table_file.empty() ? cost::cost_table{} : read_table(table_file, ort_dir);
    const std::string cost_model = cost_flag == "roofline" ? "roofline, CPU preset (Xeon 8380)"
                                                           : concat("measured (", table_file, "), else ",
                                                                    unmeasured == "refuse"  ? "refused"
                                                                    : unmeasured == "shape" ? "scaled roofline by size"
                                                                                            : "scaled roofline");
    const std::string threads = table_file.empty() ? std::string("1,2") : std::to_string(table.environment.threads);
    std::vector<double> predicted_gains, measured_gains, roofline_gains, table_gains;
    // the runtime gate's rounds time every searched graph, kept or handed back: each model's fidelity
    std::vector<double> gate_roofline_gains, gate_table_gains, gate_measured_gains;

    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    std::size_t failed = 0;
    std::printf("%-20s %5s %7s %10s %10s %8s %15s %9s %10s %6s %6s\n", "model", "batch", "threads", "ort_ms",
                "goopt_ms", "gain", "gain IQR", "predicted", "max_rel", "opaque", "weights");
    for (const auto& rm : runtime_models) {
        if (only.empty() ? quick && !rm.quick : std::find(only.begin(), only.end(), rm.name) == only.end()) continue;
        std::size_t random_weights = 0;
        auto source = rm.file ? file_model(rm, random_weights) : onnx::ModelProto{};
        const std::int64_t own_batch = rm.file ? file_batch(source, rm) : rm.own_batch;
        const std::size_t first_row = rows.size();
        // batch 1 and 8; a batch the export baked in is left out, said in the model's rows, and where
        // neither can be, the file's own batch is run instead (a built-in graph is built at each batch)
        std::vector<std::int64_t> batches = batch_flag.empty() ? std::vector<std::int64_t>{1, 8} : batch_flag;
        std::string note;
        if (!rm.file && *rm.batch_meaning) note = concat("a built-in graph whose batch counts ", rm.batch_meaning);
        for (std::size_t b = 0; b < batches.size(); ++b) {
            const std::int64_t batch = batches[b];
            auto original = rm.file ? source : built_in_model(rm, batch, random_weights);
            if (rm.file) rebatch(original, rm, batch);
            const std::string bytes = serialize(original);
            io::onnx_model model;
            try {
                model = io::import_onnx_bytes(bytes, concat(rm.name, " at batch ", batch));
            } catch (const error& e) {
                if (batch == own_batch) throw;
                note += concat(note.empty() ? "" : "; ", "batch ", batch,
                               " left out: the export bakes its batch in (goopt's import: ", e.what(), ")");
                std::printf("%-20s %5lld  left out: the export bakes batch %lld in\n", rm.name,
                            static_cast<long long>(batch), static_cast<long long>(own_batch));
                if (b + 1 == batches.size() && rows.size() == first_row) batches.push_back(own_batch);
                continue;
            }
            // scaled: one factor per kind from the graph's own configurations; shape: the kind's factor
            // also follows the configuration's size, fitted on the whole table (cost/shape_curve.hpp)
            const auto measured_model =
                unmeasured == "shape"
                    ? cost::measured_model<cost::scaled_roofline>(table, cost::scaled_roofline::fit_shape(table, cpu))
                    : cost::unbiased_model(table, model.graph, subst::runs_per_inference(model.graph), cpu);
            const auto refusing = cost::measured_model<cost::scaled_roofline>(
                table, cost::scaled_roofline::uniform(cost::scaled_roofline::refusal_factor));
            auto search = [&](const auto& cost_model) {
                return method == "eqsat" ? subst::named(subst::optimize(model.graph, rules, cost_model, cpu, {},
                                                                        subst::eqsat_method{}))
                                         : subst::named(subst::optimize(model.graph, rules, cost_model, cpu, {},
                                                                        subst::greedy_method{}));
            };
            auto r = cost_flag == "roofline"  ? search(cost::roofline_model{})
                     : unmeasured == "refuse" ? search(refusing)
                                              : search(measured_model);
            graph::validate(r.graph);
            // what a cost model predicts for a graph against the original
            auto model_gain = [&](const graph::computation_graph& g, const auto& c) {
                const double before = subst::inference_cost(model.graph, c, cpu);
                return before > 0 ? 1 - subst::inference_cost(g, c, cpu) / before : 0.0;
            };
            // too small a predicted gain (or a costlier graph): the original file is handed back as it is
            // (a graph the table costs 0, every op under the call's cost, predicts no gain: 0, not NaN)
            const double searched_gain = r.stats.cost_before > 0 ? 1 - r.stats.cost_after / r.stats.cost_before : 0;
            // refusing, a result with configurations the table lacks has no measured cost (where the table
            // measured none of the graph, refusal scales the roofline and keeps its ratios): handed back too
            const auto covered = cost::coverage(table, r.graph, subst::runs_per_inference(r.graph));
            const bool unmeasured_result = unmeasured == "refuse" && covered.measured_configs < covered.configs;
            bool handed_back =
                r.stats.cost_after > r.stats.cost_before || searched_gain < min_gain || unmeasured_result;
            if (handed_back) r.graph = model.graph, r.stats.cost_after = r.stats.cost_before;
            const auto original_file = dir / concat(rm.name, "_b", batch, ".onnx");
            const auto goopt_file = dir / concat(rm.name, "_b", batch, "_goopt.onnx");
            io::atomic_write(original_file, bytes);
            io::onnx_export_report exported;
            if (handed_back) io::atomic_write(goopt_file, bytes);
            else exported = io::write_onnx(r.graph, goopt_file, {.source = &model});
            // the runtime gate: its own rounds on other inputs, so that the row's timing below is a
            // measurement independent of the decision
            std::optional<double> gate_gain, gate_median;
            std::optional<std::pair<double, double>> gate_predicted;  // roofline, table: for the graph gated
            if (runtime_gate && !handed_back) {
                const auto [gate_text, gate_ok] = run_command(
                    concat(shell_quote(node), " ", shell_quote(script.string()), " ",
                           shell_quote(original_file.string()), " ", shell_quote(goopt_file.string()), " --threads ",
                           threads.substr(0, threads.find(',')), " --repeat ", repeat, " --seed ", 1000 + batch));
                nlohmann::json gate;
                if (gate_ok) gate = nlohmann::json::parse(gate_text, nullptr, false);
                if (!gate_ok || gate.is_discarded() || !gate["runs"][0].contains("reference_ms"))
                    throw error(concat(rm.name, " at batch ", batch),
                                concat("the runtime gate's timing failed: ", gate_text));
                const auto a = gate["runs"][0]["reference_ms"].get<std::vector<double>>();
                const auto b = gate["runs"][0]["other_ms"].get<std::vector<double>>();
                std::vector<double> gains(a.size());
                for (std::size_t k = 0; k < a.size(); ++k) gains[k] = 1 - b[k] / a[k];
                gate_gain = quantile(gains, 0.25);  // three rounds in four
                gate_median = quantile(gains, 0.5);
                if (!table_file.empty()) {  // both models' prediction for the graph the gate timed, kept or not
                    gate_predicted = {model_gain(r.graph, cost::roofline_model{}), model_gain(r.graph, measured_model)};
                    gate_roofline_gains.push_back(gate_predicted->first);
                    gate_table_gains.push_back(gate_predicted->second);
                    gate_measured_gains.push_back(*gate_median);
                }
                if (*gate_gain < *runtime_gate) {
                    handed_back = true;
                    r.graph = model.graph, r.stats.cost_after = r.stats.cost_before;
                    io::atomic_write(goopt_file, bytes);
                    exported = {};
                }
            }
            const std::size_t rewrites = handed_back ? 0 : r.stats.rules_applied;
            const auto [text, ok] = run_command(
                concat(shell_quote(node), " ", shell_quote(script.string()), " ", shell_quote(original_file.string()),
                       " ", shell_quote(goopt_file.string()), " --threads ", threads, " --repeat ", repeat, " --seed ",
                       batch, control ? " --control" : ""));
            nlohmann::json ort;
            if (ok) ort = nlohmann::json::parse(text, nullptr, false);
            if (!ok || ort.is_discarded())
                throw error(concat(rm.name, " at batch ", batch), concat("onnxruntime failed: ", text));
            const double predicted = handed_back ? 0.0 : searched_gain;
            const std::size_t opaque = model.graph.ops_of_kind(ops::op_kind::opaque).size();
            for (const auto& run : ort["runs"]) {
                nlohmann::ordered_json row = {{"model", rm.name}, {"batch", batch}, {"threads", run["threads"]}};
                const bool compared = run.contains("max_rel_diff") && run["max_rel_diff"].is_number();
                const double diff = compared ? run["max_rel_diff"].get<double>() : INFINITY;
                if (!(diff <= tolerance)) ++failed;
                std::optional<spread> before, after, gain;
                std::optional<double> min_gain_of_row, control_gain, control_min_gain;
                if (run.contains("reference_ms")) {
                    const auto a = run["reference_ms"].get<std::vector<double>>();
                    const auto b = run["other_ms"].get<std::vector<double>>();
                    std::vector<double> gains(a.size());
                    for (std::size_t k = 0; k < a.size(); ++k) gains[k] = 1 - b[k] / a[k];
                    before = spread_of(a), after = spread_of(b), gain = spread_of(gains);
                    min_gain_of_row = 1 - quantile(b, 0) / quantile(a, 0);
                    if (run.contains("control_ms")) {
                        const auto c = run["control_ms"].get<std::vector<double>>();
                        control_gain = 1 - quantile(c, 0.5) / before->median;
                        control_min_gain = 1 - quantile(c, 0) / quantile(a, 0);
                    }
                }
                auto number = [](std::optional<double> v) {
                    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
                };
                const auto measured =
                    before ? std::optional<double>(1 - after->median / before->median) : std::optional<double>();
                row["ort_ms"] = number(before ? std::optional(before->median) : std::nullopt);
                row["goopt_ort_ms"] = number(after ? std::optional(after->median) : std::nullopt);
                row["measured_gain"] = number(measured);
                // the fastest of the rounds: what each model costs without the machine's busy spells
                row["measured_gain_min"] = number(min_gain_of_row);
                if (control) {
                    row["control_gain"] = number(control_gain);
                    row["control_gain_min"] = number(control_min_gain);
                }
                row["predicted_gain"] = predicted;
                row["handed_back"] = handed_back;
                if (runtime_gate) {
                    row["runtime_gate_gain"] = number(gate_gain);
                    row["runtime_gate_median_gain"] = number(gate_median);
                    if (gate_predicted)
                        row["runtime_gate_predicted_gain"] = {{"roofline", gate_predicted->first},
                                                              {"measured", gate_predicted->second}};
                }
                if (!table_file.empty()) {  // what each model predicts for the same graph
                    row["predicted_gain_roofline"] = model_gain(r.graph, cost::roofline_model{});
                    row["predicted_gain_measured"] = model_gain(r.graph, measured_model);
                    if (measured)
                        roofline_gains.push_back(row["predicted_gain_roofline"].get<double>()),
                            table_gains.push_back(row["predicted_gain_measured"].get<double>());
                    const auto c = cost::coverage(table, r.graph, subst::runs_per_inference(r.graph));
                    row["measured_configs"] = {c.measured_configs, c.configs};
                }
                if (measured) predicted_gains.push_back(predicted), measured_gains.push_back(*measured);
                row["max_rel_diff"] = compared ? nlohmann::ordered_json(diff) : nlohmann::ordered_json();
                row["search"] = method;
                row["cost_model"] = cost_model;
                row["opaque_ops"] = opaque;
                if (before) {
                    row["ort_ms_quartiles"] = {before->q1, before->q3};
                    row["goopt_ort_ms_quartiles"] = {after->q1, after->q3};
                    row["paired_gain_quartiles"] = {gain->q1, gain->q3};
                }
                row["repetitions"] = repeat;
                row["rewrites"] = rewrites;
                row["weights"] = !rm.file             ? concat("random (built-in graph, ", random_weights, " weights)")
                                 : random_weights > 0 ? concat("random (", random_weights, " stripped in the file)")
                                                      : std::string("the file's");
                row["file_batch"] = own_batch;
                // LSTM/GRU nodes of the file written back as they were (their fused kernels kept), and
                // those a rewrite touched (written as their steps)
                row["recurrent_written_back"] = exported.recurrent_written_back;
                row["recurrent_lowered"] = exported.recurrent_lowered;
                if (run.contains("error")) row["error"] = run["error"];
                std::printf("%-20s %5lld %7d %10.3f %10.3f %7.2f%% [%5.1f,%5.1f]%% %8.2f%% %10.2e %6zu %6s\n", rm.name,
                            static_cast<long long>(batch), run["threads"].get<int>(), before ? before->median : NAN,
                            after ? after->median : NAN, measured ? 100 * *measured : NAN, gain ? 100 * gain->q1 : NAN,
                            gain ? 100 * gain->q3 : NAN, 100 * predicted, diff, opaque,
                            random_weights > 0 ? "random" : "file");
                std::fflush(stdout);
                rows.push_back(std::move(row));
            }
        }
        for (std::size_t k = first_row; k < rows.size() && !note.empty(); ++k) rows[k]["batch_note"] = note;
    }
    std::printf("correlation of predicted and measured gain over %zu rows (%s): %.3f\n", measured_gains.size(),
                cost_model.c_str(), correlation(predicted_gains, measured_gains));
    if (!table_file.empty())
        std::printf(
            "correlation with the measured gain of each model's prediction for goopt's graphs: roofline %.3f, "
            "measured (the table) %.3f\n",
            correlation(roofline_gains, measured_gains), correlation(table_gains, measured_gains));
    if (!gate_measured_gains.empty())
        std::printf(
            "correlation with the runtime gate's median gain of each model's prediction for the %zu graphs it timed "
            "(kept or handed back): roofline %.3f, measured (the table) %.3f\n",
            gate_measured_gains.size(), correlation(gate_roofline_gains, gate_measured_gains),
            correlation(gate_table_gains, gate_measured_gains));
    if (keep.empty()) std::filesystem::remove_all(dir);
    if (!out.empty()) bench::write_results(out, rows.dump(1) + "\n");
    if (failed > 0)
        throw error("rows", concat(failed, " rows where goopt's model and the original differ by more than ", tolerance,
                                   " (max_rel_diff) or could not be compared"));
    return 0;
}

#else

int run(int, char**) {
    throw error("goopt::onnx", "this build has no ONNX import and export", "a build with goopt::onnx (libonnx-dev)");
}

#endif

}  // namespace
}  // namespace goopt

int main(int argc, char** argv) {
    return goopt::bench::run_main("runtime", [&] { return goopt::run(argc, argv); });
}
