#pragma once
// goopt: optional-edge (part of the ONNX importer, goopt::onnx: included through <goopt/io/onnx.hpp>)
/// @file
/// @brief LSTM and GRU layers, unrolled over their (static) sequence into goopt's lstm_cell and
/// gru_cell ops, one per step and direction, with ONNX's weights rearranged at import time.
///
/// ONNX stacks the gates as W [dirs, gates*H, I], R [dirs, gates*H, H], B [dirs, 2*gates*H] (input
/// bias, then recurrence bias) in the order i, o, f, c (LSTM) and z, r, h (GRU); goopt's cells take
/// w [I, gates*H], u [H, gates*H], b [gates*H] in the order i, f, g, o and r, z, n, so the importer
/// transposes, reorders and, where both biases add outside any gate product, sums them.
///
/// goopt's gru_cell computes n = tanh(x w_n + r * (h u_n) + b_n): ONNX's linear_before_reset = 1,
/// PyTorch's form, but without the recurrence bias Rb_n inside the product with r. A nonzero Rb_n
/// is carried exactly by one extra state unit held at 1: its row of u holds Rb_n, and its update
/// gate's bias (100) saturates the sigmoid to exactly 1 in float and double, so that unit stays
/// (1 - 1) * n + 1 * 1 = 1 at every step. The outputs leave it out.

#include <goopt/io/onnx/importer.hpp>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace goopt::io::detail {

inline void onnx_importer::convert_lstm(const node_t& n, const onnx_handler&) { recurrent(n, true); }

inline void onnx_importer::convert_gru(const node_t& n, const onnx_handler&) { recurrent(n, false); }

