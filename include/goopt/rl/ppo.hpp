#pragma once
/// @file
/// @brief Proximal policy optimization for one-step, all-nodes-at-once decisions (PPO: Schulman et
/// al., arXiv 1707.06347; used this way by GO, NeurIPS'20 §3.3), with an imitation warm start and
/// checkpoints that resume bit for bit.

#include <goopt/error.hpp>
#include <goopt/io/binary_record.hpp>
#include <goopt/nn/adam.hpp>
#include <goopt/nn/heads.hpp>
#include <goopt/nn/optimizer.hpp>
#include <goopt/nn/training_guard.hpp>
#include <goopt/rl/concepts.hpp>
#include <goopt/rl/ppo_config.hpp>
#include <goopt/rl/sample_sharding.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace goopt::rl {

/// What one PPO update reports to the visitor.
struct update_stats {
    std::size_t update = 0;   ///< 1-based, counted over resumes
    std::size_t samples = 0;  ///< decisions evaluated so far
    double mean_reward = 0;
    double best_reward = 0;    ///< best of this update's samples
    double mode_reward = 0;    ///< reward of the policy's mode (ppo_config::evaluate_mode; else 0)
    double entropy = 0;        ///< mean per-node entropy before the update
    double clip_fraction = 0;  ///< share of node ratios outside the clip window in the last epoch
    double loss = 0;           ///< last minibatch's loss
};

/// @brief A PPO visitor (BGL style): sees every sample in sample order on the calling thread, and
/// every finished update; returning false from on_update stops training there.
/// @code
///   v.on_sample(actions, outcome)   // std::span<const int>, const Env::outcome&
///   v.on_update(stats) -> bool      // rl::update_stats
///   v.on_mode(actions, outcome)     // optional: the policy's mode, after the update's samples
/// @endcode
template <class V, class Outcome>
concept PpoVisitor = requires(V& v, std::span<const int> a, const Outcome& o, const update_stats& s) {
    v.on_sample(a, o);
    { v.on_update(s) } -> std::convertible_to<bool>;
};

/// Tells `v` about the policy's mode if it has an on_mode (the hook is optional).
template <class V, class Outcome> void notify_mode(V& v, std::span<const int> actions, const Outcome& o) {
    if constexpr (requires { v.on_mode(actions, o); }) v.on_mode(actions, o);
}

/// The visitor that watches nothing.
struct null_visitor {
    template <class Outcome> void on_sample(std::span<const int>, const Outcome&) {}
    bool on_update(const update_stats&) { return true; }
};

/// An engine a checkpoint can hold: its state streams out and back in (every std engine does).
template <class Rng>
concept SerializableRng = std::uniform_random_bit_generator<Rng> &&
    requires(Rng& r, std::ostream& os, std::istream& is) {
    os << r;
    is >> r;
};

/// How far a guided decoder lets a warm start's target through (rl::ppo::imitation_reach): counts of
/// active nodes along the target's walk through the decoder, none of which imitation can change.
struct imitation_reach {
    std::size_t closed = 0;    ///< with a choice, but the target's action is not among it (e.g. memory)
    std::size_t forced = 0;    ///< without a choice (one open action), and that is not the target's
    std::size_t diverged = 0;  ///< placed elsewhere than the target: the above and what follows from them
};

/// The tag and version of the io::binary_record written by ppo::save_checkpoint. Version 1 was a
/// host-order blob read at fixed offsets; version 2 held Adam's two moments without naming the
/// optimizer; both are refused as older formats.
inline constexpr std::string_view checkpoint_tag = "goopt-ppo";
inline constexpr std::uint32_t checkpoint_format_version = 3;

/// @brief The PPO trainer. It owns what a whole update needs for the backward passes: the
/// observation, the sampled actions and their old log-probabilities.
///
/// One update: a forward pass gives per-node logits; `samples_per_update` action vectors are drawn
/// from them (with the caller's Rng, in order) and evaluated, with the mode (argmax per node) after
/// them when `evaluate_mode`, on `threads` worker threads (decision s on worker s mod threads;
/// results land by index, so any thread count gives the same numbers). An environment that is an
/// rl::GuidedEnvironment with guided() true decodes each sample itself on the workers, from a seed
/// drawn per sample in order (the mode: its greedy decoding), and the sample's probability is then
/// softmax(logits + the bias the decoder reports). Advantages are rewards
/// minus the baseline, divided by the rewards' spread; then `epochs` passes over shuffled
/// minibatches minimize the clipped surrogate minus the entropy bonus plus the value loss, each
/// step through Adam with gradient clipping, guarded against NaN. A minibatch's loss gradient with
/// respect to the logits is summed in blocks of `gradient_block` samples, shared among the ranks of
/// `sharding` (each rank computes whole blocks; all add them in block order). The first step reuses the
/// sampling forward pass (same parameters), so Net::backward must follow the latest evaluate.
///
/// The probability ratio is taken per node (each node's action is a factor of the decision, all
/// sharing the sample's advantage) rather than for the whole decision: the product of 60,000 node
/// ratios leaves the clip window after the first step and would stop learning for the rest of the
/// update. Only nodes the environment marks active enter the loss.
/// @tparam Env an rl::Environment. @tparam Net an rl::ActorCritic over Env's observations.
/// @tparam Opt what updates Net's parameters (nn::Optimizer: nn::adam by default, nn::sgd, or the
/// caller's own), given ppo_config's learning_rate and max_grad_norm; a checkpoint holds its state
/// and names it, and a trainer refuses another optimizer's checkpoint.
template <Environment Env, ActorCritic<typename Env::observation> Net = nn::go_policy<float>,
          nn::Optimizer<typename Net::scalar> Opt = nn::adam<typename Net::scalar>>
class ppo {
public:
    using scalar = typename Net::scalar;
    using outcome = typename Env::outcome;

    /// @throws goopt::error for a configuration that cannot run (no samples, epochs, threads...).
    ppo(Env& env, Net& net, ppo_config config)
        : env_(&env),
          net_(&net),
          c_(config),
          ps_(net.parameters()),
          opt_(ps_, nn::optimizer_settings(c_.learning_rate, c_.max_grad_norm)) {
        auto need = [](bool ok, std::string_view what, std::string_view expected) {
            if (!ok) throw error("rl::ppo", what, expected);
        };
        need(c_.samples_per_update >= 1, "samples_per_update is 0", "at least 1");
        need(c_.minibatch >= 1, "minibatch is 0", "at least 1");
        need(c_.epochs >= 1, "epochs is 0", "at least 1");
        need(c_.gradient_block >= 1, "gradient_block is 0", "at least 1");
        need(c_.threads >= 1, "threads is 0", "at least 1");
        need(c_.clip > 0 && c_.clip < 1, concat("clip is ", c_.clip), "a value in (0, 1)");
        need(c_.learning_rate > 0 && c_.imitation_learning_rate > 0,
             concat("learning rates are ", c_.learning_rate, " and ", c_.imitation_learning_rate), "both > 0");
        need(c_.baseline_decay >= 0 && c_.baseline_decay < 1, concat("baseline_decay is ", c_.baseline_decay),
             "a value in [0, 1)");
        need(!c_.sharding || std::is_trivially_copyable_v<outcome>,
             "sharding with an outcome that is not trivially copyable",
             "a trivially copyable outcome (it crosses between ranks as bytes)");
        env_->set_workers(std::min(c_.threads, c_.samples_per_update));
    }

    /// @brief Sets the decision the warm start imitates (one action per node; used by the first
    /// `imitation_steps` steps of train()). @throws goopt::error for an action out of range.
    void set_imitation_target(std::vector<int> actions) {
        for (int a : actions)
            if (a < 0 || static_cast<std::size_t>(a) >= env_->num_choices())
                throw error("rl::ppo", concat("imitation action ", a),
                            concat("an action in [0, ", env_->num_choices(), ")"));
        imitation_ = std::move(actions);
    }

    /// @brief Runs the warm start (if configured and not done yet), then PPO updates until
    /// config().updates are done or the visitor stops it.
    template <std::uniform_random_bit_generator Rng, PpoVisitor<outcome> Visitor = null_visitor>
    requires std::uniform_random_bit_generator<Rng>
    void train(Rng& rng, Visitor&& visitor = {}) {
        if (imitation_done_ < c_.imitation_steps) imitate(rng);
        while (updates_ < c_.updates) {
            const update_stats s = update(rng, visitor);
            if (!visitor.on_update(s)) break;
        }
    }

