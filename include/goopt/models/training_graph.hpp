#pragma once
/// @file
/// @brief The training-graph transform: a forward graph becomes one training step (forward,
/// loss, reverse-mode backward pass, optimizer updates), the kind of graph GO (NeurIPS'20) places.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
#include <goopt/models/gradient_rules.hpp>
#include <goopt/ops/attributes.hpp>
#include <goopt/ops/op_kind.hpp>
#include <goopt/ops/op_table.hpp>
#include <goopt/ops/shape.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace goopt::models {

/// The parameter update rule appended for every trained weight.
enum class optimizer_kind { sgd, adam };

/// Knobs of make_training_graph; the defaults are Adam's (Kingma & Ba, ICLR'15).
struct training_options {
    optimizer_kind optimizer = optimizer_kind::adam;
    double learning_rate = 1e-3;
    double beta1 = 0.9;     ///< Adam's first-moment decay
    double beta2 = 0.999;   ///< Adam's second-moment decay
    double epsilon = 1e-8;  ///< Adam's denominator guard
    /// Where the transform's warnings go, one line each (the library prints nothing): a forward
    /// graph in which no parameter (`weight` op) reaches the loss gives a step with no backward
    /// pass and no update, which is said here.
    std::vector<std::string>* warnings = nullptr;
};

/// @brief The training step of `forward`.
///
/// What is appended, after a copy of every forward op (ids, names, layers kept):
/// - the loss: a scalar, the sum over the forward graph's outputs of reduce_mean over all axes
///   (ops `loss/mean/<i>` and `loss`, marked as a graph output). A real model's loss differs, but
///   the structure of a step does not depend on it: each output receives one seed gradient.
/// - the backward pass, in reverse topological order: every forward op that lies on a path from a
///   weight to the loss gets its gradient ops (named `grad/<op>/<k>`, in the op's layer); ops with no
///   weight upstream get none, and `constant` ops (a model file's exponents, epsilons, indices) are
///   not parameters. Existing ops express a gradient where they do so exactly (matmul and
///   transpose for matmul, reduce_sum to undo broadcasting, split / concat / slice / pad / reshape
///   / transpose as each other's inverses); the rest use the gradient kinds of ops::op_kind.
///   Partial gradients of a tensor with several consumers are summed by one add_n.
/// - per weight that receives a gradient: `<w>.sgd_update` (w, g, lr) -> w', or `<w>.adam_update`
///   (w, g, m, v, lr, beta1, beta2) -> w', m', v' with m and v new weights `<w>.adam_m` and
///   `<w>.adam_v` (persistent memory, like every weight). The update outputs are graph outputs.
///   The hyperparameters are scalar const_fill ops `optimizer/...`, shared by all updates; Adam's
///   bias correction (lr * sqrt(1 - beta2^t) / (1 - beta1^t)) belongs in the learning rate's value.
/// - colocation: a weight, its optimizer-state weights, the op producing its final (accumulated)
///   gradient and its update op form one group. Weights whose final gradients come from one op
///   (lstm_cell_grad's dw, du, db; layernorm_grad's dgamma, dbeta) share that op and so one group.
///   A weight already in a forward colocation group keeps that group number.
///
/// Batchnorm is the inference form with given mean and variance; gradients flow into all five of
/// its inputs, so running statistics held as weights get updates too (standing in for the
/// moving-average assignments of a real training step). gather's indices, maxpool's argmax and
/// integer tensors have no gradient.
/// @throws goopt::error naming the op when an op without a gradient rule (a gradient or update
///         kind, see models::detail::gradient_table) lies on a path from a weight to the loss, or
///         when the forward graph has no floating-point output.
inline graph::computation_graph make_training_graph(const graph::computation_graph& forward,
                                                    const training_options& options = {});

// ---- implementation ----

namespace detail {

/// Appends the backward pass and the updates to a copy of the forward graph. Reads the forward
/// graph's ops and types from `fwd` (never from `g`, whose vectors move as ops are added).
class backward_pass : gradient_builder {
public:
    backward_pass(const graph::computation_graph& fwd, const training_options& opt)
        : gradient_builder(fwd), fwd_(fwd), opt_(opt) {}