inline void onnx_importer::recurrent(const node_t& n, bool lstm) {
    using ops::attr_id;
    const std::string name = node_name(n);
    const std::int64_t G = lstm ? 4 : 3;
    const ops::shape xs = dims_in(n, 0);
    const std::int64_t layout = attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1) fail(n, concat("layout ", layout), "0 ([seq, batch, input]) or 1 (batch first)");
    if (xs.rank() != 3)
        fail(n, concat("X has shape ", xs.to_string()), layout ? "[batch, seq, input]" : "[seq, batch, input]");
    const std::int64_t S = xs[layout ? 1 : 0], B = xs[layout ? 0 : 1], I = xs[2];
    // every step becomes ops of its own: a bound keeps a file's claimed sequence length from
    // growing the graph without limit
    constexpr std::int64_t max_steps = std::int64_t{1} << 16;
    if (S > max_steps) fail(n, concat("a sequence of ", S, " steps to unroll"), concat("at most ", max_steps));
    const std::string direction = attr_string(n, "direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
        fail(n, concat("direction '", direction, "'"), "forward, reverse or bidirectional");
    const std::int64_t D = direction == "bidirectional" ? 2 : 1;
    const onnx_const& W = const_in(n, 1, "W");
    const onnx_const& R = const_in(n, 2, "R");
    if (!ops::is_floating(W.type) || W.type != type_in(n, 0).type)
        fail(n, concat("X of type ", ops::name(type_in(n, 0).type), " and W of type ", ops::name(W.type)),
             "the same floating-point type");
    const std::int64_t H = R.dims.rank() == 3 ? R.dims[2] : 0;
    if (H < 1 || R.dims != ops::shape{D, G * H, H} || W.dims != ops::shape{D, G * H, I})
        fail(n, concat("W ", W.dims.to_string(), " and R ", R.dims.to_string(), " for X ", xs.to_string()),
             concat("W [", D, ", ", G, "*hidden, ", I, "] and R [", D, ", ", G, "*hidden, hidden]"));
    if (const auto* a = attr(n, "hidden_size"); a && a->i() != H)
        fail(n, concat("hidden_size ", a->i(), " with R ", R.dims.to_string()), concat("hidden_size ", H));
    const onnx_const* bias = has_input(n, 3) ? &const_in(n, 3, "B") : nullptr;
    if (bias && bias->dims != ops::shape{D, 2 * G * H})
        fail(n, concat("B has shape ", bias->dims.to_string()), concat("[", D, ", ", 2 * G * H, "]"));
    if (has_input(n, 4)) {
        const onnx_const& lens = const_in(n, 4, "sequence_lens");
        for (std::size_t k = 0; k < lens.size(); ++k)
            if (lens.int_at(k) != S)
                no_kind(concat("sequence_lens holds ", lens.int_at(k)), concat("every sequence of length ", S));
    }
    if (lstm && has_input(n, 7)) {
        const onnx_const& p = const_in(n, 7, "P");
        for (std::size_t k = 0; k < p.size(); ++k)
            if (p.at(k) != 0) no_kind("peephole weights P", "no peepholes (or zero ones)");
    }
    const std::vector<std::string> defaults =
        lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"} : std::vector<std::string>{"Sigmoid", "Tanh"};
    if (const auto acts = attr_strings(n, "activations")) {
        for (std::size_t k = 0; k < acts->size(); ++k)
            if ((*acts)[k] != defaults[k % defaults.size()])
                no_kind(concat("activation '", (*acts)[k], "'"), concat("the default activations"));
    }
    if (attr(n, "clip")) no_kind("cell clipping (clip)", "no clip attribute");
    if (lstm && attr_int(n, "input_forget", 0) != 0) no_kind("input_forget = 1", "input_forget = 0");
    if (!lstm && attr_int(n, "linear_before_reset", 0) != 1)
        no_kind("linear_before_reset = 0 (the reset gate before the recurrence matmul)",
                "linear_before_reset = 1, as PyTorch exports (goopt's gru_cell computes r * (h u_n))");
    const ops::dtype type = W.type;
    // cell gate k takes ONNX's gate from[k]
    const std::array<std::int64_t, 4> from =
        lstm ? std::array<std::int64_t, 4>{0, 2, 3, 1} : std::array<std::int64_t, 4>{1, 0, 2, 0};

    // the node's computed inputs get their graph ops first, so that the ops added from here on are
    // the node's own (its region, which an export may write back as the node: record_recurrent)
    for (const int k : {0, 5, 6})
        if (has_input(n, k)) (void)tensor_in(n, k);
    const std::size_t first_op = g_.num_ops();

    // the steps' inputs
    std::vector<graph::tensor_id> steps;
    if (S == 1) {
        steps.push_back(reshape(tensor_in(n, 0), {B, I}, name + "/x"));
    } else {
        const auto parts = g_.add(ops::op_kind::split, {tensor_in(n, 0)},
                                  {{attr_id::axis, layout}, {attr_id::sizes, ints(static_cast<std::size_t>(S), 1)}},
                                  unique(name + "/steps"));
        for (std::int64_t t = 0; t < S; ++t)
            steps.push_back(reshape(parts[static_cast<std::size_t>(t)], {B, I}, concat(name, "/x", t)));
    }
    // a direction's part [B,H] of an initial state [D,B,H] (layout 0) or [B,D,H] (layout 1)
    auto initial = [&](int input, std::int64_t d, const char* what) -> graph::tensor_id {
        if (!has_input(n, input)) return constant(concat(name, "/", what, d), onnx_const::make(type, {B, H}));
        const ops::shape want = layout ? ops::shape{B, D, H} : ops::shape{D, B, H};
        if (dims_in(n, input) != want)
            fail(n, concat(what, " has shape ", dims_in(n, input).to_string()), want.to_string());
        graph::tensor_id s = tensor_in(n, input);
        if (D == 2) {
            ints begin(3, 0), end(want.begin(), want.end());
            begin[layout ? 1 : 0] = d;
            end[layout ? 1 : 0] = d + 1;
            s = add1(ops::op_kind::slice, {s}, {{attr_id::begin, begin}, {attr_id::end, end}},
                     concat(name, "/", what, d));
        }
        return reshape(s, {B, H}, concat(name, "/", what, d, "/reshape"));
    };

    std::vector<std::vector<graph::tensor_id>> ys(static_cast<std::size_t>(D));  // [direction][time]
    std::vector<graph::tensor_id> last_h, last_c;
    for (std::int64_t d = 0; d < D; ++d) {
        const std::string dn = D == 2 ? concat(name, d == 0 ? "/forward" : "/backward") : name;
        const auto wb = [&](std::int64_t row) {
            return bias ? bias->at(static_cast<std::size_t>(d * 2 * G * H + row)) : 0.0;
        };
        bool augment = false;  // a GRU's recurrence bias inside the reset product: one extra unit
        if (!lstm)
            for (std::int64_t j = 0; j < H; ++j) augment = augment || wb(G * H + 2 * H + j) != 0;
        const std::int64_t Hs = H + (augment ? 1 : 0), cols = G * Hs;
        onnx_const w = onnx_const::make(type, {I, cols}), u = onnx_const::make(type, {Hs, cols});
        onnx_const b = onnx_const::make(type, {cols});
        for (std::int64_t k = 0; k < G; ++k)
            for (std::int64_t j = 0; j < H; ++j) {
                const std::int64_t src = from[static_cast<std::size_t>(k)] * H + j, col = k * Hs + j;
                for (std::int64_t i = 0; i < I; ++i)
                    w.f[static_cast<std::size_t>(i * cols + col)] =
                        W.at(static_cast<std::size_t>((d * G * H + src) * I + i));
                for (std::int64_t r = 0; r < H; ++r)
                    u.f[static_cast<std::size_t>(r * cols + col)] =
                        R.at(static_cast<std::size_t>((d * G * H + src) * H + r));
                const bool reset_product = !lstm && k == 2;  // GRU's n gate: Rb_n is multiplied by r
                b.f[static_cast<std::size_t>(col)] = wb(src) + (reset_product ? 0.0 : wb(G * H + src));
                if (reset_product && augment) u.f[static_cast<std::size_t>(H * cols + col)] = wb(G * H + src);
            }
        if (augment) b.f[static_cast<std::size_t>(Hs + H)] = 100.0;  // the extra unit's update gate: z = 1
        const graph::tensor_id wt = constant(dn + "/w", w, parameter_in(n, 1)),
                               ut = constant(dn + "/u", u, parameter_in(n, 2)),
                               bt = constant(dn + "/b", b, parameter_in(n, 3));

        graph::tensor_id h = initial(5, d, "initial_h"), c{};
        if (lstm) c = initial(6, d, "initial_c");
        if (augment) {
            onnx_const one = onnx_const::make(type, {B, 1});
            for (auto& v : one.f) v = 1.0;
            h = concat_along({h, constant(dn + "/one", one)}, 1, dn + "/state");
        }
        auto visible = [&](graph::tensor_id s, const std::string& what) {
            if (!augment) return s;
            return add1(ops::op_kind::slice, {s}, {{attr_id::begin, ints{0, 0}}, {attr_id::end, ints{B, H}}},
                        dn + what);
        };
        ys[static_cast<std::size_t>(d)].resize(static_cast<std::size_t>(S));
        const bool backward = direction == "reverse" || d == 1;
        for (std::int64_t s = 0; s < S; ++s) {
            const std::int64_t t = backward ? S - 1 - s : s;
            const std::string step = concat(dn, "/t", t);
            const graph::tensor_id x = steps[static_cast<std::size_t>(t)];
            if (lstm) {
                const auto hc = g_.add(ops::op_kind::lstm_cell, {x, h, c, wt, ut, bt}, {}, unique(step));
                h = hc[0];
                c = hc[1];
            } else {
                h = add1(ops::op_kind::gru_cell, {x, h, wt, ut, bt}, {}, step);
            }
            if (wants_output(n, 0))
                ys[static_cast<std::size_t>(d)][static_cast<std::size_t>(t)] = visible(h, concat("/y", t));
        }
        if (wants_output(n, 1)) last_h.push_back(visible(h, "/y_h"));
        if (lstm) last_c.push_back(c);
    }

    // Y [S, D, B, H] (layout 1: [B, S, D, H]); Y_h, Y_c [D, B, H] (layout 1: [B, D, H])
    if (wants_output(n, 0)) {
        std::vector<graph::tensor_id> per_time;
        for (std::int64_t t = 0; t < S; ++t) {
            std::vector<graph::tensor_id> dirs;
            for (std::int64_t d = 0; d < D; ++d)
                dirs.push_back(reshape(ys[static_cast<std::size_t>(d)][static_cast<std::size_t>(t)],
                                       layout ? ops::shape{B, 1, 1, H} : ops::shape{1, 1, B, H},
                                       concat(name, "/y", t, "_", d)));
            per_time.push_back(concat_along(dirs, layout ? 2 : 1, concat(name, "/y", t)));
        }
        bind(n, 0, concat_along(per_time, layout ? 1 : 0, name + "/y"));
    }
    auto final_state = [&](const std::vector<graph::tensor_id>& states, int k, const char* what) {
        std::vector<graph::tensor_id> parts;
        for (std::size_t d = 0; d < states.size(); ++d)
            parts.push_back(
                reshape(states[d], layout ? ops::shape{B, 1, H} : ops::shape{1, B, H}, concat(name, "/", what, d)));
        bind(n, k, concat_along(parts, layout ? 1 : 0, concat(name, "/", what)));
    };
    if (wants_output(n, 1)) final_state(last_h, 1, "y_h");
    if (lstm && wants_output(n, 2)) final_state(last_c, 2, "y_c");
    if (!lstm && n.output_size() > 2) fail(n, concat(n.output_size(), " outputs"), "at most 2 (Y, Y_h)");
    record_recurrent(n, first_op);
}

