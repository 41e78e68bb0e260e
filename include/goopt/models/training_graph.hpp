#pragma once
/// @file
/// @brief The training-graph transform: a forward graph becomes one training step (forward,
/// loss, reverse-mode backward pass, optimizer updates), the kind of graph GO (NeurIPS'20) places.

#include <goopt/error.hpp>
#include <goopt/graph/computation_graph.hpp>
#include <goopt/graph/topological_order.hpp>
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
};

/// @brief The training step of `forward`.
///
/// What is appended, after a copy of every forward op (ids, names, layers kept):
/// - the loss: a scalar, the sum over the forward graph's outputs of reduce_mean over all axes
///   (ops `loss/mean/<i>` and `loss`, marked as a graph output). A real model's loss differs, but
///   the structure of a step does not depend on it: each output receives one seed gradient.
/// - the backward pass, in reverse topological order: every forward op that lies on a path from a
///   weight to the loss gets its gradient ops (named `grad/<op>/<k>`, in the op's layer); ops with no
///   weight upstream get none. Existing ops express a gradient where they do so exactly (matmul and
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
/// @throws goopt::error naming the op when an op without a gradient rule (pow, erf, clip,
///         reduce_max, ...) lies on a path from a weight to the loss, or when the forward graph has
///         no floating-point output.
inline graph::computation_graph make_training_graph(const graph::computation_graph& forward,
                                                    const training_options& options = {});

// ---- implementation ----

namespace detail {

using graph::op_id;
using graph::tensor_id;
using ops::attr_id;
using ops::op_kind;
using ints = std::vector<std::int64_t>;
inline constexpr tensor_id no_tensor = static_cast<tensor_id>(-1);

/// Whether input `slot` of an op of kind k carries a gradient at all.
inline bool differentiable_slot(op_kind k, std::size_t slot) { return !(k == op_kind::gather && slot == 1); }

/// Appends the backward pass and the updates to a copy of the forward graph. Reads the forward
/// graph's ops and types from `fwd` (never from `g`, whose vectors move as ops are added).
class backward_pass {
public:
    backward_pass(const graph::computation_graph& fwd, const training_options& opt) : fwd_(fwd), opt_(opt), g_(fwd) {}

