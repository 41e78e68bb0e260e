#pragma once
/// @file
/// @brief One fuzz input for a trainer's checkpoint, read back as a resumed training
/// (tasks::train_config::resume) and a pre-trained policy are: rl::ppo::load_checkpoint (the network, Adam's moments,
/// the counters, the generator) and tasks::train's own record in the checkpoint's extra bytes (the best decision so
/// far), then training on to the configured updates.
///
/// Both records end in a checksum, which would stop a fuzzer at the first changed byte; so an input
/// holds record bodies and the harness signs them (io::record_writer's layout). The input is the
/// PPO record's body, or the fields of its body before the trainer's record, then `train_marker`,
/// then the trainer's record's body: the harness closes that record and appends it to the PPO body as
/// its last field (the caller's bytes), as tasks::train writes it.
///
/// The network is the per-choice head's, or the pair head's (any device count, as the shipped policy)
/// where the input's checkpoint records 0 choices per node.
///
/// A goopt::error is a clean rejection. An accepted checkpoint must train on and return a decision
/// the task accepts, with a finite step, every parameter of the network finite.

#include "fuzz_input.hpp"

#include <goopt/device/cluster_spec.hpp>
#include <goopt/error.hpp>
#include <goopt/io/atomic_write.hpp>
#include <goopt/io/binary_record.hpp>
#include <goopt/io/json_reading.hpp>
#include <goopt/nn/go_policy.hpp>
#include <goopt/rl/ppo.hpp>
#include <goopt/tasks/placement.hpp>
#include <goopt/tasks/train.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

