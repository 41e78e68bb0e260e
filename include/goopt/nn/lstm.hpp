#pragma once
/// @file
/// @brief Long short-term memory layer (Hochreiter & Schmidhuber, 1997; the forget-gate form of
/// Gers et al., 2000), run one step at a time so that a decoder can feed back what it sampled.

#include <goopt/error.hpp>
#include <goopt/nn/types.hpp>

#include <random>
#include <string>
#include <vector>

namespace goopt::nn {

/// @brief An LSTM over a batch of sequences (one row per sequence), from a zero state.
///
/// Gates [i f g o] = [x_t, h_{t-1}] W + b with W of shape ((in + hidden) x 4 hidden);
/// c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g), h_t = sigmoid(o) tanh(c_t). The forget gate's bias
/// starts at 1 (Jozefowicz et al., ICML'15) so that early gradients reach far back. start() begins a
/// sequence; step() advances it and keeps what backward() needs, so a sampler that chooses step t's
/// input from step t-1's output trains on the same pass it sampled with.
/// @tparam S float or double.
template <std::floating_point S> class lstm {
public:
    using scalar = S;
    lstm() = default;
    template <std::uniform_random_bit_generator Rng>
    lstm(std::size_t in, std::size_t hidden, Rng& rng, const std::string& name = "lstm")
        : w_(make_parameter<S>(name + ".w", in + hidden, 4 * hidden, rng)),
          b_(make_parameter<S>(name + ".b", 1, 4 * hidden, rng, true)),
          in_(in),
          h_(hidden) {
        b_.value.block(0, static_cast<Eigen::Index>(hidden), 1, static_cast<Eigen::Index>(hidden)).setOnes();
    }

    /// Begins `batch` sequences from h = c = 0, forgetting the previous ones.
    void start(std::size_t batch) {
        batch_ = static_cast<Eigen::Index>(batch);
        z_.clear();
        gates_.clear();
        c_.clear();
        tc_.clear();
        hs_.clear();
    }
    /// One step: x is batch x in; returns h_t (batch x hidden), valid until the next start().
    const matrix<S>& step(const matrix<S>& x) {
        const auto H = static_cast<Eigen::Index>(h_), I = static_cast<Eigen::Index>(in_);
        if (x.rows() != batch_ || x.cols() != I)
            throw error("nn::lstm::step", concat("an input of ", x.rows(), " x ", x.cols()),
                        concat(batch_, " x ", in_, " (start(batch) first)"));
        matrix<S> z(batch_, I + H);
        z.leftCols(I) = x;
        if (hs_.empty()) z.rightCols(H).setZero();
        else z.rightCols(H) = hs_.back();
        matrix<S> a = z * w_.value;
        a.rowwise() += b_.value.row(0);
        // i, f, o through the logistic function; g through tanh
        auto sig = [](auto&& m) { return (S(1) / (S(1) + (-m.array()).exp())).matrix(); };
        a.leftCols(2 * H) = sig(a.leftCols(2 * H));
        a.middleCols(2 * H, H) = a.middleCols(2 * H, H).array().tanh().matrix();
        a.rightCols(H) = sig(a.rightCols(H));
        matrix<S> c = a.leftCols(H).cwiseProduct(a.middleCols(2 * H, H));
        if (!c_.empty()) c += a.middleCols(H, H).cwiseProduct(c_.back());
        matrix<S> tc = c.array().tanh().matrix();
        hs_.push_back(a.rightCols(H).cwiseProduct(tc));
        z_.push_back(std::move(z));
        gates_.push_back(std::move(a));
        c_.push_back(std::move(c));
        tc_.push_back(std::move(tc));
        return hs_.back();
    }
    /// Every step's h so far, in order.
    const std::vector<matrix<S>>& outputs() const { return hs_; }

    /// Back-propagation through time: dh[t] is the gradient of the loss with respect to step t's h
    /// (batch x hidden, one per step taken since start()). Adds the parameter gradients; returns
    /// the gradient with respect to every step's input.
    std::vector<matrix<S>> backward(const std::vector<matrix<S>>& dh) {
        if (dh.size() != hs_.size())
            throw error("nn::lstm::backward", concat(dh.size(), " output gradients"),
                        concat(hs_.size(), ", one per step taken"));
        const auto H = static_cast<Eigen::Index>(h_), I = static_cast<Eigen::Index>(in_);
        std::vector<matrix<S>> dx(dh.size());
        matrix<S> dh_next = matrix<S>::Zero(batch_, H), dc_next = matrix<S>::Zero(batch_, H);
        matrix<S> da(batch_, 4 * H);
        for (std::size_t t = dh.size(); t-- > 0;) {
            const matrix<S>& a = gates_[t];
            const auto i = a.leftCols(H).array(), f = a.middleCols(H, H).array(), g = a.middleCols(2 * H, H).array(),
                       o = a.rightCols(H).array();
            const matrix<S> dht = dh[t] + dh_next;
            const auto tc = tc_[t].array();
            const matrix<S> dc = (dc_next.array() + dht.array() * o * (S(1) - tc.square())).matrix();
            da.leftCols(H) = (dc.array() * g * i * (S(1) - i)).matrix();
            if (t > 0) da.middleCols(H, H) = (dc.array() * c_[t - 1].array() * f * (S(1) - f)).matrix();
            else da.middleCols(H, H).setZero();
            da.middleCols(2 * H, H) = (dc.array() * i * (S(1) - g.square())).matrix();
            da.rightCols(H) = (dht.array() * tc * o * (S(1) - o)).matrix();
            dc_next = (dc.array() * f).matrix();
            w_.grad.noalias() += z_[t].transpose() * da;
            b_.grad.row(0) += da.colwise().sum();
            const matrix<S> dz = da * w_.value.transpose();
            dx[t] = dz.leftCols(I);
            dh_next = dz.rightCols(H);
        }
        return dx;
    }

    void collect(parameter_list<S>& ps) {
        ps.push_back(&w_);
        ps.push_back(&b_);
    }
    std::size_t in_features() const { return in_; }
    std::size_t hidden() const { return h_; }

private:
    parameter<S> w_, b_;
    std::size_t in_ = 0, h_ = 0;
    Eigen::Index batch_ = 0;
    // per step: [x, h_prev], gate activations, cell, tanh(cell), output
    std::vector<matrix<S>> z_, gates_, c_, tc_, hs_;
};

}  // namespace goopt::nn