    graph::computation_graph run() {
        const std::size_t n_ops = fwd_.num_ops(), n_tensors = fwd_.num_tensors();
        g.reserve(4 * n_ops + 64, 5 * n_tensors + 64);
        if (!fwd_.name().empty()) g.set_name(fwd_.name() + ".train");
        const auto order = graph::topological_order(fwd_);
        mark_weight_dependent(order);
        contrib.resize(n_tensors);
        add_loss();
        grad_of_weight_.assign(n_ops, no_tensor);
        for (std::size_t k = order.size(); k-- > 0;) {
            const auto o = static_cast<op_id>(order[k]);
            const graph::op& op = fwd_.get_op(o);
            layer = op.layer;
            if (op.kind == op_kind::weight) {
                prefix = "grad/" + op.name;
                grad_of_weight_[o] = accumulate(op.outputs[0], 0);
                continue;
            }
            if (op.spec().has(ops::source)) continue;
            differentiate(o);
        }
        add_updates();
        return std::move(g);
    }

private:
    // ---- bookkeeping

    void mark_weight_dependent(const std::vector<std::size_t>& order) {
        needs_.assign(fwd_.num_tensors(), 0);
        for (const std::size_t i : order) {
            const graph::op& op = fwd_.get_op(static_cast<op_id>(i));
            bool dep = op.kind == op_kind::weight;
            for (std::size_t s = 0; s < op.inputs.size() && !dep; ++s)
                dep = differentiable_slot(op.kind, s) && needs_[op.inputs[s]];
            if (!dep) continue;
            for (const tensor_id t : op.outputs) needs_[t] = !ops::is_integral(fwd_.type_of(t).type);
        }
    }

    /// The gradient of a forward tensor: its one partial gradient, or add_n of several.
    tensor_id accumulate(tensor_id t, std::size_t k) {
        auto& parts = contrib[t];
        if (parts.empty()) return no_tensor;
        if (parts.size() == 1) return parts[0];
        std::vector<tensor_id> in(parts.begin(), parts.end());
        const auto out = g.add(op_kind::add_n, in, {}, prefix + "/acc" + std::to_string(k));
        g.set_layer(g.producer(out[0]), layer);
        return out[0];
    }

    // ---- loss and updates

    void add_loss() {
        std::vector<tensor_id> means;
        const auto& outs = fwd_.outputs();
        for (std::size_t i = 0; i < outs.size(); ++i) {
            const tensor_id t = outs[i];
            const ops::tensor_type& ty = fwd_.type_of(t);
            if (ops::is_integral(ty.type)) continue;
            means.push_back(
                g.add1(op_kind::reduce_mean, {t}, {{attr_id::keepdims, std::int64_t(0)}}, concat("loss/mean/", i)));
            if (!needs_[t]) continue;  // no weight upstream: nothing to differentiate
            // d loss / d output = 1 / size everywhere: the exact gradient of the mean
            layer = fwd_.get_op(fwd_.producer(t)).layer;
            prefix = concat("grad/loss/", i);
            contribute(t, fill(ty.dims, 1.0 / static_cast<double>(ty.num_elements()), ty.type));
        }
        if (means.empty())
            throw error("make_training_graph", concat("graph '", fwd_.name(), "' has no floating-point output"),
                        "an output to define a loss on");
        const tensor_id loss = g.add(op_kind::add_n, means, {}, "loss")[0];
        g.mark_output(loss);
    }