    graph::computation_graph run() {
        const std::size_t n_ops = fwd_.num_ops(), n_tensors = fwd_.num_tensors();
        g_.reserve(4 * n_ops + 64, 5 * n_tensors + 64);
        if (!fwd_.name().empty()) g_.set_name(fwd_.name() + ".train");
        const auto order = graph::topological_order(fwd_);
        mark_weight_dependent(order);
        contrib_.resize(n_tensors);
        add_loss();
        grad_of_weight_.assign(n_ops, no_tensor);
        for (std::size_t k = order.size(); k-- > 0;) {
            const auto o = static_cast<op_id>(order[k]);
            const graph::op& op = fwd_.get_op(o);
            layer_ = op.layer;
            if (op.kind == op_kind::weight) {
                prefix_ = "grad/" + op.name;
                grad_of_weight_[o] = accumulate(op.outputs[0], 0);
                continue;
            }
            if (op.spec().has(ops::source)) continue;
            differentiate(o);
        }
        add_updates();
        return std::move(g_);
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

    /// Adds a gradient op named `<prefix>/<k>` in the current layer.
    graph::output_ids add(op_kind kind, std::span<const tensor_id> in, ops::attribute_map attrs = {}) {
        auto out = g_.add(kind, in, std::move(attrs), prefix_ + "/" + std::to_string(counter_++));
        g_.set_layer(g_.producer(out[0]), layer_);
        return out;
    }
    tensor_id add1(op_kind kind, std::initializer_list<tensor_id> in, ops::attribute_map attrs = {}) {
        return add(kind, std::span<const tensor_id>(in.begin(), in.size()), std::move(attrs))[0];
    }

    const ops::shape& dims(tensor_id t) const { return g_.type_of(t).dims; }
    ops::dtype dtype_of(tensor_id t) const { return g_.type_of(t).type; }

    static ints to_ints(const ops::shape& s) { return ints(s.begin(), s.end()); }

    tensor_id fill(const ops::shape& s, double value, ops::dtype t) {
        return add1(op_kind::const_fill, {},
                    {{attr_id::shape, to_ints(s)}, {attr_id::dtype, std::int64_t(t)}, {attr_id::value, value}});
    }

    /// A shared scalar constant (few distinct values: a linear scan is the fast lookup).
    tensor_id scalar(double value, ops::dtype t, const char* name) {
        for (const auto& [v, ty, id] : scalars_)
            if (v == value && ty == t) return id;
        std::string n = std::string(name) + (t == ops::dtype::f32 ? "" : "." + std::string(ops::name(t)));
        const tensor_id id = g_.add1(
            op_kind::const_fill, {},
            {{attr_id::shape, ints{}}, {attr_id::dtype, std::int64_t(t)}, {attr_id::value, value}}, std::move(n));
        scalars_.emplace_back(value, t, id);
        return id;
    }

    void contribute(tensor_id forward_tensor, tensor_id grad) { contrib_[forward_tensor].push_back(grad); }

    /// The gradient of a forward tensor: its one partial gradient, or add_n of several.
    tensor_id accumulate(tensor_id t, std::size_t k) {
        auto& parts = contrib_[t];
        if (parts.empty()) return no_tensor;
        if (parts.size() == 1) return parts[0];
        std::vector<tensor_id> in(parts.begin(), parts.end());
        const auto out = g_.add(op_kind::add_n, in, {}, prefix_ + "/acc" + std::to_string(k));
        g_.set_layer(g_.producer(out[0]), layer_);
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
            means.push_back(g_.add1(op_kind::reduce_mean, {t}, {{attr_id::keepdims, std::int64_t(0)}},
                                    "loss/mean/" + std::to_string(i)));
            if (!needs_[t]) continue;  // no weight upstream: nothing to differentiate
            // d loss / d output = 1 / size everywhere: the exact gradient of the mean
            layer_ = fwd_.get_op(fwd_.producer(t)).layer;
            prefix_ = "grad/loss/" + std::to_string(i);
            contribute(t, fill(ty.dims, 1.0 / static_cast<double>(ty.num_elements()), ty.type));
        }
        if (means.empty())
            throw error("make_training_graph: graph '" + fwd_.name() +
                        "' has no floating-point output to define a loss on");
        const tensor_id loss = g_.add(op_kind::add_n, means, {}, "loss")[0];
        g_.mark_output(loss);
    }

    void add_updates() {
        const bool adam = opt_.optimizer == optimizer_kind::adam;
        std::vector<op_id> weights;  // forward weights that receive a gradient, in id order
        for (op_id w = 0; w < fwd_.num_ops(); ++w)
            if (fwd_.get_op(w).kind == op_kind::weight && grad_of_weight_[w] != no_tensor) weights.push_back(w);
        // union-find over `weights`: two weights whose gradients come from one op share a group
        std::vector<std::size_t> parent(weights.size());
        std::iota(parent.begin(), parent.end(), std::size_t(0));
        auto find = [&parent](std::size_t i) {
            while (parent[i] != i) i = parent[i] = parent[parent[i]];
            return i;
        };
        std::vector<std::vector<op_id>> members(weights.size());
        std::vector<std::int64_t> owner(g_.num_ops(), -1);  // gradient producer -> first weight it serves
        for (std::size_t i = 0; i < weights.size(); ++i) {
            const op_id w = weights[i];
            const graph::op& wop = fwd_.get_op(w);
            const tensor_id wt = wop.outputs[0], grad = grad_of_weight_[w];
            const ops::tensor_type ty = fwd_.type_of(wt);
            const op_id producer = g_.producer(grad);
            if (owner[producer] >= 0) parent[find(i)] = find(static_cast<std::size_t>(owner[producer]));
            else owner[producer] = static_cast<std::int64_t>(i);
            members[i] = {w, producer};
            const tensor_id lr = scalar(opt_.learning_rate, ty.type, "optimizer/learning_rate");
            graph::output_ids out;
            if (adam) {
                const tensor_id m = g_.weight(wop.name + ".adam_m", ty.dims, ty.type);
                const tensor_id v = g_.weight(wop.name + ".adam_v", ty.dims, ty.type);
                const tensor_id b1 = scalar(opt_.beta1, ty.type, "optimizer/beta1");
                const tensor_id b2 = scalar(opt_.beta2, ty.type, "optimizer/beta2");
                const tensor_id in[] = {wt, grad, m, v, lr, b1, b2};
                out = g_.add(op_kind::adam_update, in, {{attr_id::epsilon, opt_.epsilon}}, wop.name + ".adam_update");
                members[i].push_back(g_.producer(m));
                members[i].push_back(g_.producer(v));
            } else {
                const tensor_id in[] = {wt, grad, lr};
                out = g_.add(op_kind::sgd_update, in, {}, wop.name + ".sgd_update");
            }
            members[i].push_back(g_.producer(out[0]));
            // optimizer state and update sit in the weight's layer; the gradient keeps its op's layer
            for (std::size_t k = 2; k < members[i].size(); ++k) g_.set_layer(members[i][k], wop.layer);
            for (const tensor_id t : out) g_.mark_output(t);
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
            for (const op_id o : members[i]) g_.set_colocation(o, gr);
        }
    }

