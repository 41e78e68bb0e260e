#pragma once
/// @file
/// @brief A measured model that remembers what it was asked and could not answer: each op
/// configuration a search costed by the fallback, with a graph of that op alone to measure it by.
/// TASO (SOSP'19) §5 measures the configurations its search considers on demand; a search from a
/// fixed table must stay reproducible, so goopt measures between searches instead: search, measure
/// what the search asked about and the table lacked, search again from the grown table (`goopt
/// superopt --calibrate-rounds`). Measuring only the result's configurations never measures a
/// rewrite the fallback misjudged as slower, since the result then never contains it.

#include <goopt/cost/measured_model.hpp>
#include <goopt/cost/op_config.hpp>
#include <goopt/device/concepts.hpp>
#include <goopt/graph/computation_graph.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace goopt::cost {

/// @brief Op `o` of `g` as a graph of its own: each operand a weight where `g` computes it from
/// weights alone (detail::is_fixed), else an input, of the same type; the op's outputs are the
/// graph's. Its one op has `o`'s configuration key, so measuring it measures that configuration.
inline graph::computation_graph single_op_graph(const graph::computation_graph& g, graph::op_id o) {
    const auto& op = g.get_op(o);
    graph::computation_graph one(op.name.empty() ? std::string("op") : op.name);
    std::vector<graph::tensor_id> inputs;
    std::vector<std::pair<graph::tensor_id, graph::tensor_id>> mapped;  // an operand read twice is one source
    for (graph::tensor_id t : op.inputs) {
        const auto it = std::find_if(mapped.begin(), mapped.end(), [&](const auto& m) { return m.first == t; });
        if (it != mapped.end()) {
            inputs.push_back(it->second);
            continue;
        }
        const auto& type = g.type_of(t);
        const auto name = "x" + std::to_string(mapped.size());
        const auto u =
            detail::is_fixed(g, t) ? one.weight(name, type.dims, type.type) : one.input(name, type.dims, type.type);
        mapped.emplace_back(t, u);
        inputs.push_back(u);
    }
    for (graph::tensor_id t : one.add(op.kind, inputs, op.attrs, op.name.empty() ? std::string("op") : op.name))
        one.mark_output(t);
    return one;
}

/// @brief A cost::measured_model that records every measurable op configuration it costed by its
/// fallback (its key, and single_op_graph of the op it was asked about), but for ops on weights alone. Costs are the
/// measured model's, unchanged. Copies share one record (searches copy their model), guarded by a mutex, so that
/// concurrent searches record into it safely; the record is a set of keys, the same whatever order the asks came in.
template <class Fallback = roofline_model> class recording_model {
public:
    /// `record` false: the measured model alone, nothing recorded (no key is made twice, no lock taken).
    explicit recording_model(measured_model<Fallback> model, bool record = true)
        : model_(std::move(model)), record_(record ? std::make_shared<struct record>() : nullptr) {}

    const measured_model<Fallback>& model() const noexcept { return model_; }

    template <device::DeviceModel D>
    double op_time(const graph::computation_graph& g, graph::op_id o, const D& d) const {
        if (auto t = model_.measured(g, o)) return *t;
        if (record_ && is_measurable(g, o) && !on_weights_alone(g, o)) note(g, o);
        return static_cast<double>(model_.fallback().op_time(g, o, d));  // (the table was looked up above)
    }

    /// A group's time, as the measured model gives it (groups are not recorded: a search costs single ops).
    template <device::DeviceModel D>
    double group_time(const graph::computation_graph& g, std::span<const graph::op_id> group, const D& d) const {
        return model_.group_time(g, group, d);
    }

    /// The configurations asked about and not in the table, by key, each with its graph (one op).
    std::map<std::string, graph::computation_graph> unmeasured() const {
        if (!record_) return {};
        std::lock_guard lock(record_->mutex);
        return record_->graphs;
    }

private:
    struct record {
        mutable std::mutex mutex;
        std::map<std::string, graph::computation_graph> graphs;
    };

    /// An op on weights alone is weight preprocessing: it runs once, before the first run (the
    /// runtime folds it), so no search counts it and measuring it would only cost time.
    static bool on_weights_alone(const graph::computation_graph& g, graph::op_id o) {
        const auto& in = g.get_op(o).inputs;
        return !in.empty() &&
               std::all_of(in.begin(), in.end(), [&](graph::tensor_id t) { return detail::is_fixed(g, t); });
    }

    void note(const graph::computation_graph& g, graph::op_id o) const {
        auto key = op_config_key(g, o);
        std::lock_guard lock(record_->mutex);
        if (!record_->graphs.count(key)) record_->graphs.emplace(std::move(key), single_op_graph(g, o));
    }

    measured_model<Fallback> model_;
    std::shared_ptr<record> record_;
};

}  // namespace goopt::cost