    void add_updates() {
        const bool adam = opt_.optimizer == optimizer_kind::adam;
        std::vector<op_id> weights;  // forward weights that receive a gradient, in id order
        for (op_id w = 0; w < fwd_.num_ops(); ++w)
            if (fwd_.get_op(w).kind == op_kind::weight && grad_of_weight_[w] != no_tensor) weights.push_back(w);
        if (weights.empty() && opt_.warnings) {
            const std::size_t params = fwd_.ops_of_kind(op_kind::weight).size();
            opt_.warnings->push_back(concat(
                "graph '", fwd_.name(), "' has ", params == 0 ? "no parameter" : "no parameter on a path to the loss",
                " (", params, " weights, ", fwd_.ops_of_kind(op_kind::constant).size(), " constants, ",
                fwd_.ops_of_kind(op_kind::input).size(),
                " graph inputs): the training step has no backward pass and no update; if the model's parameters "
                "are graph inputs, import them as parameters (io::onnx_options::param_inputs, goopt --param-inputs)"));
        }
        // union-find over `weights`: two weights whose gradients come from one op share a group
        std::vector<std::size_t> parent(weights.size());
        std::iota(parent.begin(), parent.end(), std::size_t(0));
        auto find = [&parent](std::size_t i) {
            while (parent[i] != i) i = parent[i] = parent[parent[i]];
            return i;
        };
        std::vector<std::vector<op_id>> members(weights.size());
        std::vector<std::int64_t> owner(g.num_ops(), -1);  // gradient producer -> first weight it serves
        for (std::size_t i = 0; i < weights.size(); ++i) {
            const op_id w = weights[i];
            const graph::op& wop = fwd_.get_op(w);
            const tensor_id wt = wop.outputs[0], grad = grad_of_weight_[w];
            const ops::tensor_type ty = fwd_.type_of(wt);
            const op_id producer = g.producer(grad);
            if (owner[producer] >= 0) parent[find(i)] = find(static_cast<std::size_t>(owner[producer]));
            else owner[producer] = static_cast<std::int64_t>(i);
            members[i] = {w, producer};
            const tensor_id lr = scalar(opt_.learning_rate, ty.type, "optimizer/learning_rate");
            graph::output_ids out;
            if (adam) {
                const tensor_id m = g.weight(wop.name + ".adam_m", ty.dims, ty.type);
                const tensor_id v = g.weight(wop.name + ".adam_v", ty.dims, ty.type);
                const tensor_id b1 = scalar(opt_.beta1, ty.type, "optimizer/beta1");
                const tensor_id b2 = scalar(opt_.beta2, ty.type, "optimizer/beta2");
                const tensor_id in[] = {wt, grad, m, v, lr, b1, b2};
                out = g.add(op_kind::adam_update, in, {{attr_id::epsilon, opt_.epsilon}}, wop.name + ".adam_update");
                members[i].push_back(g.producer(m));
                members[i].push_back(g.producer(v));
            } else {
                const tensor_id in[] = {wt, grad, lr};
                out = g.add(op_kind::sgd_update, in, {}, wop.name + ".sgd_update");
            }
            members[i].push_back(g.producer(out[0]));
            // optimizer state and update sit in the weight's layer; the gradient keeps its op's layer
            for (std::size_t k = 2; k < members[i].size(); ++k) g.set_layer(members[i][k], wop.layer);
            for (const tensor_id t : out) g.mark_output(t);
        }
        // group numbers: a forward group of a member is kept, otherwise new numbers after the largest
        std::int32_t next = 0;
        for (const auto& o : fwd_.ops()) next = std::max(next, o.colocation + 1);
        std::vector<std::int32_t> group(weights.size(), -1);
        for (std::size_t i = 0; i < weights.size(); ++i) {
            const std::int32_t c = fwd_.get_op(weights[i]).colocation;
            if (c >= 0 && group[find(i)] < 0) group[find(i)] = c;
        }
        for (std::size_t i = 0; i < weights.size(); ++i) {
            std::int32_t& gr = group[find(i)];
            if (gr < 0) gr = next++;
            for (const op_id o : members[i]) g.set_colocation(o, gr);
        }
    }

    // ---- gradient rules (models/gradient_rules.hpp)

    [[noreturn]] void no_rule(op_id o) const {
        throw error("make_training_graph",
                    concat("op ", fwd_.describe(o),
                           " lies on a path from a weight to the loss, but its kind has no gradient rule"),
                    "an op with one (models/gradient_rules.hpp), or no weight upstream of it");
    }

    void differentiate(op_id o) {
        const graph::op& op = fwd_.get_op(o);
        prefix = "grad/" + op.name;
        counter = 0;
        grad_site site{*this, op, {}, {}};
        bool any = false;
        for (std::size_t k = 0; k < op.outputs.size(); ++k) {
            site.dy.push_back(accumulate(op.outputs[k], k));
            any |= site.dy.back() != no_tensor;
        }
        if (!any) return;
        bool needed = false;
        for (std::size_t s = 0; s < op.inputs.size(); ++s) {
            site.need.push_back(differentiable_slot(op.kind, s) && needs_[op.inputs[s]]);
            needed |= site.need.back();
        }
        if (!needed) return;
        const gradient_rule& rule = gradient_table[static_cast<std::size_t>(op.kind)];
        if (rule.fn == nullptr) no_rule(o);
        rule.fn(site);
    }

    const graph::computation_graph& fwd_;
    training_options opt_;
    std::vector<char> needs_;                ///< forward tensor depends on a weight through differentiable inputs
    std::vector<tensor_id> grad_of_weight_;  ///< per forward op: a weight's final gradient
};

}  // namespace detail

inline graph::computation_graph make_training_graph(const graph::computation_graph& forward,
                                                    const training_options& options) {
    return detail::backward_pass(forward, options).run();
}

}  // namespace goopt::models
