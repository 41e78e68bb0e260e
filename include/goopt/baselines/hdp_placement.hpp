#pragma once
/// @file
/// @brief The hierarchical placer of HDP (Mirhoseini et al., "A Hierarchical Model for Device
/// Placement", ICLR'18): a grouper puts ops in groups, a sequence-to-sequence placer puts groups on
/// devices, both trained jointly by REINFORCE on the simulated step time. goopt's reference for the
/// sample efficiency of a learned placer that sees the graph only through its groups.

#include <goopt/baselines/critical_path_priorities.hpp>
#include <goopt/error.hpp>
#include <goopt/nn/activations.hpp>
#include <goopt/nn/adam.hpp>
#include <goopt/nn/linear.hpp>
#include <goopt/nn/lstm.hpp>
#include <goopt/nn/node_features.hpp>
#include <goopt/nn/types.hpp>
#include <goopt/sim/decision.hpp>
#include <goopt/sim/decision_refused.hpp>
#include <goopt/sim/placement.hpp>
#include <goopt/sim/simulator.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace goopt::baselines {

/// HDP's knobs. The optimizer's, the logits' squashing and the sample counts are the paper's
/// (§3: Adam at a fixed 0.1, gradient norm clipped at 1, logits C tanh(z / T) with C = 5, T = 10,
/// m = 1 grouping and k = 4 placements per update); the widths are smaller than its LSTMs so that
/// a budget of tens of thousands of samples runs here in minutes.
struct hdp_config {
    std::size_t groups = 64;                  ///< G: the grouper's softmax width, the placer's sequence length
    std::size_t grouper_hidden = 64;          ///< the grouper's one hidden layer
    std::size_t placer_hidden = 64;           ///< the encoder's and decoder's LSTM width
    std::size_t groupings_per_update = 1;     ///< m
    std::size_t placements_per_grouping = 4;  ///< k
    std::size_t samples = 1000;               ///< budget: placements simulated in all
    double learning_rate = 0.1;
    double clip_norm = 1.0;
    double tanh_constant = 5.0;  ///< C
    double temperature = 10.0;   ///< T
    /// The reward baseline is an exponential moving average of the rewards with this decay.
    double baseline_decay = 0.9;
    /// A placement that runs out of memory (or that the simulator refuses) is scored as a step of
    /// this many seconds (HDP gives such a placement a large fixed runtime).
    double oom_step_time = 100.0;
    /// Each sampled placement runs with critical-path list-scheduling priorities computed for it
    /// (as GO's placement task with ready_order::critical_path) instead of TensorFlow's FIFO
    /// executor, the paper's; so that a comparison with a placer scored that way is on placement alone.
    bool critical_path = false;
};

/// What hdp_placement returns: the best placement it sampled (fits in memory first, then the
/// shorter step) and when.
struct hdp_result {
    sim::placement placement;
    sim::simulation_result result;
    std::size_t best_sample = 0;  ///< 1-based index of the sample that found it
    std::size_t samples = 0;      ///< placements simulated
    std::size_t updates = 0;      ///< Adam steps taken
    double seconds = 0;           ///< wall time
    /// Per update: the mean step time (s) of its samples, out-of-memory or refused ones counted as
    /// hdp_config::oom_step_time: where the policy itself stands, not just its luckiest sample.
    std::vector<double> mean_step_time;
    /// Every sample that improved on the best so far: (1-based sample index, its step time in s), in
    /// order, so that the samples HDP needed to reach any step time can be read off.
    std::vector<std::pair<std::size_t, double>> improvements;
};

namespace detail {

/// Draws an index from a row of probabilities.
template <class Row, std::uniform_random_bit_generator Rng> int hdp_draw(const Row& p, Rng& rng) {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    double acc = 0;
    const auto n = static_cast<int>(p.size());
    for (int j = 0; j < n; ++j) {
        acc += static_cast<double>(p(j));
        if (u < acc) return j;
    }
    return n - 1;
}

/// Row-wise softmax of C tanh(z / T) (the paper's squashed logits); keeps tanh(z / T) for backward.
inline void hdp_squashed_softmax(const nn::matrix<float>& z, float c, float t, nn::matrix<float>& th,
                                 nn::matrix<float>& p) {
    th = (z.array() / t).tanh().matrix();
    p = c * th;
    for (Eigen::Index r = 0; r < p.rows(); ++r) {
        p.row(r).array() -= p.row(r).maxCoeff();
        p.row(r) = p.row(r).array().exp().matrix();
        p.row(r) /= p.row(r).sum();
    }
}

}  // namespace detail