    /// @brief One PPO update (sampling, evaluation, epochs of minibatch steps).
    template <std::uniform_random_bit_generator Rng, PpoVisitor<outcome> Visitor = null_visitor>
    requires std::uniform_random_bit_generator<Rng> update_stats update(Rng& rng, Visitor&& visitor = {});

    /// @brief One PPO update whose samples come from several environments at once (pre-training
    /// across graphs and clusters): `samples_per_update` samples of each, advantages normalized per
    /// environment (its own samples' mean, or its value with the value head, and spread); each
    /// minibatch step then sums the environments' loss gradients in environment order and takes one
    /// Adam step. Environment k draws from its own generator, seeded from `rng` in environment
    /// order. With ppo_config::sharding the ranks hold different environments: environment k lives
    /// on rank owner[k] (rl::deal_by_work; empty: k mod ranks()) and envs[k] is null on the others;
    /// each rank computes its environments' gradients and an all-gather gives every rank all of
    /// them, summed in the same order as one process sums them, so N ranks give the single-process
    /// parameters bit for bit on any N and any dealing. Without sharding `owner` is not used.
    /// The visitor sees this rank's environments' samples, with an optional on_environment(k) hook
    /// before environment k's. The moving-average baseline, kept for one environment, is not used.
    /// @throws goopt::error for no environment, an owner list of another length or naming a rank
    /// that does not exist, or an environment held on the wrong rank.
    template <std::uniform_random_bit_generator Rng, PpoVisitor<outcome> Visitor = null_visitor>
    requires std::uniform_random_bit_generator<Rng> update_stats update_mixed(std::span<Env* const> envs,
                                                                              std::span<const std::size_t> owner,
                                                                              Rng& rng, Visitor&& visitor = {});

    /// @brief Writes the trainer's whole state atomically: format version, choices per node, the
    /// parameters with the optimizer's name and state (Adam's moments), counters, the baseline, the generator's state
    /// and the caller's `extra` bytes (e.g. the best decision so far), then a checksum. With ppo_config::sharding only
    /// rank 0 writes (every rank holds the same state).
    template <SerializableRng Rng>
    void save_checkpoint(const std::filesystem::path& path, const Rng& rng, const std::string& extra = {});

    /// @brief Restores a checkpoint written by save_checkpoint into this trainer and `rng`.
    /// @return the caller's extra bytes.
    /// @throws goopt::error naming the file and the mismatch: missing or unreadable file, wrong magic,
    /// format version, scalar size, choices per node (devices), optimizer (another Opt), parameter
    /// count, name or shape (another network), a non-finite weight, optimizer state or baseline or a
    /// negative second moment (a crafted file), a bad checksum or truncation (corrupt). On error
    /// nothing is changed.
    template <SerializableRng Rng> std::string load_checkpoint(const std::filesystem::path& path, Rng& rng);

    /// After the warm start: the share of active nodes whose action in the policy's mode (the most
    /// likely one, or the decoder's greedy decision for a guided environment) is the imitated one
    /// (-1 before a warm start has run in this trainer).
    double imitation_agreement() const noexcept { return imitation_agreement_; }
    /// After a warm start with imitation_min_agreement on an environment whose outcome has a
    /// step_time: the policy's mode's step / the imitated decision's step - 1 (NaN otherwise).
    double imitation_mode_gap() const noexcept { return imitation_mode_gap_; }
    /// Cross-entropy steps the warm start has taken.
    std::size_t imitation_steps_done() const noexcept { return imitation_done_; }
    /// After a warm start through a guided decoder: where the decoder keeps the policy's greedy
    /// decision from the target whatever the logits (all zero otherwise). 1 - diverged / active nodes
    /// bounds imitation_agreement.
    const rl::imitation_reach& imitation_reach() const noexcept { return imitation_reach_; }
    std::size_t updates_done() const noexcept { return updates_; }
    std::size_t samples_done() const noexcept { return samples_; }
    const ppo_config& config() const noexcept { return c_; }
    /// The number of updates to run in total (e.g. raised before resuming a finished run).
    void set_updates(std::size_t n) noexcept { c_.updates = n; }

    /// @brief Trains on another environment of the same type from now on (one policy across graphs,
    /// or a pre-trained policy on a new graph): the network, Adam's moments and the counters carry
    /// over; the reward baseline and the warm start, which belong to one environment, start again.
    void set_environment(Env& env) {
        env_ = &env;
        env_->set_workers(std::min(c_.threads, c_.samples_per_update));
        imitation_.clear();
        imitation_done_ = 0;
        imitation_reach_ = {};
        average_ = 0;
        average_set_ = false;
    }

private:
    /// One environment's samples of an update, ready for the minibatch steps.
    struct rollout {
        std::vector<std::uint8_t> active;
        std::vector<std::vector<int>> actions;  ///< per sample (the mode's dropped)
        std::vector<double> r, adv;             ///< rewards; advantages (set by the caller)
        std::vector<std::uint32_t> stratum;     ///< per sample under a guided decoder that reports strata, else empty
        std::vector<nn::matrix<float>> bias;    ///< per sample under a guided decoder (as it reports it), else none
        std::vector<std::vector<double>> old_taken;  ///< per sample and node: log-probability when drawn
        double entropy = 0, mean = 0, spread = 0, best = 0, mode = 0;
    };
    /// Draws and evaluates `env`'s samples from `logits` (the mode after them), sharing them among
    /// the ranks of `sharding` when it is not null.
    template <std::uniform_random_bit_generator Rng, class Visitor>
    rollout collect(Env& env, const typename Env::observation& obs, const nn::matrix<scalar>& logits, Rng& rng,
                    Visitor& visitor, sample_sharding* sharding);
    /// detail::ppo_minibatch_loss of `ro`'s samples `batch` under the network's output `out`, its
    /// blocks shared among the ranks of `sharding` when it is not null.
    template <class Output>
    auto minibatch_loss(const rollout& ro, const Output& out, std::span<const std::size_t> batch,
                        sample_sharding* sharding) const;
    template <std::uniform_random_bit_generator Rng> void imitate(Rng& rng);
    // 0 for a network whose checkpoint serves any number of choices (nn::first_head::pair)
    std::size_t choices_saved() const {
        if constexpr (requires { net_->any_device_count(); })
            if (net_->any_device_count()) return 0;
        return env_->num_choices();
    }
    void step(double loss) {
        if (!guard_) guard_.emplace(ps_, opt_, nn::training_guard_config{.checkpoint_every = 1, .path = {}});
        guard_->step(loss);
    }

    Env* env_;
    Net* net_;
    ppo_config c_;
    nn::parameter_list<scalar> ps_;
    Opt opt_;
    std::optional<nn::training_guard<scalar, Opt>> guard_;
    std::vector<int> imitation_;
    std::size_t updates_ = 0, samples_ = 0, imitation_done_ = 0;
    double imitation_agreement_ = -1;
    double imitation_mode_gap_ = std::numeric_limits<double>::quiet_NaN();
    rl::imitation_reach imitation_reach_;
    double average_ = 0;
    bool average_set_ = false;
};

// ---- implementation ----