/// What an export needs to write node n back: the node, its constant inputs, and the ops from
/// `first_op` on (the region) with their edges, inputs from outside the region named by the node's
/// input slot. A region that reads anything else is not recorded (and is always lowered).
inline void onnx_importer::record_recurrent(const node_t& n, std::size_t first_op) {
    onnx_recurrent_node r;
    if (!n.SerializeToString(&r.node)) return;
    std::map<graph::tensor_id, int> slot_of;
    for (const int k : {0, 5, 6})
        if (has_input(n, k)) {
            slot_of.emplace(*entry(n, k).tensor, k);
            r.inputs.emplace(k, type_in(n, k));
        }
    for (int k = 1; k < n.input_size(); ++k) {
        if (!has_input(n, k) || k == 5 || k == 6) continue;
        const onnx_const& c = const_in(n, k, "a constant input");
        onnx_tensor& t = r.constants[k];
        t.type = {c.dims, c.type};
        t.values.reserve(c.size());
        for (std::size_t e = 0; e < c.size(); ++e) t.values.push_back(c.at(e));
    }
    auto ref = [&](graph::tensor_id t) -> std::optional<onnx_recurrent_node::input_ref> {
        if (const auto it = slot_of.find(t); it != slot_of.end())
            return onnx_recurrent_node::input_ref{{}, 0, it->second};
        const graph::tensor& x = g_.get_tensor(t);
        if (x.producer < first_op) return std::nullopt;
        return onnx_recurrent_node::input_ref{g_.get_op(x.producer).name, x.index, -1};
    };
    for (std::size_t o = first_op; o < g_.num_ops(); ++o) {
        const graph::op& op = g_.get_op(static_cast<graph::op_id>(o));
        onnx_recurrent_node::region_op ro{op.name, op.kind, op.attrs, {}, {}};
        for (const auto t : op.inputs) {
            auto in = ref(t);
            if (!in) return;
            ro.inputs.push_back(std::move(*in));
        }
        for (const auto t : op.outputs) ro.outputs.push_back(g_.type_of(t));
        r.ops.push_back(std::move(ro));
    }
    for (int k = 0; k < n.output_size(); ++k) {
        if (!wants_output(n, k)) continue;
        // an output the import did not bind (a malformed node) leaves the node unrecorded, as an
        // input from outside the region does
        const auto bound = env_.find(n.output(k));
        if (bound == env_.end() || !bound->second.tensor) return;
        auto out = ref(*bound->second.tensor);
        if (!out || out->slot >= 0) return;
        r.outputs.emplace(k, std::move(*out));
    }
    result_.recurrent_nodes.push_back(std::move(r));
}

}  // namespace goopt::io::detail