    // ---- gradient rules

    /// Gradient through a fused activation, from the op's output y.
    tensor_id through_activation(tensor_id y, tensor_id dy, std::int64_t act) {
        switch (static_cast<ops::activation>(act)) {
            case ops::activation::none:
                return dy;
            case ops::activation::relu:
                return add1(op_kind::relu_grad, {y, dy});
            case ops::activation::sigmoid:
                return add1(op_kind::sigmoid_grad, {y, dy});
            case ops::activation::tanh:
                return add1(op_kind::tanh_grad, {y, dy});
        }
        return dy;
    }

    /// Sums a gradient of a broadcast result back to the operand's shape (numpy broadcasting).
    tensor_id unbroadcast(tensor_id d, const ops::shape& target) {
        const ops::shape& s = dims(d);
        if (s == target) return d;
        const std::size_t lead = s.rank() - target.rank();
        ints axes;
        for (std::size_t i = 0; i < s.rank(); ++i)
            if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(static_cast<std::int64_t>(i));
        tensor_id r = d;
        if (!axes.empty())
            r = add1(op_kind::reduce_sum, {d}, {{attr_id::axes, axes}, {attr_id::keepdims, std::int64_t(1)}});
        if (!(dims(r) == target)) r = add1(op_kind::reshape, {r}, {{attr_id::shape, to_ints(target)}});
        return r;
    }

    /// transpose perm that swaps the last two axes of a rank-r tensor.
    static ints swap_last_two(std::size_t r) {
        ints p(r);
        std::iota(p.begin(), p.end(), std::int64_t(0));
        std::swap(p[r - 1], p[r - 2]);
        return p;
    }

    [[noreturn]] void no_rule(op_id o) const {
        throw error("make_training_graph: op " + fwd_.describe(o) +
                    " lies on a path from a weight to the loss, but its kind has no gradient rule; expected "
                    "an op with one (see models::make_training_graph), or no weight upstream of it");
    }