namespace detail {
/// Row-wise log-softmax of float or double logits, in double.
template <std::floating_point S> nn::matrix<double> log_probs(const nn::matrix<S>& logits) {
    return nn::log_softmax<double>(logits.template cast<double>());
}

/// @brief Advantages measured within strata (rl::guided_sample::stratum): each sample's reward less the mean of
/// its stratum's rewards, divided by that stratum's standard deviation when `normalize` (and it is not 0). A
/// stratum of one sample gets 0: nothing of its own kind to compare it with.
inline std::vector<double> stratified_advantages(std::span<const double> rewards,
                                                 std::span<const std::uint32_t> stratum, bool normalize) {
    if (rewards.size() != stratum.size())
        throw error("rl::detail::stratified_advantages",
                    concat(rewards.size(), " rewards and ", stratum.size(), " strata"), "one stratum per reward");
    std::unordered_map<std::uint32_t, std::array<double, 3>> m;  // stratum -> count, sum, sum of squared deviations
    for (std::size_t s = 0; s < rewards.size(); ++s) {
        auto& x = m[stratum[s]];
        x[0] += 1;
        x[1] += rewards[s];
    }
    for (std::size_t s = 0; s < rewards.size(); ++s) {
        auto& x = m[stratum[s]];
        const double d = rewards[s] - x[1] / x[0];
        x[2] += d * d;
    }
    std::vector<double> adv(rewards.size());
    for (std::size_t s = 0; s < rewards.size(); ++s) {
        const auto& x = m[stratum[s]];
        const double spread = std::sqrt(x[2] / x[0]);
        adv[s] = (rewards[s] - x[1] / x[0]) / (normalize && spread > 1e-12 ? spread : 1.0);
    }
    return adv;
}

/// One minibatch's PPO loss and its gradient, and how many node ratios left the clip window.
struct ppo_minibatch_result {
    double loss = 0;
    nn::matrix<double> dlogits;  ///< d loss / d logits (nodes x choices)
    double dvalue = 0;           ///< d loss / d value (0 unless the baseline is the value head)
    std::size_t clipped = 0, counted = 0;
};

/// The clipped surrogate's part of one block of a minibatch's samples: its loss, its gradient
/// with respect to the logits (summed in the block's sample order) and its clip counts.
struct ppo_block_sum {
    double loss = 0;
    nn::matrix<double> dlogits;
    std::size_t clipped = 0, counted = 0;
};

/// @brief The clipped surrogate of the samples `block` (indices into the per-sample spans), from
/// zero, one sample after the other: every rank that computes a block gets the same bits. `lp`,
/// `p`: the unbiased log-probabilities and probabilities; `w`: 1 / (m n_active).
/// The nodes go in fixed chunks (in parallel under OpenMP): each node's gradient row is its own,
/// summed over the block's samples in order, and the chunks' losses and counts are added in chunk
/// order, so the result does not depend on the thread count. Why in parallel: with a bias, each
/// sample's log-softmax (in double, with a scalar exp per probability) ran on one thread, 16 samples
/// x 4 epochs of 82,000 x 8 terms per update at GO's largest size (1.1-1.3 s of a 10.9-12.5 s update).
template <class BiasScalar>
ppo_block_sum ppo_surrogate_block(const nn::matrix<double>& logits, const nn::matrix<double>& lp,
                                  const nn::matrix<double>& p, std::span<const std::size_t> block,
                                  std::span<const std::vector<int>> actions,
                                  std::span<const std::vector<double>> old_log_probs,
                                  std::span<const double> advantages, std::span<const std::uint8_t> active,
                                  const ppo_config& c, double w, std::span<const nn::matrix<BiasScalar>> bias) {
    const auto n = static_cast<std::size_t>(logits.rows()), k_choices = static_cast<std::size_t>(logits.cols());
    ppo_block_sum r;
    r.dlogits = nn::matrix<double>::Zero(logits.rows(), logits.cols());
    nn::matrix<double>& d = r.dlogits;
    const double lo = 1 - c.clip, hi = 1 + c.clip;
    constexpr std::size_t chunk = 4096;  // nodes per chunk: the results depend on it, not on the threads
    const std::size_t chunks = (n + chunk - 1) / chunk;
    struct chunk_sum {
        double loss = 0;
        std::size_t clipped = 0, counted = 0;
        std::exception_ptr failed;
    };
    std::vector<chunk_sum> sums(chunks);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic)
#endif
    for (std::size_t ci = 0; ci < chunks; ++ci) {
        chunk_sum& cs = sums[ci];
        try {
            const std::size_t i0 = ci * chunk, len = std::min(chunk, n - i0);
            const auto rows = static_cast<Eigen::Index>(len), first = static_cast<Eigen::Index>(i0);
            nn::matrix<double> biased_lp, biased_p;
            for (const std::size_t s : block) {
                // with a bias, each sample draws from its own distribution (std::exp: the same bits as per term)
                if (!bias.empty()) {
                    biased_lp = nn::log_softmax<double>(logits.middleRows(first, rows) +
                                                        bias[s].middleRows(first, rows).template cast<double>());
                    biased_p = biased_lp.unaryExpr([](double v) { return std::exp(v); });
                }
                // row of node i in the sample's log-probabilities and probabilities
                const Eigen::Index shift = bias.empty() ? 0 : first;
                const nn::matrix<double>& slp = bias.empty() ? lp : biased_lp;
                const nn::matrix<double>& sp = bias.empty() ? p : biased_p;
                const double A = advantages[s];
                for (std::size_t i = i0; i < i0 + len; ++i) {
                    if (!active[i]) continue;
                    const auto ii = static_cast<Eigen::Index>(i), row = ii - shift;
                    const int a = actions[s][i];
                    if (!std::isfinite(slp(row, a)))
                        throw error(
                            "rl::ppo",
                            concat("sample ", s, " takes action ", a, " at node ", i, ", which its bias forbids"),
                            "a feasible action (a finite bias)");
                    const double ratio = std::exp(slp(row, a) - old_log_probs[s][i]);
                    const double unclipped = ratio * A, kept = std::clamp(ratio, lo, hi) * A;
                    ++cs.counted;
                    if (ratio < lo || ratio > hi) ++cs.clipped;
                    cs.loss -= w * std::min(unclipped, kept);
                    if (unclipped <= kept) {  // the unclipped term is active: d(-ratio A)/dlogits
                        const double g = w * A * ratio;
                        for (std::size_t j = 0; j < k_choices; ++j)
                            d(ii, static_cast<Eigen::Index>(j)) += g * sp(row, static_cast<Eigen::Index>(j));
                        d(ii, a) -= g;
                    }
                }
            }
        } catch (...) {
            cs.failed = std::current_exception();
        }
    }
    for (const chunk_sum& cs : sums) {
        if (cs.failed) std::rethrow_exception(cs.failed);  // the first chunk's: the same error on any thread count
        r.loss += cs.loss;
        r.clipped += cs.clipped;
        r.counted += cs.counted;
    }
    return r;
}

/// Appends a block sum to `out` as bytes (loss, counts, then the gradient's doubles).
inline void append_block_sum(std::string& out, const ppo_block_sum& b) {
    append_raw(out, b.loss);
    append_raw(out, static_cast<std::uint64_t>(b.clipped));
    append_raw(out, static_cast<std::uint64_t>(b.counted));
    const std::size_t at = out.size(), bytes = static_cast<std::size_t>(b.dlogits.size()) * sizeof(double);
    out.resize(at + bytes);
    if (bytes) std::memcpy(out.data() + at, b.dlogits.data(), bytes);
}

/// Reads a block sum of a rows x cols gradient appended by append_block_sum, from rank `from`.
inline ppo_block_sum read_block_sum(const std::string& in, std::size_t& at, std::size_t from, Eigen::Index rows,
                                    Eigen::Index cols) {
    ppo_block_sum b;
    b.loss = read_raw<double>(in, at, from);
    b.clipped = static_cast<std::size_t>(read_raw<std::uint64_t>(in, at, from));
    b.counted = static_cast<std::size_t>(read_raw<std::uint64_t>(in, at, from));
    const std::size_t bytes = static_cast<std::size_t>(rows * cols) * sizeof(double);
    if (in.size() - at < bytes)
        throw error("rl::ppo", concat("rank ", from, "'s loss gradient of a block is cut short"),
                    concat(bytes, " bytes"));
    b.dlogits.resize(rows, cols);
    if (bytes) std::memcpy(b.dlogits.data(), in.data() + at, bytes);
    at += bytes;
    return b;
}

