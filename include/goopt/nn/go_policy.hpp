#pragma once
/// @file
/// @brief GO's multi-task policy network. GO (NeurIPS'20) §3: GraphSAGE -> feature modulation ->
/// segment-recurrent attention -> per task one more attention layer and a softmax head, with the
/// previous task's actions fed into the next task's input (residual action connection).

#include <goopt/error.hpp>
#include <goopt/nn/feature_modulation.hpp>
#include <goopt/nn/graph_sage.hpp>
#include <goopt/nn/heads.hpp>
#include <goopt/nn/layer_norm.hpp>
#include <goopt/nn/node_features.hpp>
#include <goopt/nn/pair_head.hpp>
#include <goopt/nn/segment_attention.hpp>
#include <goopt/nn/tall_products.hpp>

#include <random>
#include <string>
#include <vector>

namespace goopt::nn {

/// The first task's head.
enum class first_head : std::uint8_t {
    /// GO's: one output column per choice (task_choices[0]); a checkpoint is tied to that count.
    per_choice,
    /// nn::pair_head: one score per (op, device) pair from device and pair features, for any
    /// number of devices; evaluate() then needs nn::placement_features.
    pair,
};

/// Shape of a go_policy. The defaults are GO's: 2 max-pool SAGE layers of 128, 8 heads, segments of 256.
struct policy_config {
    std::size_t features = num_node_features;  ///< input width (node_features' rows)
    std::size_t hidden = 128;
    std::size_t sage_layers = 2;
    aggregator sage_aggregator = aggregator::max_pool;
    std::size_t shared_attention_layers = 2;  ///< before the per-task layers (one more per task)
    std::size_t heads = 8;
    std::size_t segment = 256;
    std::vector<std::size_t> task_choices{4};  ///< choices per task, in order (devices, priority levels, ...)
    bool memory_gradient = false;              ///< see attention_config (true only for gradient checks)
    first_head head = first_head::per_choice;  ///< pair: task_choices[0] is unused (any device count)
    std::size_t pair_width = 32;               ///< the pair head's hidden width
};

/// What one forward pass gives: per task one row of logits per node (op id order), and the value.
template <std::floating_point S> struct policy_output {
    std::vector<matrix<S>> logits;
    S value = 0;
};

/// @brief The GO policy. Every attention layer is pre-norm residual, x + attention(LN(x)).
/// Task t > 0 reads h + onehot(a_{t-1}) E_t, where a_{t-1} are task t-1's actions (sampled, or given
/// when re-evaluating a rollout) and E_t a learned (choices_{t-1} x hidden) embedding.
/// @tparam S float (training, inference) or double (gradient checks).
template <std::floating_point S> class go_policy {
public:
    using scalar = S;
    go_policy() = default;
    template <std::uniform_random_bit_generator Rng> go_policy(policy_config c, Rng& rng) : c_(std::move(c)) {
        if (c_.sage_layers == 0 || c_.task_choices.empty())
            throw error("nn::go_policy", concat(c_.sage_layers, " SAGE layers and ", c_.task_choices.size(), " tasks"),
                        "at least one SAGE layer and one task");
        for (std::size_t i = 0; i < c_.sage_layers; ++i)
            sage_.emplace_back(i == 0 ? c_.features : c_.hidden, c_.hidden, c_.sage_aggregator, rng,
                               "sage" + std::to_string(i));
        mod_ = feature_modulation<S>(c_.hidden, rng, "modulation");
        const attention_config ac{
            .dim = c_.hidden, .heads = c_.heads, .segment = c_.segment, .memory_gradient = c_.memory_gradient};
        for (std::size_t i = 0; i < c_.shared_attention_layers; ++i)
            shared_.push_back(block(ac, rng, "attention" + std::to_string(i)));
        for (std::size_t t = 0; t < c_.task_choices.size(); ++t) {
            const std::string p = "task" + std::to_string(t);
            const bool pair = t == 0 && c_.head == first_head::pair;
            tasks_.push_back(
                {block(ac, rng, p + ".attention"),
                 pair ? categorical_head<S>{} : categorical_head<S>(c_.hidden, c_.task_choices[t], rng, p + ".head"),
                 t == 0 ? parameter<S>{}
                        : make_parameter<S>(p + ".action_embedding", c_.task_choices[t - 1], c_.hidden, rng),
                 {},
                 {}});
            if (pair) tasks_.back().pair = pair_head<S>(c_.hidden, c_.pair_width, rng, p + ".pair", p + ".head.out");
        }
        value_ = value_head<S>(c_.hidden, rng, "value");
    }

    /// @brief Forward pass with given actions (node order) for the residual connection: actions[t]
    /// feeds task t+1, so tasks-1 vectors are needed (re-evaluating a rollout for PPO).
    policy_output<S> evaluate(const graph_features<S>& f, const std::vector<std::vector<int>>& actions) {
        if (actions.size() + 1 < tasks_.size())
            throw error("nn::go_policy::evaluate", concat(actions.size(), " action vectors given"),
                        concat(tasks_.size() - 1));
        return run(f, nullptr, [&](std::size_t t, const matrix<S>&) { return actions[t]; });
    }
    /// @brief evaluate() with the devices' and pairs' features, which a first_head::pair needs (the
    /// per-choice head ignores them).
    policy_output<S> evaluate(const placement_features<S>& f, const std::vector<std::vector<int>>& actions) {
        if (actions.size() + 1 < tasks_.size())
            throw error("nn::go_policy::evaluate", concat(actions.size(), " action vectors given"),
                        concat(tasks_.size() - 1));
        return run(f, &f, [&](std::size_t t, const matrix<S>&) { return actions[t]; });
    }
    /// Whether a checkpoint of this network serves any device count (first_head::pair).
    bool any_device_count() const noexcept { return c_.head == first_head::pair; }

    /// @brief Forward pass that samples each task's actions from its logits (with `rng`) and feeds
    /// them to the next task. @return the output and every task's actions (node order).
    template <std::uniform_random_bit_generator Rng>
    std::pair<policy_output<S>, std::vector<std::vector<int>>> sample(const graph_features<S>& f, Rng& rng) {
        std::vector<std::vector<int>> acts;
        auto out = run(f, nullptr, [&](std::size_t, const matrix<S>& logits) {
            acts.push_back(sample_rows(logits, rng));
            return acts.back();
        });
        if (acts.size() < tasks_.size()) acts.push_back(sample_rows(out.logits.back(), rng));
        return {std::move(out), std::move(acts)};
    }

    /// @brief Backward pass of the last forward: dL/dlogits per task (node order) and dL/dvalue.
    /// Adds into every parameter's grad (call zero_grad first). The graph_features of that forward
    /// pass must still be alive: the topological order and adjacency are referenced, not copied.
    void backward(const std::vector<matrix<S>>& dlogits, S dvalue) {
        if (dlogits.size() != tasks_.size())
            throw error("nn::go_policy::backward", concat(dlogits.size(), " dlogits matrices"),
                        concat("one per task (", tasks_.size(), ")"));
        matrix<S>& dht = dht_;
        dht = value_.backward(dvalue);
        for (std::size_t t = tasks_.size(); t-- > 0;) {
            task& tk = tasks_[t];
            const matrix<S> dl = gather(dlogits[t]);
            const matrix<S>& din =
                tk.attention.backward(t == 0 && any_device_count() ? tk.pair.backward(dl) : tk.head.backward(dl));
            if (t > 0)
                for (Eigen::Index i = 0; i < din.rows(); ++i)
                    tk.embedding.grad.row(tk.prev_actions[static_cast<std::size_t>(i)]) += din.row(i);
            for_row_chunks(din.rows(), [&](Eigen::Index r0, Eigen::Index len) {
                dht.middleRows(r0, len) += din.middleRows(r0, len);
            });
        }
        for (std::size_t i = shared_.size(); i-- > 0;) dht = shared_[i].backward(dht);
        scatter(dh_, dht);
        const matrix<S>* dh = &mod_.backward(dh_);
        for (std::size_t i = sage_.size(); i-- > 0;) dh = &sage_[i].backward(*dh);
    }

    /// Every parameter, in a fixed order (save/load and the optimizer rely on it).
    parameter_list<S> parameters() {
        parameter_list<S> ps;
        for (auto& s : sage_) s.collect(ps);
        mod_.collect(ps);
        for (auto& b : shared_) b.collect(ps);
        for (std::size_t t = 0; t < tasks_.size(); ++t) {
            tasks_[t].attention.collect(ps);
            if (t == 0 && any_device_count()) tasks_[t].pair.collect(ps);
            else tasks_[t].head.collect(ps);
            if (t > 0) ps.push_back(&tasks_[t].embedding);
        }
        value_.collect(ps);
        return ps;
    }
    const policy_config& config() const { return c_; }

    /// FLOPs of one forward pass on n nodes whose adjacency has `edges` directed entries, counted from
    /// the layer shapes (GEMMs 2mnk; elementwise work left out). Backward costs about twice this
    /// plus one softmax recomputation per attention layer (see flops_forward_backward).
    double flops_forward(std::size_t n, std::size_t edges) const {
        const double N = static_cast<double>(n), H = static_cast<double>(c_.hidden), E = static_cast<double>(edges);
        double f = 0;
        for (std::size_t i = 0; i < c_.sage_layers; ++i) {
            const double in = static_cast<double>(i == 0 ? c_.features : c_.hidden);
            f += 2 * 2 * N * in * H + E * in;  // self + neighbour GEMMs, aggregation
            if (c_.sage_aggregator == aggregator::max_pool) f += 2 * N * in * in;  // pooling layer
        }
        const attention_config ac{.dim = c_.hidden, .heads = c_.heads, .segment = c_.segment};
        const double att = attention_flops(ac, n);
        f += static_cast<double>(c_.shared_attention_layers + c_.task_choices.size()) * att;
        for (std::size_t t = 0; t < c_.task_choices.size(); ++t)
            f += t == 0 && any_device_count()
                     ? 2 * N * H * static_cast<double>(c_.pair_width)  // the op part; the rest grows with devices
                     : 2 * N * H * static_cast<double>(c_.task_choices[t]);
        return f;
    }
    /// Forward + backward: backward's GEMMs are twice forward's, and attention recomputes its scores.
    double flops_forward_backward(std::size_t n, std::size_t edges) const {
        const attention_config ac{.dim = c_.hidden, .heads = c_.heads, .segment = c_.segment};
        const double scores = score_flops(ac, n);
        return 3 * flops_forward(n, edges) +
               static_cast<double>(c_.shared_attention_layers + c_.task_choices.size()) * scores;
    }

private:
    struct block {
        layer_norm<S> norm;
        segment_attention<S> attention;
        block() = default;
        template <std::uniform_random_bit_generator Rng>
        block(const attention_config& ac, Rng& rng, const std::string& name)
            : norm(ac.dim, rng, name + ".norm"), attention(ac, rng, name) {}
        matrix<S> y, dx;  // kept between calls (see linear::run)
        const matrix<S>& forward(const matrix<S>& x) {
            add_rows(y, x, attention.forward(norm.forward(x)));
            return y;
        }
        const matrix<S>& backward(const matrix<S>& dy) {
            add_rows(dx, dy, norm.backward(attention.backward(dy)));
            return dx;
        }
        // r = a + b, rows in parallel (see for_row_chunks)
        static void add_rows(matrix<S>& r, const matrix<S>& a, const matrix<S>& b) {
            r.resize(a.rows(), a.cols());
            for_row_chunks(a.rows(), [&](Eigen::Index r0, Eigen::Index len) {
                r.middleRows(r0, len) = a.middleRows(r0, len) + b.middleRows(r0, len);
            });
        }
        void collect(parameter_list<S>& ps) {
            norm.collect(ps);
            attention.collect(ps);
        }
    };
    struct task {
        block attention;
        categorical_head<S> head;
        parameter<S> embedding;         // actions of the previous task -> hidden (unused for task 0)
        pair_head<S> pair;              // task 0 with first_head::pair, instead of head
        std::vector<int> prev_actions;  // topological order, cached for backward
    };

    static double score_flops(const attention_config& ac, std::size_t n) {
        double f = 0;
        const std::size_t L = ac.segment;
        for (std::size_t s0 = 0; s0 < n; s0 += L) {
            const std::size_t len = std::min(L, n - s0), klen = s0 + len - (s0 >= L ? s0 - L : 0);
            f += 2.0 * static_cast<double>(len) * static_cast<double>(klen) * static_cast<double>(ac.dim);
        }
        return f;  // one of QK^T / AV over all heads
    }
    static double attention_flops(const attention_config& ac, std::size_t n) {
        return 4 * 2.0 * static_cast<double>(n) * static_cast<double>(ac.dim * ac.dim) + 2 * score_flops(ac, n);
    }

    // node order -> topological order, into r (not m)
    void gather(matrix<S>& r, const matrix<S>& m) const {
        r.resize(m.rows(), m.cols());
        for_row_chunks(m.rows(), [&](Eigen::Index r0, Eigen::Index len) {
            for (Eigen::Index i = r0; i < r0 + len; ++i) r.row(i) = m.row((*order_)[static_cast<std::size_t>(i)]);
        });
    }
    matrix<S> gather(const matrix<S>& m) const {
        matrix<S> r;
        gather(r, m);
        return r;
    }
    // topological order -> node order, into r (not m)
    void scatter(matrix<S>& r, const matrix<S>& m) const {
        r.resize(m.rows(), m.cols());
        for_row_chunks(m.rows(), [&](Eigen::Index r0, Eigen::Index len) {
            for (Eigen::Index i = r0; i < r0 + len; ++i) r.row((*order_)[static_cast<std::size_t>(i)]) = m.row(i);
        });
    }
    matrix<S> scatter(const matrix<S>& m) const {
        matrix<S> r;
        scatter(r, m);
        return r;
    }

    template <class Choose>
    policy_output<S> run(const graph_features<S>& f, const placement_features<S>* pf, Choose&& choose) {
        const auto n = static_cast<std::size_t>(f.x.rows());
        if (f.x.cols() != static_cast<Eigen::Index>(c_.features) || f.order.size() != n || f.adj.num_nodes() != n)
            throw error("nn::go_policy",
                        concat("features have ", f.x.cols(), " columns for ", n, " nodes, order has ", f.order.size(),
                               ", adjacency ", f.adj.num_nodes()),
                        concat(c_.features, " columns and one order entry and adjacency node per feature row"));
        if (n == 0) throw error("nn::go_policy", "the graph has no nodes", "at least one node");
        if (any_device_count() && pf == nullptr)
            throw error("nn::go_policy", "a pair head evaluated on graph features alone",
                        "nn::placement_features (the devices' and the (op, device) pairs' features)");
        order_ = &f.order;
        const matrix<S>* h = &f.x;
        for (auto& s : sage_) h = &s.forward(*h, f.adj);
        matrix<S>& ht = ht_;
        gather(ht, mod_.forward(*h));
        for (auto& b : shared_) ht = b.forward(ht);
        policy_output<S> out;
        out.value = value_.forward(ht);
        for (std::size_t t = 0; t < tasks_.size(); ++t) {
            task& tk = tasks_[t];
            matrix<S>& in = in_;
            copy_rows(in, ht);
            if (t > 0) {
                const std::vector<int> prev = choose(t - 1, out.logits.back());
                if (prev.size() != n)
                    throw error("nn::go_policy", concat("task ", t - 1, " has ", prev.size(), " actions"),
                                concat("one per node (", n, ")"));
                tk.prev_actions.resize(n);
                for (std::size_t i = 0; i < n; ++i) {
                    const int a = prev[f.order[i]];
                    if (a < 0 || a >= tk.embedding.value.rows())
                        throw error("nn::go_policy", concat("action ", a, " of node ", f.order[i], " for task ", t - 1),
                                    concat("an action in [0, ", tk.embedding.value.rows(), ")"));
                    tk.prev_actions[i] = a;
                    in.row(static_cast<Eigen::Index>(i)) += tk.embedding.value.row(a);
                }
            }
            const matrix<S>& a = tk.attention.forward(in);
            out.logits.push_back(scatter(t == 0 && any_device_count()
                                             ? tk.pair.forward(a, pf->devices, pf->pairs, f.order)
                                             : tk.head.forward(a)));
        }
        return out;
    }

    policy_config c_;
    std::vector<graph_sage<S>> sage_;
    feature_modulation<S> mod_;
    std::vector<block> shared_;
    std::vector<task> tasks_;
    value_head<S> value_;
    const std::vector<std::uint32_t>* order_ = nullptr;
    // n x hidden buffers kept between passes (see linear::run)
    matrix<S> ht_, in_, dht_, dh_;
};

}  // namespace goopt::nn