    void differentiate(op_id o) {
        const graph::op& op = fwd_.get_op(o);
        prefix_ = "grad/" + op.name;
        counter_ = 0;
        boost::container::small_vector<tensor_id, 2> dy;
        bool any = false;
        for (std::size_t k = 0; k < op.outputs.size(); ++k) {
            dy.push_back(accumulate(op.outputs[k], k));
            any |= dy.back() != no_tensor;
        }
        if (!any) return;
        boost::container::small_vector<bool, 6> need;
        bool needed = false;
        for (std::size_t s = 0; s < op.inputs.size(); ++s) {
            need.push_back(differentiable_slot(op.kind, s) && needs_[op.inputs[s]]);
            needed |= need.back();
        }
        if (!needed) return;
        const auto& in = op.inputs;
        const auto& a = op.attrs;
        const tensor_id y = op.outputs[0], g = dy[0];
        const auto in_dims = [&](std::size_t i) -> const ops::shape& { return fwd_.type_of(in[i]).dims; };
        const auto give = [&](std::size_t i, tensor_id grad) {
            if (need[i]) contribute(in[i], grad);
        };
        switch (op.kind) {
            case op_kind::conv2d: {
                const tensor_id dz = through_activation(y, g, a.get_int(attr_id::activation));
                const auto attrs_for = [&](std::size_t i) {
                    return ops::attribute_map{{attr_id::stride, a.get(attr_id::stride)},
                                              {attr_id::padding, a.get(attr_id::padding)},
                                              {attr_id::dilation, a.get(attr_id::dilation)},
                                              {attr_id::shape, to_ints(in_dims(i))}};
                };
                if (need[0]) give(0, add1(op_kind::conv2d_grad_input, {dz, in[1]}, attrs_for(0)));
                if (need[1]) give(1, add1(op_kind::conv2d_grad_weight, {in[0], dz}, attrs_for(1)));
                break;
            }
            case op_kind::matmul: {
                const tensor_id dz = through_activation(y, g, a.get_int(attr_id::activation));
                if (need[0]) {
                    const tensor_id wt =
                        add1(op_kind::transpose, {in[1]}, {{attr_id::perm, swap_last_two(in_dims(1).rank())}});
                    give(0, unbroadcast(add1(op_kind::matmul, {dz, wt}), in_dims(0)));
                }
                if (need[1]) {
                    const tensor_id xt =
                        add1(op_kind::transpose, {in[0]}, {{attr_id::perm, swap_last_two(in_dims(0).rank())}});
                    give(1, unbroadcast(add1(op_kind::matmul, {xt, dz}), in_dims(1)));
                }
                break;
            }
            case op_kind::ewadd:
                for (std::size_t i = 0; i < 2; ++i)
                    if (need[i]) give(i, unbroadcast(g, in_dims(i)));
                break;
            case op_kind::sub:
                if (need[0]) give(0, unbroadcast(g, in_dims(0)));
                if (need[1])
                    give(1, unbroadcast(add1(op_kind::smul, {g, scalar(-1.0, dtype_of(g), "grad/const/minus_one")}),
                                        in_dims(1)));
                break;
            case op_kind::ewmul:
                for (std::size_t i = 0; i < 2; ++i)
                    if (need[i]) give(i, unbroadcast(add1(op_kind::ewmul, {g, in[1 - i]}), in_dims(i)));
                break;
            case op_kind::div:
                if (need[0]) give(0, unbroadcast(add1(op_kind::div, {g, in[1]}), in_dims(0)));
                if (need[1]) {
                    const tensor_id q = add1(op_kind::ewmul, {g, add1(op_kind::div, {y, in[1]})});
                    give(1, unbroadcast(add1(op_kind::smul, {q, scalar(-1.0, dtype_of(g), "grad/const/minus_one")}),
                                        in_dims(1)));
                }
                break;
            case op_kind::smul:
                if (need[0]) give(0, add1(op_kind::smul, {g, in[1]}));
                if (need[1]) {
                    tensor_id s = add1(op_kind::reduce_sum, {add1(op_kind::ewmul, {g, in[0]})},
                                       {{attr_id::keepdims, std::int64_t(0)}});
                    if (!(dims(s) == in_dims(1)))
                        s = add1(op_kind::reshape, {s}, {{attr_id::shape, to_ints(in_dims(1))}});
                    give(1, s);
                }
                break;
            case op_kind::relu:
                give(0, add1(op_kind::relu_grad, {y, g}));
                break;
            case op_kind::sigmoid:
                give(0, add1(op_kind::sigmoid_grad, {y, g}));
                break;
            case op_kind::tanh:
                give(0, add1(op_kind::tanh_grad, {y, g}));
                break;
            case op_kind::gelu:
                give(0, add1(op_kind::gelu_grad, {in[0], g}));
                break;
            case op_kind::sqrt:
                give(0, add1(op_kind::div, {add1(op_kind::smul, {g, scalar(0.5, dtype_of(g), "grad/const/half")}), y}));
                break;
            case op_kind::identity:
                give(0, g);
                break;
            case op_kind::reshape:
            case op_kind::flatten:
                give(0, add1(op_kind::reshape, {g}, {{attr_id::shape, to_ints(in_dims(0))}}));
                break;
            case op_kind::transpose: {
                ints perm = a.get_ints(attr_id::perm);
                if (!perm.empty()) {
                    ints inv(perm.size());
                    for (std::size_t i = 0; i < perm.size(); ++i)
                        inv[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
                    perm = std::move(inv);
                }
                give(0, add1(op_kind::transpose, {g}, {{attr_id::perm, perm}}));
                break;
            }
            case op_kind::enlarge: {
                const ops::shape& w = in_dims(0);
                const ops::shape& out = fwd_.type_of(y).dims;
                ints b{0, 0, (out[2] - w[2]) / 2, (out[3] - w[3]) / 2}, e(4);
                for (std::size_t i = 0; i < 4; ++i) e[i] = b[i] + w[i];
                give(0, add1(op_kind::slice, {g}, {{attr_id::begin, b}, {attr_id::end, e}}));
                break;
            }
            case op_kind::pad: {
                const auto& p = a.get_ints(attr_id::pads);
                const ops::shape& x = in_dims(0);
                ints b(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(x.rank())), e(x.rank());
                for (std::size_t i = 0; i < x.rank(); ++i) e[i] = b[i] + x[i];
                give(0, add1(op_kind::slice, {g}, {{attr_id::begin, b}, {attr_id::end, e}}));
                break;
            }
            case op_kind::slice: {
                const auto& b = a.get_ints(attr_id::begin);
                const auto& e = a.get_ints(attr_id::end);
                const ops::shape& x = in_dims(0);
                ints p(2 * x.rank());
                for (std::size_t i = 0; i < x.rank(); ++i) {
                    p[i] = b[i];
                    p[x.rank() + i] = x[i] - e[i];
                }
                give(0, add1(op_kind::pad, {g}, {{attr_id::pads, p}}));
                break;
            }
            case op_kind::avgpool2d:
            case op_kind::maxpool2d: {
                const tensor_id dz = through_activation(y, g, a.get_int(attr_id::activation));
                ops::attribute_map pa{{attr_id::kernel, a.get(attr_id::kernel)},
                                      {attr_id::stride, a.get(attr_id::stride)},
                                      {attr_id::padding, a.get(attr_id::padding)}};
                if (op.kind == op_kind::maxpool2d) {
                    give(0, add1(op_kind::maxpool2d_grad, {in[0], dz}, std::move(pa)));
                } else {
                    pa.set(attr_id::shape, to_ints(in_dims(0)));
                    give(0, add1(op_kind::avgpool2d_grad, {dz}, std::move(pa)));
                }
                break;
            }
            case op_kind::concat: {
                if (in.size() == 1) {
                    give(0, g);
                    break;
                }
                ints sizes;
                const std::size_t ax = fwd_.type_of(y).dims.axis(a.get_int(attr_id::axis));
                for (std::size_t i = 0; i < in.size(); ++i) sizes.push_back(in_dims(i)[ax]);
                const tensor_id one[] = {g};
                const auto parts =
                    add(op_kind::split, one, {{attr_id::axis, static_cast<std::int64_t>(ax)}, {attr_id::sizes, sizes}});
                for (std::size_t i = 0; i < in.size(); ++i) give(i, parts[i]);
                break;
            }
            case op_kind::split: {
                if (op.outputs.size() == 1) {
                    give(0, g);
                    break;
                }
                std::vector<tensor_id> parts;
                for (std::size_t k = 0; k < op.outputs.size(); ++k) {
                    const ops::tensor_type& t = fwd_.type_of(op.outputs[k]);
                    parts.push_back(dy[k] != no_tensor ? dy[k] : fill(t.dims, 0.0, t.type));
                }
                give(0, add(op_kind::concat, parts, {{attr_id::axis, a.get_int(attr_id::axis)}})[0]);
                break;
            }
            case op_kind::gather:
                give(0, add1(op_kind::gather_grad, {in[1], g},
                             {{attr_id::axis, a.get_int(attr_id::axis)}, {attr_id::shape, to_ints(in_dims(0))}}));
                break;
            case op_kind::global_avgpool: {
                const ops::shape& x = in_dims(0);
                const double n = static_cast<double>(x.num_elements() / fwd_.type_of(y).dims.num_elements());
                give(0, add1(op_kind::ewmul, {g, fill(x, 1.0 / n, dtype_of(g))}));
                break;
            }
            case op_kind::reduce_sum:
            case op_kind::reduce_mean: {
                const ops::shape& x = in_dims(0);
                ops::shape kept = x;
                const auto& axes = a.get_ints(attr_id::axes);
                std::int64_t count = 1;
                for (std::size_t i = 0; i < x.rank(); ++i) {
                    bool r = axes.empty();
                    for (const auto ax : axes) r |= x.axis(ax) == i;
                    if (r) {
                        count *= x[i];
                        kept[i] = 1;
                    }
                }
                tensor_id d = g;
                if (!(dims(d) == kept)) d = add1(op_kind::reshape, {d}, {{attr_id::shape, to_ints(kept)}});
                const double scale = op.kind == op_kind::reduce_mean ? 1.0 / static_cast<double>(count) : 1.0;
                give(0, add1(op_kind::ewmul, {d, fill(x, scale, dtype_of(g))}));
                break;
            }
            case op_kind::batchnorm: {
                const tensor_id args[] = {in[0], in[1], in[3], in[4], g};
                const auto r = add(op_kind::batchnorm_grad, args, {{attr_id::epsilon, a.get(attr_id::epsilon)}});
                for (std::size_t i = 0; i < 5; ++i) give(i, r[i]);
                break;
            }
            case op_kind::softmax:
                give(0, add1(op_kind::softmax_grad, {y, g}, {{attr_id::axis, a.get(attr_id::axis)}}));
                break;
            case op_kind::layernorm: {
                const tensor_id args[] = {in[0], in[1], g};
                const auto r =
                    add(op_kind::layernorm_grad, args,
                        {{attr_id::axis, a.get(attr_id::axis)}, {attr_id::epsilon, a.get(attr_id::epsilon)}});
                for (std::size_t i = 0; i < 3; ++i) give(i, r[i]);
                break;
            }
            case op_kind::lstm_cell: {
                const ops::tensor_type& h = fwd_.type_of(op.outputs[0]);
                const tensor_id dh = dy[0] != no_tensor ? dy[0] : fill(h.dims, 0.0, h.type);
                const tensor_id dc = dy[1] != no_tensor ? dy[1] : fill(h.dims, 0.0, h.type);
                const tensor_id args[] = {in[0], in[1], in[2], in[3], in[4], in[5], dh, dc};
                const auto r = add(op_kind::lstm_cell_grad, args);
                for (std::size_t i = 0; i < 6; ++i) give(i, r[i]);
                break;
            }
            case op_kind::gru_cell: {
                const tensor_id args[] = {in[0], in[1], in[2], in[3], in[4], g};
                const auto r = add(op_kind::gru_cell_grad, args);
                for (std::size_t i = 0; i < 5; ++i) give(i, r[i]);
                break;
            }
            default:
                no_rule(o);
        }
    }

    const graph::computation_graph& fwd_;
    training_options opt_;
    graph::computation_graph g_;
    std::vector<char> needs_;  ///< forward tensor depends on a weight through differentiable inputs
    std::vector<boost::container::small_vector<tensor_id, 2>> contrib_;  ///< partial gradients per forward tensor
    std::vector<tensor_id> grad_of_weight_;                              ///< per forward op: a weight's final gradient
    std::vector<std::tuple<double, ops::dtype, tensor_id>> scalars_;
    std::string prefix_;
    std::uint32_t counter_ = 0;
    std::int32_t layer_ = -1;
};

}  // namespace detail

inline graph::computation_graph make_training_graph(const graph::computation_graph& forward,
                                                    const training_options& options) {
    return detail::backward_pass(forward, options).run();
}

}  // namespace goopt::models