/// @brief The loss update() minimizes on one minibatch, and its gradient, derived by hand: the
/// clipped surrogate with a ratio per active node, minus the entropy bonus, plus the value loss
/// (value_head baseline). A pure function, so that it is checked against finite differences.
///
/// Per active node i of sample s with action a, ratio = exp(lp_s(i, a) - old_log_probs[s][i]) and
/// the loss gets -min(ratio A_s, clamp(ratio) A_s) / (m n_active); the entropy bonus is
/// -entropy_coef H_i / n_active on the unbiased logits; the value loss value_coef (v - R_s)^2 / 2m.
///
/// The surrogate's sum over the minibatch is taken in blocks of c.gradient_block samples (in
/// `batch` order; ppo_surrogate_block), the blocks added in block order starting from the first,
/// then the entropy's gradient: a computation that does not depend on who computes the blocks.
/// With `sharding`, block j is computed by rank j mod ranks() and an all-gather gives every rank
/// every block (a minibatch of one block is computed by every rank, with no exchange), so the
/// result is the single process's bit for bit on any rank count; every rank must call it.
/// @param logits current logits (nodes x choices). @param batch the minibatch's sample indices.
/// @param actions, old_log_probs per sample and node: the action drawn and its log-probability
/// when it was drawn. @param advantages, returns per sample. @param active per node.
/// @param bias empty, or per sample a nodes x choices matrix added to the logits before the
/// softmax (a decoder's own scores; -infinity marks an infeasible action, which then has
/// probability 0: a row with one feasible action gives no gradient). The taken action must be
/// feasible. @throws goopt::error when it is not.
template <class BiasScalar>
ppo_minibatch_result ppo_minibatch_loss_of(const nn::matrix<double>& logits, std::span<const std::size_t> batch,
                                           std::span<const std::vector<int>> actions,
                                           std::span<const std::vector<double>> old_log_probs,
                                           std::span<const double> advantages, std::span<const std::uint8_t> active,
                                           const ppo_config& c, double value, std::span<const double> returns,
                                           std::span<const nn::matrix<BiasScalar>> bias, sample_sharding* sharding) {
    const auto n = static_cast<std::size_t>(logits.rows()), k_choices = static_cast<std::size_t>(logits.cols());
    if (c.gradient_block == 0) throw error("rl::ppo", "gradient_block is 0", "at least 1");
    std::size_t n_active = 0;
    for (auto a : active) n_active += a != 0;
    const nn::matrix<double> lp = nn::log_softmax<double>(logits);
    // probabilities once per step, not once per sample (std::exp: the same bits as per term)
    const nn::matrix<double> p = lp.unaryExpr([](double v) { return std::exp(v); });
    const double m = static_cast<double>(batch.size());
    const double w = 1.0 / (m * static_cast<double>(n_active));

    const std::size_t B = c.gradient_block, blocks = (batch.size() + B - 1) / B;
    auto block = [&](std::size_t j) {
        return ppo_surrogate_block(logits, lp, p, batch.subspan(j * B, std::min(batch.size(), (j + 1) * B) - j * B),
                                   actions, old_log_probs, advantages, active, c, w, bias);
    };
    const std::size_t R = sharding && blocks > 1 ? sharding->ranks() : 1, me = R > 1 ? sharding->rank() : 0;
    std::vector<ppo_block_sum> sums(blocks);
    if (R == 1) {
        for (std::size_t j = 0; j < blocks; ++j) sums[j] = block(j);
    } else {
        std::string mine;
        for (std::size_t j = me; j < blocks; j += R) append_block_sum(mine, sums[j] = block(j));
        const std::vector<std::string> all = sharding->all_gather(mine);
        if (all.size() != R)
            throw error("rl::ppo", concat("all_gather returned ", all.size(), " parts"), concat(R, ", one per rank"));
        for (std::size_t r = 0; r < R; ++r) {
            if (r == me) continue;
            std::size_t at = 0;
            for (std::size_t j = r; j < blocks; j += R)
                sums[j] = read_block_sum(all[r], at, r, logits.rows(), logits.cols());
            if (at != all[r].size())
                throw error("rl::ppo", concat("rank ", r, " sent ", all[r].size() - at, " bytes too many"),
                            "exactly its blocks of the minibatch");
        }
    }
    ppo_minibatch_result r;
    // the first block as it is (a one-block minibatch sums as one loop over its samples)
    r.dlogits = blocks ? std::move(sums[0].dlogits) : nn::matrix<double>::Zero(logits.rows(), logits.cols());
    for (std::size_t j = 0; j < blocks; ++j) {
        if (j > 0) r.dlogits += sums[j].dlogits;
        r.loss += sums[j].loss;
        r.clipped += sums[j].clipped;
        r.counted += sums[j].counted;
    }
    nn::matrix<double>& d = r.dlogits;
    for (std::size_t i = 0; i < n; ++i) {
        if (!active[i]) continue;
        const auto ii = static_cast<Eigen::Index>(i);
        // entropy bonus: loss -= c H_i / n_active; dH/dl_j = -p_j (log p_j + H); a choice of
        // probability 0 adds nothing (and its log-probability may be -infinity: 0 * -inf is NaN)
        double H = 0;
        for (std::size_t j = 0; j < k_choices; ++j) {
            const auto jj = static_cast<Eigen::Index>(j);
            if (p(ii, jj) != 0) H -= p(ii, jj) * lp(ii, jj);
        }
        r.loss -= c.entropy_coef * H / static_cast<double>(n_active);
        for (std::size_t j = 0; j < k_choices; ++j) {
            const auto jj = static_cast<Eigen::Index>(j);
            if (p(ii, jj) != 0)
                d(ii, jj) += c.entropy_coef / static_cast<double>(n_active) * p(ii, jj) * (lp(ii, jj) + H);
        }
    }
    if (c.baseline == baseline_kind::value_head) {
        for (const std::size_t s : batch) {
            const double e = value - returns[s];
            r.loss += c.value_coef * 0.5 * e * e / m;
            r.dvalue += c.value_coef * e / m;
        }
    }
    return r;
}

/// ppo_minibatch_loss_of with a bias in double (or none).
inline ppo_minibatch_result ppo_minibatch_loss(const nn::matrix<double>& logits, std::span<const std::size_t> batch,
                                               std::span<const std::vector<int>> actions,
                                               std::span<const std::vector<double>> old_log_probs,
                                               std::span<const double> advantages, std::span<const std::uint8_t> active,
                                               const ppo_config& c, double value, std::span<const double> returns,
                                               std::span<const nn::matrix<double>> bias = {},
                                               sample_sharding* sharding = nullptr) {
    return ppo_minibatch_loss_of<double>(logits, batch, actions, old_log_probs, advantages, active, c, value, returns,
                                         bias, sharding);
}

/// ppo_minibatch_loss_of with a decoder's bias as it reports it, in float (each term is the double
/// of the float: the same sums as with a copy in double, without one per sample).
inline ppo_minibatch_result ppo_minibatch_loss(const nn::matrix<double>& logits, std::span<const std::size_t> batch,
                                               std::span<const std::vector<int>> actions,
                                               std::span<const std::vector<double>> old_log_probs,
                                               std::span<const double> advantages, std::span<const std::uint8_t> active,
                                               const ppo_config& c, double value, std::span<const double> returns,
                                               std::span<const nn::matrix<float>> bias,
                                               sample_sharding* sharding = nullptr) {
    return ppo_minibatch_loss_of<float>(logits, batch, actions, old_log_probs, advantages, active, c, value, returns,
                                        bias, sharding);
}

/// A logit that makes a guided decoder take its column wherever the decoder leaves that column open
/// (a finite bias) and, where it does not, the best open column as with zero logits: finite, so the
/// sum with a finite bias stays finite and ordered (the largest finite float bias is ~3.4e38).
inline constexpr double teacher_forcing_logit = 1e200;

/// The imitated decision walked through a guided decoder (teacher forcing): the decoder's state
/// before each node is the one the target's earlier nodes leave, so the bias rows are those the
/// policy's greedy decision meets while it agrees with the target.
struct teacher_forced_walk {
    nn::matrix<float> bias;               ///< nodes x choices: the decoder's bias along the target's walk
    std::vector<std::uint8_t> learnable;  ///< active, with a choice (two or more open columns), target open
    imitation_reach reach;
};

/// @brief Walks `target` through `env`'s guided decoder: a greedy decode of logits that hold
/// teacher_forcing_logit on each node's target column. Greedy decoding draws nothing and the decoder is a
/// function of its arguments alone (rl::GuidedEnvironment), so one walk serves the whole warm start.
/// @throws goopt::error when the decoder's answer has the wrong shape.
template <class Env>
teacher_forced_walk walk_target(Env& env, const typename Env::observation& obs, std::span<const int> target,
                                std::span<const std::uint8_t> active) {
    const std::size_t n = target.size(), k = env.num_choices();
    nn::matrix<double> forcing = nn::matrix<double>::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k));
    for (std::size_t i = 0; i < n; ++i) forcing(static_cast<Eigen::Index>(i), target[i]) = teacher_forcing_logit;
    guided_sample g = env.decode(obs, forcing, 0, true, 0);
    if (g.actions.size() != n || static_cast<std::size_t>(g.bias.rows()) != n ||
        static_cast<std::size_t>(g.bias.cols()) != k)
        throw error("rl::ppo warm start",
                    concat("the decoder gave ", g.actions.size(), " actions and a ", g.bias.rows(), " x ",
                           g.bias.cols(), " bias"),
                    concat(n, " actions and a ", n, " x ", k, " bias"));
    teacher_forced_walk w{.bias = std::move(g.bias), .learnable = std::vector<std::uint8_t>(n, 0), .reach = {}};
    for (std::size_t i = 0; i < n; ++i) {
        if (!active[i]) continue;
        const auto ii = static_cast<Eigen::Index>(i);
        const auto open = (w.bias.row(ii).array() > -std::numeric_limits<float>::infinity()).count();
        const bool target_open = std::isfinite(w.bias(ii, target[i]));
        if (open >= 2 && target_open) w.learnable[i] = 1;
        if (open >= 2 && !target_open) ++w.reach.closed;
        if (open < 2 && !target_open) ++w.reach.forced;
        if (g.actions[i] != target[i]) ++w.reach.diverged;
    }
    return w;
}