/// @brief Trains HDP's grouper and placer on `s`'s graph and cluster for `config.samples` simulated
/// placements and returns the best one.
///
/// Grouper: GO's per-op features (nn::node_features: op kind, output shape, FLOPs, degree, position)
/// -> a feed-forward layer of grouper_hidden ReLUs -> a softmax over G groups, one group drawn per op.
/// Group embeddings (the paper's: op-kind counts, output sizes, adjacency): per group log(1 + count)
/// of each op kind, its share of the ops, of the compute time (on device 0) and of the output bytes,
/// and log(1 + data edges) to each group. Placer: an LSTM encoder over the G embeddings; an LSTM
/// decoder whose step t reads group t's embedding and the device drawn for group t - 1, attends
/// over the encoder's states (dot-product attention) and draws group t's device from C tanh(z / T).
/// An op goes where its group goes; a colocation group where its first member goes.
/// Training: REINFORCE on reward -sqrt(step time) less a moving-average baseline, jointly for the
/// grouper (each grouping credited with its placements' mean advantage) and the placer. Groups
/// without an op have no say in the step time and contribute no gradient.
/// Randomness only from `rng`: the same seed gives the same result.
/// @throws goopt::error for a config with a zero count or a non-positive rate, temperature or
/// constant, or a graph without ops.
template <device::DeviceModel D, cost::CostModel<D> Cost, std::uniform_random_bit_generator Rng>
hdp_result hdp_placement(sim::simulator<D, Cost>& s, const hdp_config& config, Rng& rng) {
    using mat = nn::matrix<float>;
    constexpr std::string_view who = "baselines::hdp_placement";
    const auto t0 = std::chrono::steady_clock::now();
    if (config.groups == 0 || config.grouper_hidden == 0 || config.placer_hidden == 0 ||
        config.groupings_per_update == 0 || config.placements_per_grouping == 0 || config.samples == 0)
        throw error(who, "a count of 0 (groups, widths, samples per update or the budget)", "every count >= 1");
    if (!(config.learning_rate > 0) || !(config.tanh_constant > 0) || !(config.temperature > 0) ||
        !(config.oom_step_time > 0) || !(config.baseline_decay >= 0 && config.baseline_decay < 1))
        throw error(
            who,
            concat("learning rate ", config.learning_rate, ", C ", config.tanh_constant, ", T ", config.temperature,
                   ", OOM step ", config.oom_step_time, ", baseline decay ", config.baseline_decay),
            "positive rate, C, T and OOM step, and a decay in [0, 1)");
    const auto& g = s.graph();
    const std::size_t n = g.num_ops();
    if (n == 0) throw error(who, "a graph without ops", "at least one op");
    const std::size_t nd = s.cluster().num_devices();
    const std::size_t G = config.groups, H = config.placer_hidden;
    const auto Gi = static_cast<Eigen::Index>(G), Hi = static_cast<Eigen::Index>(H), Di = static_cast<Eigen::Index>(nd);
    const auto C = static_cast<float>(config.tanh_constant), T = static_cast<float>(config.temperature);

    // per-op inputs, fixed for the graph
    const mat x = nn::node_features<float>(g).x;
    std::vector<double> op_time(n), op_bytes(n);
    double total_time = 0, total_bytes = 0;
    std::vector<std::pair<graph::op_id, graph::op_id>> edges;
    for (graph::op_id o = 0; o < n; ++o) {
        op_time[o] = s.op_time(o, 0);
        for (graph::tensor_id t : g.get_op(o).outputs) {
            op_bytes[o] += static_cast<double>(g.type_of(t).bytes());
            for (const graph::use& u : g.get_tensor(t).uses) edges.emplace_back(o, u.op);
        }
        total_time += op_time[o];
        total_bytes += op_bytes[o];
    }
    const std::size_t kinds = ops::num_op_kinds, F = kinds + 3 + G;

    // the networks
    nn::linear<float> g1(static_cast<std::size_t>(x.cols()), config.grouper_hidden, rng, "hdp.grouper.1");
    nn::relu<float> g_act;
    nn::linear<float> g2(config.grouper_hidden, G, rng, "hdp.grouper.2");
    nn::lstm<float> encoder(F, H, rng, "hdp.encoder");
    nn::lstm<float> decoder(F + nd, H, rng, "hdp.decoder");
    auto wo = nn::make_parameter<float>("hdp.out.w", 2 * H, nd, rng);
    auto bo = nn::make_parameter<float>("hdp.out.b", 1, nd, rng, true);
    nn::parameter_list<float> ps;
    g1.collect(ps);
    g2.collect(ps);
    encoder.collect(ps);
    decoder.collect(ps);
    ps.push_back(&wo);
    ps.push_back(&bo);
    nn::adam<float> opt(ps, {.learning_rate = config.learning_rate, .clip_norm = config.clip_norm});

    hdp_result best;
    bool have_best = false;
    double baseline = 0;
    bool have_baseline = false;
    sim::placement p(n);
    sim::simulation_result r;
    std::vector<double> prio;
    std::unordered_map<std::int32_t, sim::device_id> first_of_group;
    std::vector<int> group(n);
    std::vector<std::size_t> members(G);
    mat emb(Gi, static_cast<Eigen::Index>(F)), enc_states(Gi, Hi), g_th, g_p, g_dz, dec_in, dz;
    std::vector<mat> att, q, th, prob;
    std::vector<std::vector<int>> act(G);

    while (best.samples < config.samples) {
        nn::zero_grad(ps);
        double step_sum = 0;
        std::size_t drawn = 0;
        // grouper: one forward pass, m groupings drawn from it
        const mat g_logits = g2.forward(g_act.forward(g1.forward(x)));
        detail::hdp_squashed_softmax(g_logits, C, T, g_th, g_p);
        mat g_dlogits = mat::Zero(static_cast<Eigen::Index>(n), Gi);
        for (std::size_t m = 0; m < config.groupings_per_update && best.samples < config.samples; ++m) {
            const std::size_t k = std::min(config.placements_per_grouping, config.samples - best.samples);
            const auto ki = static_cast<Eigen::Index>(k);
            std::fill(members.begin(), members.end(), 0);
            for (std::size_t o = 0; o < n; ++o) {
                group[o] = detail::hdp_draw(g_p.row(static_cast<Eigen::Index>(o)), rng);
                ++members[static_cast<std::size_t>(group[o])];
            }
            // group embeddings
            emb.setZero();
            std::vector<double> gt(G, 0), gb(G, 0);
            for (std::size_t o = 0; o < n; ++o) {
                const auto j = static_cast<Eigen::Index>(group[o]);
                emb(j, static_cast<Eigen::Index>(g.get_op(static_cast<graph::op_id>(o)).kind)) += 1;
                gt[static_cast<std::size_t>(j)] += op_time[o];
                gb[static_cast<std::size_t>(j)] += op_bytes[o];
            }
            for (const auto& [a, b] : edges)
                if (group[a] != group[b]) {
                    emb(group[a], static_cast<Eigen::Index>(kinds + 3) + group[b]) += 1;
                    emb(group[b], static_cast<Eigen::Index>(kinds + 3) + group[a]) += 1;
                }
            for (std::size_t j = 0; j < G; ++j) {
                const auto ji = static_cast<Eigen::Index>(j);
                const auto ki0 = static_cast<Eigen::Index>(kinds);
                emb.row(ji).head(ki0) = emb.row(ji).head(ki0).array().log1p().matrix();
                emb.row(ji).tail(Gi) = emb.row(ji).tail(Gi).array().log1p().matrix();
                emb(ji, ki0) = static_cast<float>(static_cast<double>(members[j]) / static_cast<double>(n));
                emb(ji, ki0 + 1) = static_cast<float>(total_time > 0 ? gt[j] / total_time : 0);
                emb(ji, ki0 + 2) = static_cast<float>(total_bytes > 0 ? gb[j] / total_bytes : 0);
            }
            // placer: encoder over the groups, then k placements decoded side by side
            encoder.start(1);
            for (Eigen::Index j = 0; j < Gi; ++j) enc_states.row(j) = encoder.step(emb.row(j));
            decoder.start(k);
            att.assign(G, {});
            q.assign(G, {});
            th.assign(G, {});
            prob.assign(G, {});
            dec_in = mat::Zero(ki, static_cast<Eigen::Index>(F + nd));
            for (Eigen::Index j = 0; j < Gi; ++j) {
                const auto t = static_cast<std::size_t>(j);
                dec_in.leftCols(static_cast<Eigen::Index>(F)).rowwise() = emb.row(j);
                const mat& h = decoder.step(dec_in);
                mat sc = h * enc_states.transpose();
                for (Eigen::Index b = 0; b < ki; ++b) {
                    sc.row(b).array() -= sc.row(b).maxCoeff();
                    sc.row(b) = sc.row(b).array().exp().matrix();
                    sc.row(b) /= sc.row(b).sum();
                }
                q[t].resize(ki, 2 * Hi);
                q[t].leftCols(Hi) = h;
                q[t].rightCols(Hi) = sc * enc_states;
                att[t] = std::move(sc);
                mat z = q[t] * wo.value;
                z.rowwise() += bo.value.row(0);
                detail::hdp_squashed_softmax(z, C, T, th[t], prob[t]);
                act[t].resize(k);
                dec_in.rightCols(Di).setZero();
                for (Eigen::Index b = 0; b < ki; ++b) {
                    act[t][static_cast<std::size_t>(b)] = detail::hdp_draw(prob[t].row(b), rng);
                    dec_in(b, static_cast<Eigen::Index>(F) + act[t][static_cast<std::size_t>(b)]) = 1;
                }
            }
            // simulate the k placements
            std::vector<double> reward(k);
            for (std::size_t b = 0; b < k; ++b) {
                first_of_group.clear();
                for (graph::op_id o = 0; o < n; ++o) {
                    const auto d = static_cast<sim::device_id>(act[static_cast<std::size_t>(group[o])][b]);
                    const auto c = g.get_op(o).colocation;
                    p[o] = c < 0 ? d : first_of_group.try_emplace(c, d).first->second;
                }
                bool refused = false;
                try {
                    if (config.critical_path) prio = critical_path_priorities(s, p);
                    s.run(p, {.priorities = prio, .record_trace = false}, r);
                } catch (const sim::decision_refused&) {
                    refused = true;
                }
                ++best.samples;
                const double step = refused || r.oom ? config.oom_step_time : r.step_time;
                reward[b] = -std::sqrt(step);
                step_sum += step;
                ++drawn;
                if (!refused && (!have_best || sim::better_result(r, best.result))) {
                    have_best = true;
                    best.placement = p;
                    best.result = r;
                    best.best_sample = best.samples;
                    best.improvements.emplace_back(best.samples, r.oom ? config.oom_step_time : r.step_time);
                }
            }
            double mean = 0;
            for (double v : reward) mean += v / static_cast<double>(k);
            if (!have_baseline) baseline = mean, have_baseline = true;
            std::vector<float> adv(k);
            float mean_adv = 0;
            for (std::size_t b = 0; b < k; ++b) {
                adv[b] = static_cast<float>(reward[b] - baseline);
                mean_adv += adv[b] / static_cast<float>(k);
            }
            baseline = config.baseline_decay * baseline + (1 - config.baseline_decay) * mean;
            // REINFORCE: the placer's loss -(1 / (m k)) sum A log p(placement), backward by hand
            const float scale = 1.0f / static_cast<float>(config.groupings_per_update * config.placements_per_grouping);
            mat d_enc = mat::Zero(Gi, Hi);
            std::vector<mat> dh(G);
            for (std::size_t t = 0; t < G; ++t) {
                dz = prob[t];
                for (Eigen::Index b = 0; b < ki; ++b) {
                    dz(b, act[t][static_cast<std::size_t>(b)]) -= 1;
                    dz.row(b) *= members[t] == 0 ? 0.0f : adv[static_cast<std::size_t>(b)] * scale;
                }
                dz = (dz.array() * (C / T) * (1 - th[t].array().square())).matrix();
                wo.grad.noalias() += q[t].transpose() * dz;
                bo.grad.row(0) += dz.colwise().sum();
                const mat dq = dz * wo.value.transpose();
                const mat dctx = dq.rightCols(Hi);
                dh[t] = dq.leftCols(Hi);
                const mat da = dctx * enc_states.transpose();
                d_enc.noalias() += att[t].transpose() * dctx;
                mat ds = att[t].cwiseProduct(da);
                for (Eigen::Index b = 0; b < ki; ++b)
                    ds.row(b) = att[t].row(b).cwiseProduct((da.row(b).array() - ds.row(b).sum()).matrix());
                dh[t].noalias() += ds * enc_states;
                d_enc.noalias() += ds.transpose() * q[t].leftCols(Hi);
            }
            decoder.backward(dh);
            std::vector<mat> de(G);
            for (std::size_t j = 0; j < G; ++j) de[j] = d_enc.row(static_cast<Eigen::Index>(j));
            encoder.backward(de);
            // the grouper's loss -(1 / m) sum Abar log p(grouping)
            const float gscale = mean_adv / static_cast<float>(config.groupings_per_update);
            for (std::size_t o = 0; o < n; ++o) {
                const auto oi = static_cast<Eigen::Index>(o);
                g_dlogits.row(oi) += gscale * g_p.row(oi);
                g_dlogits(oi, group[o]) -= gscale;
            }
        }
        g_dz = (g_dlogits.array() * (C / T) * (1 - g_th.array().square())).matrix();
        g1.backward(g_act.backward(g2.backward(g_dz)));
        opt.step();
        ++best.updates;
        best.mean_step_time.push_back(step_sum / static_cast<double>(drawn));
    }
    best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!have_best)
        throw error(who, concat("all ", best.samples, " sampled placements refused by the simulator"),
                    "a cluster whose devices are connected");
    return best;
}

}  // namespace goopt::baselines