namespace goopt::fuzz {

/// Separates the PPO record's leading fields from the trainer's record's body in an input.
inline constexpr std::string_view train_marker = "\n#goopt-train-record#\n";

/// The graph of every fuzzed checkpoint: two branches of products that meet, 8 ops, large enough that
/// a branch per device beats one device (the incumbent), so that the seeds' best decision is learned.
inline const graph::computation_graph& checkpoint_fuzz_graph() {
    static const graph::computation_graph g = [] {
        using ops::op_kind;
        graph::computation_graph h("checkpoint_fuzz");
        const auto x = h.input("x", {1024, 4096});
        const auto w = h.weight("w", {4096, 4096});
        const auto v = h.weight("v", {4096, 4096});
        const auto a = h.add1(op_kind::matmul, {x, w});
        const auto b = h.add1(op_kind::matmul, {x, v});
        const auto c = h.add1(op_kind::ewadd, {h.add1(op_kind::relu, {a}), h.add1(op_kind::tanh, {b})});
        h.mark_output(c);
        return h;
    }();
    return g;
}

/// The cluster every fuzzed checkpoint places on: two V100s.
inline const device::cluster<>& checkpoint_fuzz_cluster() {
    static const auto c = device::parse_cluster("2xV100:nvlink");
    return c;
}

/// A GO policy of the smallest useful shape for two devices; `seed` draws its fresh weights. `pair`:
/// the pair head (nn::first_head::pair, any device count, as the shipped policy has), whose
/// checkpoint records 0 choices.
inline nn::go_policy<float> checkpoint_fuzz_policy(std::uint64_t seed, bool pair = false) {
    std::mt19937_64 rng(seed);
    return nn::go_policy<float>({.hidden = 4,
                                 .sage_layers = 1,
                                 .shared_attention_layers = 1,
                                 .heads = 1,
                                 .segment = 4,
                                 .task_choices = {2},
                                 .head = pair ? nn::first_head::pair : nn::first_head::per_choice,
                                 .pair_width = 4},
                                rng);
}

/// Whether an input's checkpoint is a pair head's: its second field (the choices per node) is 0.
inline bool pair_head_input(std::string_view input) {
    return input.size() >= 18 && io::detail::load_le(input.data() + 10, 8) == 0;
}

/// The training every fuzzed checkpoint resumes: 2 updates of 2 samples, the one-device placement
/// as the incumbent (so that a record may name it).
inline tasks::train_config checkpoint_fuzz_config(const std::filesystem::path& file, std::size_t updates) {
    tasks::train_config c;
    c.ppo.updates = updates;
    c.ppo.samples_per_update = 2;
    c.ppo.threads = 1;
    c.incumbents = {sim::decision{
        .placement = sim::placement(checkpoint_fuzz_graph().num_ops(), 0), .priorities = {}, .fusion = {}}};
    c.checkpoint = file;
    return c;
}

/// A file of this process's own for the harness's checkpoint.
inline std::filesystem::path checkpoint_fuzz_file() {
    return std::filesystem::temp_directory_path() / concat("goopt_fuzz_checkpoint_", ::getpid(), ".ckpt");
}

/// The checkpoint file an input stands for (see the file comment).
inline std::string checkpoint_of(std::string_view input) {
    const auto at = input.find(train_marker);
    std::string body(input.substr(0, at));
    if (at != std::string_view::npos) {
        const std::string inner = io::record_bytes(tasks::detail::train_record_tag, tasks::detail::train_record_version,
                                                   input.substr(at + train_marker.size()));
        body.push_back(static_cast<char>(io::detail::field_type::bytes));
        io::detail::append_le(body, inner.size(), 8);
        body += inner;
    }
    return io::record_bytes(rl::checkpoint_tag, rl::checkpoint_format_version, body);
}

/// A seed input: the checkpoint of `updates` updates of the harness's training from seed `seed`, as
/// an input (split at the trainer's record, or the PPO body whole with that record signed inside),
/// of the per-choice head or the pair head.
inline std::string checkpoint_fuzz_seed(std::size_t updates, std::uint64_t seed, bool split, bool pair = false) {
    const auto file = checkpoint_fuzz_file();
    tasks::placement_task task(checkpoint_fuzz_graph(), checkpoint_fuzz_cluster());
    auto net = checkpoint_fuzz_policy(seed, pair);
    std::mt19937_64 rng(seed);
    tasks::train(task, net, checkpoint_fuzz_config(file, updates), rng);
    const std::string bytes = io::detail::read_text_file(file, "checkpoint");
    std::filesystem::remove(file);
    const std::size_t header = rl::checkpoint_tag.size() + 12;
    const std::string body = bytes.substr(header, bytes.size() - header - 8);
    if (!split) return body;
    // the last field is the trainer's record: a type byte, 8 length bytes, the record to the end
    const std::size_t at = body.rfind(tasks::detail::train_record_tag);
    if (at == std::string::npos || at < 9 || body[at - 9] != static_cast<char>(io::detail::field_type::bytes) ||
        io::detail::load_le(body.data() + at - 8, 8) != body.size() - at)
        throw finding("the trainer's record is not the last field of the seed checkpoint");
    const std::size_t inner_header = tasks::detail::train_record_tag.size() + 12;
    std::string input = body.substr(0, at - 9);  // appended piece by piece: GCC 12 warns (-Wrestrict) on a chain of +
    input += train_marker;
    input += std::string_view(body).substr(at + inner_header, body.size() - at - inner_header - 8);
    return input;
}

namespace detail {

/// Removes a file when it goes out of scope; never throws, also while another exception unwinds.
struct removed_at_exit {
    std::filesystem::path p;
    ~removed_at_exit() {
        std::error_code ignored;
        std::filesystem::remove(p, ignored);
    }
};

/// Trains on from the checkpoint in `file` as tasks::train resumes (the harness's task, network and
/// configuration); what train throws propagates.
inline tasks::train_result resume_file(const std::filesystem::path& file, bool pair) {
    tasks::placement_task task(checkpoint_fuzz_graph(), checkpoint_fuzz_cluster());
    auto net = checkpoint_fuzz_policy(1, pair);
    auto config = checkpoint_fuzz_config(file, 2);
    config.resume = true;
    std::mt19937_64 rng(1);
    auto r = tasks::train(task, net, config, rng);
    for (const auto* prm : net.parameters())
        if (!prm->value.allFinite())
            throw finding(concat("parameter '", prm->name, "' is not finite after the resume"));
    return r;
}

}  // namespace detail

/// Trains on from the checkpoint `input` stands for, as tasks::train resumes; what train throws
/// propagates, and the file is removed either way.
inline tasks::train_result resume_from(std::string_view input) {
    const auto file = checkpoint_fuzz_file();
    const detail::removed_at_exit cleanup{file};
    io::atomic_write(file, checkpoint_of(input));
    return detail::resume_file(file, pair_head_input(input));
}

/// @return true when the checkpoint was accepted and training went on from it. @throws
/// fuzz::finding for a broken promise; any exception other than goopt::error escapes (a finding too).
inline bool checkpoint_input(std::string_view input) {
    const auto file = checkpoint_fuzz_file();
    const detail::removed_at_exit cleanup{file};
    const auto& g = checkpoint_fuzz_graph();
    const auto& cluster = checkpoint_fuzz_cluster();
    const bool pair = pair_head_input(input);
    io::atomic_write(file, checkpoint_of(input));
    // as a pre-trained policy is loaded (the weights alone, nothing trained after them)
    tasks::placement_task task(g, cluster);
    auto loaded = checkpoint_fuzz_policy(1, pair);
    try {
        std::mt19937_64 rng(1);
        rl::ppo<tasks::placement_task<device::device_spec>, nn::go_policy<float>> trainer(
            task, loaded, checkpoint_fuzz_config(file, 2).ppo);
        (void)trainer.load_checkpoint(file, rng);
    } catch (const error&) {
        return false;
    }
    for (const auto* prm : loaded.parameters())
        if (!prm->value.allFinite()) throw finding(concat("parameter '", prm->name, "' is not finite as loaded"));
    // as a training resumes, from the same file
    tasks::train_result r;
    try {
        r = detail::resume_file(file, pair);
    } catch (const error&) {
        return false;
    }
    if (r.best_from == tasks::best_source::none) throw finding("an accepted checkpoint returned no decision");
    const auto& p = r.best.decision.placement;
    if (p.size() != g.num_ops()) throw finding(concat("a placement of ", p.size(), " ops returned"));
    for (auto d : p)
        if (d >= cluster.num_devices()) throw finding(concat("device ", d, " returned on a cluster of 2"));
    if (!std::isfinite(r.best.result.step_time) || !(r.best.result.step_time > 0))
        throw finding(concat("the returned decision's step is ", r.best.result.step_time));
    return true;
}

}  // namespace goopt::fuzz