/// @brief The warm start's loss through a guided decoder: the mean over the nodes with `rows[i]` set
/// of the cross-entropy of the decoder's distribution softmax(logits_i + bias_i) towards `target[i]`,
/// and its gradient in the logits, (softmax(logits_i + bias_i) - onehot(target_i)) / rows counted,
/// zero on the other rows. A column of bias -infinity has probability 0 and no gradient.
/// @throws goopt::error when a counted row's target column has bias -infinity (infinite loss).
/// @return the loss (0 when no row counts).
inline double decoder_cross_entropy(const nn::matrix<double>& logits, const nn::matrix<float>& bias,
                                    std::span<const int> target, std::span<const std::uint8_t> rows,
                                    nn::matrix<double>& dlogits) {
    const std::size_t n = static_cast<std::size_t>(logits.rows());
    if (bias.rows() != logits.rows() || bias.cols() != logits.cols() || target.size() != n || rows.size() != n)
        throw error("rl::ppo warm start",
                    concat(logits.rows(), " x ", logits.cols(), " logits, a ", bias.rows(), " x ", bias.cols(),
                           " bias, ", target.size(), " targets, ", rows.size(), " rows"),
                    "one shape (nodes x choices) and one target and row flag per node");
    dlogits = nn::matrix<double>::Zero(logits.rows(), logits.cols());
    const auto counted = static_cast<double>(std::count_if(rows.begin(), rows.end(), [](auto r) { return r != 0; }));
    double loss = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!rows[i]) continue;
        const auto ii = static_cast<Eigen::Index>(i);
        if (!std::isfinite(bias(ii, target[i])))
            throw error("rl::ppo warm start", concat("node ", i, "'s target ", target[i], ", which its bias forbids"),
                        "a target the decoder allows on every counted node");
        const Eigen::RowVectorXd total = logits.row(ii) + bias.row(ii).template cast<double>();
        const double top = total.maxCoeff();
        // std::exp: exactly 0 at -infinity (Eigen's vectorized exp leaves a denormal there)
        const Eigen::RowVectorXd e = (total.array() - top).unaryExpr([](double v) { return std::exp(v); }).matrix();
        const double z = e.sum();
        loss -= (total(target[i]) - top - std::log(z)) / counted;
        dlogits.row(ii) = e / (z * counted);
        dlogits(ii, target[i]) -= 1 / counted;
    }
    return loss;
}

}  // namespace detail

template <Environment Env, ActorCritic<typename Env::observation> Net, nn::Optimizer<typename Net::scalar> Opt>
template <class Output>
auto ppo<Env, Net, Opt>::minibatch_loss(const rollout& ro, const Output& out, std::span<const std::size_t> batch,
                                        sample_sharding* sharding) const {
    return detail::ppo_minibatch_loss(out.logits.at(0).template cast<double>(), batch,
                                      std::span<const std::vector<int>>(ro.actions), ro.old_taken, ro.adv, ro.active,
                                      c_, static_cast<double>(out.value), ro.r,
                                      std::span<const nn::matrix<float>>(ro.bias), sharding);
}

template <Environment Env, ActorCritic<typename Env::observation> Net, nn::Optimizer<typename Net::scalar> Opt>
template <std::uniform_random_bit_generator Rng>
void ppo<Env, Net, Opt>::imitate(Rng& rng) {
    const auto& obs = env_->observe(rng);
    const auto active = env_->active();
    if (imitation_.size() != active.size())
        throw error("rl::ppo", concat("the warm start's imitation target has ", imitation_.size(), " actions"),
                    concat(active.size(), " (set_imitation_target)"));
    const double lr = opt_.learning_rate();
    opt_.set_learning_rate(c_.imitation_learning_rate);
    // a guided environment decides by softmax(logits + the decoder's bias), and the bias of a node
    // depends on where the earlier ones went: imitate that distribution along the target's own walk
    // (teacher forcing), not softmax(logits), which the decoder's bias pulls away from the target
    std::optional<detail::teacher_forced_walk> walk;
    if constexpr (GuidedEnvironment<Env>)
        if (env_->guided()) walk = detail::walk_target(*env_, obs, imitation_, active);
    if (walk) imitation_reach_ = walk->reach;
    auto one_step = [&] {
        nn::zero_grad(ps_);
        auto out = net_->evaluate(obs, {});
        nn::matrix<scalar> d;
        double loss = 0;
        if (walk) {
            nn::matrix<double> dd;
            loss = detail::decoder_cross_entropy(out.logits[0].template cast<double>(), walk->bias, imitation_,
                                                 walk->learnable, dd);
            d = dd.template cast<scalar>();
        } else {
            loss = static_cast<double>(nn::cross_entropy<scalar>(out.logits[0], imitation_, d));
            for (std::size_t i = 0; i < active.size(); ++i)
                if (!active[i]) d.row(static_cast<Eigen::Index>(i)).setZero();
        }
        net_->backward({d}, scalar(0));
        step(loss);
        ++imitation_done_;
    };
    // share of the active nodes whose action in the policy's mode is the target's: the most likely
    // action, or where the environment decodes, the decoder's greedy decision (what the policy
    // decides: the decoder adds its heuristic's scores to the logits, so the logits' own argmax
    // can disagree with the decision on most ops while the decision is the target's)
    auto agreement = [&] {
        const auto out = net_->evaluate(obs, {});
        std::vector<int> mode = nn::argmax_rows(out.logits[0]);
        if constexpr (GuidedEnvironment<Env>)
            if (env_->guided()) mode = env_->decode(obs, out.logits[0].template cast<double>(), 0, true, 0).actions;
        std::size_t n = 0, same = 0;
        for (std::size_t i = 0; i < active.size(); ++i) {
            if (!active[i]) continue;
            ++n;
            same += mode[i] == imitation_[i];
        }
        return n == 0 ? 1.0 : static_cast<double>(same) / static_cast<double>(n);
    };
    // the policy's mode (the decoder's greedy decision where the environment decodes) against the
    // target, simulated: mode step / target step - 1; NaN for an outcome without a step time
    auto mode_gap = [&]() -> double {
        if constexpr (requires(const outcome& o) { double(o.step_time); }) {
            const auto out = net_->evaluate(obs, {});
            std::vector<int> mode = nn::argmax_rows(out.logits[0]);
            if constexpr (GuidedEnvironment<Env>)
                if (env_->guided()) mode = env_->decode(obs, out.logits[0].template cast<double>(), 0, true, 0).actions;
            const double target = static_cast<double>(env_->evaluate(obs, imitation_, 0).step_time);
            const double got = static_cast<double>(env_->evaluate(obs, mode, 0).step_time);
            if (!(target > 0)) return std::numeric_limits<double>::quiet_NaN();
            return got > 0 ? got / target - 1 : std::numeric_limits<double>::infinity();  // 0: refused
        } else {
            return std::numeric_limits<double>::quiet_NaN();
        }
    };
    auto reproduced = [&] {
        if (imitation_agreement_ < c_.imitation_min_agreement) return false;
        imitation_mode_gap_ = mode_gap();
        return std::isnan(imitation_mode_gap_) || imitation_mode_gap_ <= c_.imitation_max_mode_gap;
    };
    // through a decoder, the policy may reproduce the target before any step (a zero head decodes to
    // the heuristic itself), and the cross-entropy steps, which move the logits of ops the network
    // cannot tell apart together, can lose that: keep the policy as it was, then, if the steps do not
    // reproduce the target as well (issue #25: on ViT-B/16 the zero head decodes to m-ETF exactly,
    // and 1000 steps end at an agreement of 0.84)
    std::vector<nn::matrix<scalar>> kept;
    double kept_agreement = 0, kept_gap = 0;
    if (walk && c_.imitation_min_agreement > 0) {
        imitation_agreement_ = agreement();
        if (reproduced()) {
            for (const auto* p : ps_) kept.push_back(p->value);
            kept_agreement = imitation_agreement_;
            kept_gap = imitation_mode_gap_;
        }
    }
    while (imitation_done_ < c_.imitation_steps) one_step();
    imitation_agreement_ = agreement();
    if (c_.imitation_min_agreement > 0) {
        while (!reproduced() && kept.empty() && imitation_done_ < c_.imitation_max_steps) {
            for (int k = 0; k < 10 && imitation_done_ < c_.imitation_max_steps; ++k) one_step();
            imitation_agreement_ = agreement();
        }
        if (imitation_agreement_ < c_.imitation_min_agreement) imitation_mode_gap_ = mode_gap();  // at the cap
        const bool now = imitation_agreement_ >= c_.imitation_min_agreement &&
                         (std::isnan(imitation_mode_gap_) || imitation_mode_gap_ <= c_.imitation_max_mode_gap);
        if (!now && !kept.empty()) {
            for (std::size_t j = 0; j < ps_.size(); ++j) ps_[j]->value = kept[j];
            imitation_agreement_ = kept_agreement;
            imitation_mode_gap_ = kept_gap;
        }
    }
    opt_.set_learning_rate(lr);
}

