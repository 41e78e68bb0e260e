#pragma once
/// @file
/// @brief A placement head that scores every (op, device) pair from the op's embedding, the
/// device's features and the pair's features, so that one network serves any number of devices
/// (WeCAN, 2025: task x device scores in one pass; GiPH, MLSys'23: device features instead of one
/// output per device). GO's categorical_head has one output column per device instead, which ties
/// a checkpoint to the device count.

#include <goopt/error.hpp>
#include <goopt/nn/node_features.hpp>
#include <goopt/nn/tall_products.hpp>
#include <goopt/nn/types.hpp>

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace goopt::nn {

/// Columns of placement_features::devices (see tasks/placement_features.hpp for their definition).
inline constexpr std::size_t num_device_features = 7;
/// Columns of placement_features::pairs (see tasks/placement_features.hpp).
inline constexpr std::size_t num_pair_features = 7;

/// @brief A graph's features (graph_features) plus those of the devices it is placed on and of
/// every (op, device) pair: what a pair_head needs. A network that reads only graph_features reads
/// these too (the derived part is ignored).
template <std::floating_point S> struct placement_features : graph_features<S> {
    matrix<S> devices;  ///< one row per device, num_device_features columns
    matrix<S> pairs;    ///< row o * devices + q: op o on device q, num_pair_features columns
};

/// @brief logit(i, q) = v . relu(h_i W_h + d_q W_d + p_iq W_p + b) + (h_i W_u) . p_iq: a
/// one-hidden-layer MLP over [op embedding, device features, pair features], computed as three
/// GEMMs and a broadcast sum (the first layer of an MLP over a concatenation is the sum of per-part
/// products), so the cost is n x devices x width, not a GEMM per pair, plus a bilinear term.
/// Why the bilinear term: a per-device head's logit is linear in the op's embedding, one weight
/// vector per device; here h_i W_u gives each op its own weight per pair feature, so the same
/// linear control exists per pair column (with a reference placement's "o is on q" column: stay or
/// leave, op by op), where the MLP alone reaches it only through units that relu may gate off.
/// Parameters: `<name>.op`, `.device`, `.pair`, `.b` (the hidden layer), and the output's,
/// `<out_name>` (v) and `<out_name>.bilinear` (W_u, zero at first): zeroing the output's gives zero
/// logits that still learn (the hidden layer keeps its gradient through v's, W_u through the pair
/// features).
template <std::floating_point S> class pair_head {
public:
    using scalar = S;
    pair_head() = default;
    template <std::uniform_random_bit_generator Rng>
    pair_head(std::size_t dim, std::size_t width, Rng& rng, const std::string& name, const std::string& out_name)
        : wh_(make_parameter<S>(name + ".op", dim, width, rng)),
          wd_(make_parameter<S>(name + ".device", num_device_features, width, rng)),
          wp_(make_parameter<S>(name + ".pair", num_pair_features, width, rng)),
          b_(make_parameter<S>(name + ".b", 1, width, rng, true)),
          wu_(make_parameter<S>(out_name + ".bilinear", dim, num_pair_features, rng, true)),
          v_(make_parameter<S>(out_name, width, 1, rng)) {
        if (width == 0) throw error(concat("nn::pair_head '", name, "'"), "width 0", "at least 1");
    }

    /// @brief Logits, one row per row of `h` and one column per device. Row i of `h` is op
    /// `rows[i]`, whose pair features are `pairs` rows rows[i] * devices + q. The result lives in
    /// the layer until its next forward pass; backward() needs h, devices and pairs alive.
    const matrix<S>& forward(const matrix<S>& h, const matrix<S>& devices, const matrix<S>& pairs,
                             std::span<const std::uint32_t> rows) {
        const auto n = h.rows(), k = devices.rows(), m = v_.value.rows();
        if (devices.cols() != static_cast<Eigen::Index>(num_device_features) ||
            pairs.cols() != static_cast<Eigen::Index>(num_pair_features) || pairs.rows() != n * k ||
            rows.size() != static_cast<std::size_t>(n) || k == 0)
            throw error(
                "nn::pair_head",
                concat(n, " ops, ", devices.rows(), " x ", devices.cols(), " device features, ", pairs.rows(), " x ",
                       pairs.cols(), " pair features, ", rows.size(), " row ids"),
                concat("at least one device with ", num_device_features, " features and one row per (op, device) with ",
                       num_pair_features, " features, one row id per op"));
        h_ = &h;
        devices_ = &devices;
        pairs_ = &pairs;
        rows_ = rows;
        multiply_rows(a_, h, wh_.value);
        const matrix<S> bq = (devices * wd_.value).rowwise() + b_.value.row(0);
        multiply_rows(c_, pairs, wp_.value);
        multiply_rows(u_, h, wu_.value);
        z_.resize(n * k, m);
        logits_.resize(n, k);
        for (Eigen::Index i = 0; i < n; ++i) {
            const Eigen::Index base = static_cast<Eigen::Index>(rows[static_cast<std::size_t>(i)]) * k;
            if (base + k > pairs.rows())
                throw error("nn::pair_head", concat("row id ", rows[static_cast<std::size_t>(i)]),
                            concat("below ", n, " (one per op)"));
            for (Eigen::Index q = 0; q < k; ++q) {
                auto z = z_.row(i * k + q);
                z = (a_.row(i) + bq.row(q) + c_.row(base + q)).cwiseMax(S(0));
                logits_(i, q) = z.dot(v_.value.col(0)) + u_.row(i).dot(pairs.row(base + q));
            }
        }
        return logits_;
    }

    /// dL/dh for dL/dlogits; adds into every parameter's grad. A buffer valid until the next backward.
    const matrix<S>& backward(const matrix<S>& dlogits) {
        const auto n = a_.rows(), k = devices_->rows(), m = v_.value.rows();
        matrix<S> dpre(n * k, m), dpair = matrix<S>::Zero(pairs_->rows(), m);
        matrix<S> da = matrix<S>::Zero(n, m), dd = matrix<S>::Zero(k, m);
        matrix<S> du = matrix<S>::Zero(n, static_cast<Eigen::Index>(num_pair_features));
        for (Eigen::Index i = 0; i < n; ++i) {
            const Eigen::Index base = static_cast<Eigen::Index>(rows_[static_cast<std::size_t>(i)]) * k;
            for (Eigen::Index q = 0; q < k; ++q) {
                const Eigen::Index r = i * k + q;
                const S g = dlogits(i, q);
                v_.grad.col(0) += g * z_.row(r).transpose();
                dpre.row(r) = (z_.row(r).array() > S(0)).select(g * v_.value.col(0).transpose().array(), S(0));
                da.row(i) += dpre.row(r);
                dd.row(q) += dpre.row(r);
                dpair.row(base + q) = dpre.row(r);
                du.row(i) += g * pairs_->row(base + q);
            }
        }
        b_.grad.row(0) += dd.colwise().sum();
        wd_.grad += devices_->transpose() * dd;
        add_transposed_product(wp_.grad, *pairs_, dpair);
        add_transposed_product(wh_.grad, *h_, da);
        add_transposed_product(wu_.grad, *h_, du);
        multiply_rows(dh_, da, wh_.value.transpose());
        dh_.noalias() += du * wu_.value.transpose();
        return dh_;
    }

    void collect(parameter_list<S>& ps) {
        for (auto* p : {&wh_, &wd_, &wp_, &b_, &wu_, &v_}) ps.push_back(p);
    }
    std::size_t width() const { return static_cast<std::size_t>(v_.value.rows()); }

private:
    parameter<S> wh_, wd_, wp_, b_, wu_, v_;
    const matrix<S>* h_ = nullptr;
    const matrix<S>* devices_ = nullptr;
    const matrix<S>* pairs_ = nullptr;
    std::span<const std::uint32_t> rows_;
    matrix<S> a_, c_, u_, z_, logits_, dh_;  // kept between calls (see linear::run)
};

}  // namespace goopt::nn