template <Environment Env, ActorCritic<typename Env::observation> Net, nn::Optimizer<typename Net::scalar> Opt>
template <std::uniform_random_bit_generator Rng, class Visitor>
typename ppo<Env, Net, Opt>::rollout ppo<Env, Net, Opt>::collect(Env& env, const typename Env::observation& obs,
                                                                 const nn::matrix<scalar>& logits, Rng& rng,
                                                                 Visitor& visitor, sample_sharding* sharding) {
    const auto active = env.active();
    const std::size_t K = c_.samples_per_update, k_choices = env.num_choices();
    const auto n = static_cast<std::size_t>(logits.rows());
    if (n != active.size() || static_cast<std::size_t>(logits.cols()) != k_choices)
        throw error("rl::ppo", concat("the network gives ", logits.rows(), " x ", logits.cols(), " logits"),
                    concat(active.size(), " x ", k_choices, " (nodes x choices of the environment)"));
    const nn::matrix<double> old_lp = detail::log_probs(logits);
    std::size_t n_active = 0;
    for (auto a : active) n_active += a != 0;
    if (n_active == 0) throw error("rl::ppo", "the environment has no active node", "at least one");
    rollout ro;
    ro.active.assign(active.begin(), active.end());
    for (std::size_t i = 0; i < n; ++i) {
        if (!active[i]) continue;
        for (std::size_t j = 0; j < k_choices; ++j) ro.entropy -= std::exp(old_lp(i, j)) * old_lp(i, j);
    }
    ro.entropy /= static_cast<double>(n_active);

    // a guided environment decodes each sample itself (on the workers, each from its own seed drawn
    // here in order, so any thread count gives the same samples) and reports the bias it added
    const bool guided = [&] {
        if constexpr (GuidedEnvironment<Env>) return static_cast<bool>(env.guided());
        else return false;
    }();
    const std::size_t E = K + (c_.evaluate_mode ? 1 : 0);  // the mode is evaluated last, not trained on
    std::vector<std::vector<int>>& actions = ro.actions;
    actions.resize(E);
    std::vector<nn::matrix<float>> drawn_bias;
    std::vector<std::vector<double>>& taken = ro.old_taken;  // per sample and node (guided: filled by the workers)
    taken.resize(E);
    std::vector<std::uint64_t> seeds;
    std::vector<std::uint32_t> strata(guided ? K : 0, 0);
    nn::matrix<double> logits_d;
    if (guided) {
        std::uniform_int_distribution<std::uint64_t> draw;
        for (std::size_t s = 0; s < E; ++s) seeds.push_back(s < K ? draw(rng) : 0);
        drawn_bias.resize(E);
        logits_d = logits.template cast<double>();
    } else {
        for (std::size_t s = 0; s < K; ++s) actions[s] = nn::sample_rows(logits, rng);
        if (c_.evaluate_mode) actions[K] = nn::argmax_rows(logits);
    }
    std::vector<outcome> outs(E);
    const std::size_t T = std::min(c_.threads, K);
    // with sharding, this process evaluates samples rank, rank + ranks, ... and receives the others'
    const std::size_t rank = sharding ? sharding->rank() : 0, ranks = sharding ? sharding->ranks() : 1;
    std::vector<std::exception_ptr> failed(T);
    // every exception, of any type, is carried to this thread and rethrown once all workers have
    // joined: one escaping a std::thread would terminate the program instead
    auto work = [&](std::size_t w) {
        try {
            for (std::size_t s = rank + w * ranks; s < E; s += T * ranks) {
                if constexpr (GuidedEnvironment<Env>)
                    if (guided) {  // the mode: the decoder's greedy decision
                        guided_sample g = env.decode(obs, logits_d, seeds[s], s >= K, w);
                        if (g.actions.size() != n || static_cast<std::size_t>(g.bias.rows()) != n ||
                            static_cast<std::size_t>(g.bias.cols()) != k_choices)
                            throw error("rl::ppo",
                                        concat("the decoder gave ", g.actions.size(), " actions and a ", g.bias.rows(),
                                               " x ", g.bias.cols(), " bias"),
                                        concat(n, " actions and a ", n, " x ", k_choices, " bias"));
                        actions[s] = std::move(g.actions);
                        drawn_bias[s] = std::move(g.bias);
                        if (s < K) strata[s] = g.stratum;
                        // the ratio's denominator: the action's log-probability under the sample's own
                        // distribution, softmax(logits + bias), computed by the rank that drew it
                        if (s < K) {
                            const nn::matrix<double> lp_s =
                                detail::log_probs<double>(logits_d + drawn_bias[s].template cast<double>());
                            taken[s].resize(n);
                            for (std::size_t i = 0; i < n; ++i)
                                taken[s][i] = lp_s(static_cast<Eigen::Index>(i), actions[s][i]);
                        }
                    }
                outs[s] = env.evaluate(obs, actions[s], w);
            }
        } catch (...) {
            failed[w] = std::current_exception();
        }
    };
    if (T == 1) work(0);
    else {
        std::vector<std::thread> pool;
        for (std::size_t w = 0; w < T; ++w) pool.emplace_back(work, w);
        for (auto& t : pool) t.join();
    }
    for (auto& f : failed)
        if (f) std::rethrow_exception(f);
    if constexpr (std::is_trivially_copyable_v<outcome>)  // else the constructor refused sharding
        if (sharding)
            detail::share_samples(*sharding, std::span<outcome>(outs), std::span<std::vector<int>>(actions),
                                  std::span<nn::matrix<float>>(drawn_bias), std::span<std::vector<double>>(taken));
    // strata only where every sample's is known here: a rank holds only the samples it decoded
    if (!sharding && std::any_of(strata.begin(), strata.end(), [&](std::uint32_t x) { return x != strata[0]; }))
        ro.stratum = std::move(strata);
    ro.r.resize(K);
    for (std::size_t s = 0; s < K; ++s) {
        visitor.on_sample(std::span<const int>(actions[s]), outs[s]);
        ro.r[s] = static_cast<double>(outs[s].reward);
    }
    if (c_.evaluate_mode) {
        ro.mode = static_cast<double>(outs[K].reward);
        notify_mode(visitor, std::span<const int>(actions[K]), outs[K]);
    }
    ro.mean = std::accumulate(ro.r.begin(), ro.r.end(), 0.0) / static_cast<double>(K);
    double var = 0;
    for (double x : ro.r) var += (x - ro.mean) * (x - ro.mean);
    ro.spread = std::sqrt(var / static_cast<double>(K));
    ro.best = *std::max_element(ro.r.begin(), ro.r.end());

    // each sample's log-probability per node when it was drawn (the ratio's denominator): of
    // softmax(logits), or under a guided decoder of softmax(logits + the decoder's bias), which is
    // fixed per sample, so the ratio of the decoder's own draw is exact (the workers computed it)
    if (guided) {
        drawn_bias.resize(K);  // the mode's is not trained on
        ro.bias = std::move(drawn_bias);
    }
    taken.resize(K);
    for (std::size_t s = 0; s < K && !guided; ++s) {
        taken[s].resize(n);
        for (std::size_t i = 0; i < n; ++i) taken[s][i] = old_lp(static_cast<Eigen::Index>(i), actions[s][i]);
    }
    actions.resize(K);
    return ro;
}

template <Environment Env, ActorCritic<typename Env::observation> Net, nn::Optimizer<typename Net::scalar> Opt>
template <std::uniform_random_bit_generator Rng, PpoVisitor<typename Env::outcome> Visitor>
requires std::uniform_random_bit_generator<Rng> update_stats ppo<Env, Net, Opt>::update(Rng& rng, Visitor&& visitor) {
    const auto& obs = env_->observe(rng);
    auto first = net_->evaluate(obs, {});
    rollout ro = collect(*env_, obs, first.logits.at(0), rng, visitor, c_.sharding);
    const std::size_t K = c_.samples_per_update;
    update_stats st;
    st.entropy = ro.entropy;
    st.mean_reward = ro.mean;
    st.best_reward = ro.best;
    st.mode_reward = ro.mode;
    samples_ += K;
    double base = 0;
    if (c_.baseline == baseline_kind::value_head) base = static_cast<double>(first.value);
    else {
        base = average_set_ ? average_ : ro.mean;
        average_ = average_set_ ? c_.baseline_decay * average_ + (1 - c_.baseline_decay) * ro.mean : ro.mean;
        average_set_ = true;
    }
    if (!ro.stratum.empty()) {
        ro.adv = detail::stratified_advantages(ro.r, ro.stratum, c_.normalize_advantages);
    } else {
        ro.adv.resize(K);
        for (std::size_t s = 0; s < K; ++s)
            ro.adv[s] = (ro.r[s] - base) / (c_.normalize_advantages && ro.spread > 1e-12 ? ro.spread : 1.0);
    }

    std::vector<std::size_t> order(K);
    std::iota(order.begin(), order.end(), std::size_t{0});
    for (std::size_t epoch = 0; epoch < c_.epochs; ++epoch) {
        std::shuffle(order.begin(), order.end(), rng);
        std::size_t clipped = 0, counted = 0;
        for (std::size_t b0 = 0; b0 < K; b0 += c_.minibatch) {
            const std::size_t m = std::min(K, b0 + c_.minibatch) - b0;
            nn::zero_grad(ps_);
            // the first step's parameters are those the samples were drawn with: its forward pass is
            // the sampling one, whose activations the network still holds for backward
            auto out = epoch == 0 && b0 == 0 ? std::move(first) : net_->evaluate(obs, {});
            const auto mb = minibatch_loss(ro, out, std::span<const std::size_t>(order).subspan(b0, m), c_.sharding);
            clipped += mb.clipped;
            counted += mb.counted;
            net_->backward({mb.dlogits.template cast<scalar>()}, static_cast<scalar>(mb.dvalue));
            step(mb.loss);
            st.loss = mb.loss;
        }
        st.clip_fraction = counted ? static_cast<double>(clipped) / static_cast<double>(counted) : 0.0;
    }
    st.update = ++updates_;
    st.samples = samples_;
    return st;
}

template <Environment Env, ActorCritic<typename Env::observation> Net, nn::Optimizer<typename Net::scalar> Opt>
template <std::uniform_random_bit_generator Rng, PpoVisitor<typename Env::outcome> Visitor>
requires std::uniform_random_bit_generator<Rng> update_stats ppo<Env, Net, Opt>::update_mixed(
    std::span<Env* const> envs, std::span<const std::size_t> owner, Rng& rng, Visitor&& visitor) {
    constexpr std::string_view who = "rl::ppo::update_mixed";
    const std::size_t G = envs.size(), K = c_.samples_per_update;
    const std::size_t me = c_.sharding ? c_.sharding->rank() : 0, R = c_.sharding ? c_.sharding->ranks() : 1;
    if (G == 0) throw error(who, "no environment", "at least one");
    if (R > 1 && !owner.empty() && owner.size() != G)
        throw error(who, concat(owner.size(), " owners for ", G, " environments"), "one per environment, or none");
    // the rank that holds environment k
    const auto holder = [&](std::size_t k) { return R == 1 ? std::size_t{0} : owner.empty() ? k % R : owner[k]; };
    for (std::size_t k = 0; k < G; ++k) {
        if (holder(k) >= R)
            throw error(who, concat("environment ", k, "'s owner is rank ", holder(k)), concat("a rank below ", R));
        if ((envs[k] != nullptr) != (holder(k) == me))
            throw error(who,
                        concat("environment ", k, envs[k] ? " is held" : " is missing", " on rank ", me, " of ", R),
                        concat("environment ", k, " on rank ", holder(k), " only"));
    }
    // one stream per environment, seeded in environment order from the caller's generator: a sample
    // does not depend on which rank draws it
    std::vector<std::uint64_t> seeds(G);
    {
        std::uniform_int_distribution<std::uint64_t> draw;
        for (auto& s : seeds) s = draw(rng);
    }
    struct held {
        std::size_t k;
        Env* env;
        const typename Env::observation* obs;
        std::mt19937_64 rng;
        rollout ro;
        std::vector<std::size_t> order;
    };
    std::vector<held> mine;
    for (std::size_t k = 0; k < G; ++k) {
        if (holder(k) != me) continue;
        held h{k, envs[k], nullptr, std::mt19937_64(seeds[k]), {}, {}};
        h.env->set_workers(std::min(c_.threads, K));
        h.obs = &h.env->observe(h.rng);
        const auto first = net_->evaluate(*h.obs, {});
        if constexpr (requires { visitor.on_environment(k); }) visitor.on_environment(k);
        h.ro = collect(*h.env, *h.obs, first.logits.at(0), h.rng, visitor, nullptr);
        // advantages per environment: its own samples' mean (or its value) and spread
        const double base = c_.baseline == baseline_kind::value_head ? static_cast<double>(first.value) : h.ro.mean;
        if (!h.ro.stratum.empty()) {
            h.ro.adv = detail::stratified_advantages(h.ro.r, h.ro.stratum, c_.normalize_advantages);
        } else {
            h.ro.adv.resize(K);
            for (std::size_t s = 0; s < K; ++s)
                h.ro.adv[s] = (h.ro.r[s] - base) / (c_.normalize_advantages && h.ro.spread > 1e-12 ? h.ro.spread : 1.0);
        }
        h.order.resize(K);
        std::iota(h.order.begin(), h.order.end(), std::size_t{0});
        mine.push_back(std::move(h));
    }
    // every environment's figures, in environment order, on every rank
    auto gather = [&](const std::string& part) {
        return c_.sharding ? c_.sharding->all_gather(part) : std::vector<std::string>{part};
    };
    auto part_of = [&](const std::vector<std::string>& all, std::size_t k) -> const std::string& {
        if (all.size() != R)
            throw error(who, concat("all_gather returned ", all.size(), " parts"), concat(R, ", one per rank"));
        return all[holder(k)];
    };
    update_stats st;
    {
        std::string part;
        for (const auto& h : mine)
            for (double v : {h.ro.mean, h.ro.best, h.ro.mode, h.ro.entropy}) detail::append_raw(part, v);
        const auto all = gather(part);
        std::vector<std::size_t> at(R, 0);
        st.best_reward = -std::numeric_limits<double>::infinity();
        for (std::size_t k = 0; k < G; ++k) {
            double v[4];
            for (double& x : v) x = detail::read_raw<double>(part_of(all, k), at[holder(k)], holder(k));
            st.mean_reward += v[0] / static_cast<double>(G);
            st.best_reward = std::max(st.best_reward, v[1]);
            st.mode_reward += v[2] / static_cast<double>(G);
            st.entropy += v[3] / static_cast<double>(G);
        }
    }
    samples_ += K * G;

    // each minibatch step: every environment's loss gradient on its own minibatch, gathered and summed
    // in environment order (on one rank and on many the same floating-point sums), then one Adam step
    std::vector<scalar> sum;
    for (std::size_t epoch = 0; epoch < c_.epochs; ++epoch) {
        for (auto& h : mine) std::shuffle(h.order.begin(), h.order.end(), h.rng);
        std::size_t clipped = 0, counted = 0;
        for (std::size_t b0 = 0; b0 < K; b0 += c_.minibatch) {
            const std::size_t m = std::min(K, b0 + c_.minibatch) - b0;
            std::string part;
            for (auto& h : mine) {
                nn::zero_grad(ps_);
                const auto out = net_->evaluate(*h.obs, {});
                const auto mb =
                    minibatch_loss(h.ro, out, std::span<const std::size_t>(h.order).subspan(b0, m), nullptr);
                net_->backward({mb.dlogits.template cast<scalar>()}, static_cast<scalar>(mb.dvalue));
                detail::append_raw(part, mb.loss);
                detail::append_raw(part, static_cast<std::uint64_t>(mb.clipped));
                detail::append_raw(part, static_cast<std::uint64_t>(mb.counted));
                for (const auto* p : ps_) {
                    const std::size_t at = part.size(),
                                      bytes = static_cast<std::size_t>(p->grad.size()) * sizeof(scalar);
                    part.resize(at + bytes);
                    std::memcpy(part.data() + at, p->grad.data(), bytes);
                }
            }
            const auto all = gather(part);
            std::vector<std::size_t> at(R, 0);
            nn::zero_grad(ps_);
            double loss = 0;
            for (std::size_t k = 0; k < G; ++k) {
                const std::string& from = part_of(all, k);
                const std::size_t r = holder(k);
                std::size_t& pos = at[r];
                loss += detail::read_raw<double>(from, pos, r);
                clipped += static_cast<std::size_t>(detail::read_raw<std::uint64_t>(from, pos, r));
                counted += static_cast<std::size_t>(detail::read_raw<std::uint64_t>(from, pos, r));
                for (auto* p : ps_) {
                    const auto count = static_cast<std::size_t>(p->grad.size());
                    if (from.size() - pos < count * sizeof(scalar))
                        throw error(who, concat("rank ", r, "'s gradient of environment ", k, " is cut short"),
                                    concat(count, " values of '", p->name, "'"));
                    sum.resize(count);
                    std::memcpy(sum.data(), from.data() + pos, count * sizeof(scalar));
                    pos += count * sizeof(scalar);
                    scalar* g = p->grad.data();
                    for (std::size_t i = 0; i < count; ++i) g[i] += sum[i];
                }
            }
            for (std::size_t r = 0; r < R; ++r)
                if (at[r] != all[r].size())
                    throw error(who, concat("rank ", r, " sent ", all[r].size() - at[r], " bytes too many"),
                                "exactly its environments' gradients");
            step(loss);
            st.loss = loss;
        }
        st.clip_fraction = counted ? static_cast<double>(clipped) / static_cast<double>(counted) : 0.0;
    }
    st.update = ++updates_;
    st.samples = samples_;
    return st;
}

template <Environment Env, ActorCritic<typename Env::observation> Net, nn::Optimizer<typename Net::scalar> Opt>
template <SerializableRng Rng>
void ppo<Env, Net, Opt>::save_checkpoint(const std::filesystem::path& path, const Rng& rng, const std::string& extra) {
    if (c_.sharding && c_.sharding->rank() != 0) return;  // the ranks hold the same state: one writer
    io::record_writer out(checkpoint_tag, checkpoint_format_version);
    out.u64(sizeof(scalar)).u64(choices_saved());
    out.u64(updates_).u64(samples_).u64(imitation_done_);
    out.f64(average_).u64(average_set_ ? 1 : 0);
    std::ostringstream rs;
    rs << rng;
    out.bytes(rs.str());
    out.u64(opt_.steps()).bytes(Opt::name).u64(Opt::state_slots).u64(ps_.size());
    for (std::size_t i = 0; i < ps_.size(); ++i) {
        out.bytes(ps_[i]->name).matrix(ps_[i]->value);
        for (std::size_t k = 0; k < Opt::state_slots; ++k) out.matrix(opt_.state(k)[i]);
    }
    out.bytes(extra);
    out.write(path);
}

template <Environment Env, ActorCritic<typename Env::observation> Net, nn::Optimizer<typename Net::scalar> Opt>
template <SerializableRng Rng>
std::string ppo<Env, Net, Opt>::load_checkpoint(const std::filesystem::path& path, Rng& rng) {
    const std::string where = concat("rl::ppo checkpoint '", path.string(), "'");
    auto in = io::record_reader::from_file(path, where, checkpoint_tag, checkpoint_format_version);
    if (const auto scalar_bytes = in.u64("the scalar size"); scalar_bytes != sizeof(scalar))
        throw error(where, concat("scalars of ", scalar_bytes, " bytes"), concat(sizeof(scalar), " bytes"));
    if (const auto choices = in.u64("the number of choices"); choices != choices_saved())
        throw error(where,
                    choices == 0 ? std::string("made for any device count (a pair head)")
                                 : concat("made for ", choices, " choices per node (devices)"),
                    choices_saved() == 0
                        ? std::string("a policy for any device count (a pair head), as this network is")
                        : concat(env_->num_choices(), " (the devices of this run)"));
    const std::uint64_t updates = in.u64("the update count"), samples = in.u64("the sample count"),
                        imitation = in.u64("the warm-start count");
    const double average = in.f64("the baseline");
    const bool average_set = in.u64("whether the baseline is set") != 0;
    if (!std::isfinite(average)) throw error(where, concat("a baseline of ", average), "a finite number");
    const std::string rng_state = in.bytes("the generator state");
    const std::uint64_t steps = in.u64("the optimizer step count");
    if (const std::string name = in.bytes("the optimizer's name"); name != Opt::name)
        throw error(where, concat("the state of optimizer '", name, "'"),
                    concat("'", Opt::name, "', this trainer's optimizer"));
    if (const auto slots = in.u64("the optimizer's state slots"); slots != Opt::state_slots)
        throw error(where, concat(slots, " state matrices per parameter"),
                    concat(Opt::state_slots, ", as optimizer '", Opt::name, "' keeps"));
    if (const auto count = in.u64("the parameter count"); count != ps_.size())
        throw error(where, concat(count, " parameters (another network shape)"),
                    concat(ps_.size(), ", as this network has"));
    // per parameter: its values, then each of the optimizer's state slots
    std::vector<std::vector<nn::matrix<scalar>>> parts(1 + Opt::state_slots);
    for (const auto* p : ps_) {
        const std::string name = in.bytes("a parameter name");
        if (name != p->name)
            throw error(where, concat("parameter '", name, "' found (another network shape)"),
                        concat("'", p->name, "'"));
        for (std::size_t k = 0; k < parts.size(); ++k) {
            const std::string what = k == 0 ? std::string("values") : std::string(Opt::state_name(k - 1));
            auto v = in.matrix<nn::matrix<scalar>>(concat("the ", what, " of '", name, "'"));
            if (v.rows() != p->value.rows() || v.cols() != p->value.cols())
                throw error(where,
                            concat("parameter '", name, "' is ", v.rows(), "x", v.cols(), " (another network shape)"),
                            concat(p->value.rows(), "x", p->value.cols(), ", as this network's is"));
            // a crafted or mis-signed file: NaN weights would decide silently wrong, a negative
            // second moment would make Adam's step NaN
            const bool nonnegative = k > 0 && Opt::nonnegative_state(k - 1);
            if (!v.allFinite() || (nonnegative && (v.array() < 0).any()))
                throw error(where,
                            concat("the ", what, " of parameter '", name, "' hold a non-finite",
                                   nonnegative ? " or negative" : "", " number"),
                            nonnegative ? "finite numbers >= 0" : "finite numbers");
            parts[k].push_back(std::move(v));
        }
    }
    std::string extra = in.bytes("the caller's state");
    in.finish();
    Rng restored = rng;
    std::istringstream rs(rng_state);
    rs >> restored;
    if (!rs) throw error(where, "the generator state does not parse");
    // everything checked: commit
    for (std::size_t i = 0; i < ps_.size(); ++i) {
        ps_[i]->value = std::move(parts[0][i]);
        ps_[i]->zero_grad();
        for (std::size_t k = 0; k < Opt::state_slots; ++k) opt_.state(k)[i] = std::move(parts[k + 1][i]);
    }
    opt_.set_steps(steps);
    guard_.reset();
    rng = restored;
    updates_ = updates;
    samples_ = samples;
    imitation_done_ = imitation;
    average_ = average;
    average_set_ = average_set;
    return extra;
}

}  // namespace goopt::rl
