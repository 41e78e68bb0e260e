#pragma once
// What the gradient tests of the training transform share (tests/models/, tests/onnx/): the loss
// models::make_training_graph appends, and its central differences on the interpreter.
#include <goopt/graph/computation_graph.hpp>
#include <goopt/interp/interpreter.hpp>

#include <cstddef>
#include <string>

namespace goopt::testing {

/// The loss the transform appends: sum over the forward graph's outputs of the mean of all elements.
inline double training_loss(const graph::computation_graph& fwd, const interp::feed_map<double>& f) {
    double loss = 0;
    for (const auto& v : interp::run<double>(fwd, f)) {
        double sum = 0;
        for (double e : v.storage()) sum += e;
        loss += sum / static_cast<double>(v.size());
    }
    return loss;
}

/// (loss(x_i + eps) - loss(x_i - eps)) / 2 eps for element i of the feed `name`, left as it was.
inline double central_difference(const graph::computation_graph& fwd, interp::feed_map<double>& f,
                                 const std::string& name, std::size_t i, double eps = 1e-6) {
    auto& x = f.at(name);
    const double keep = x.data()[i];
    x.data()[i] = keep + eps;
    const double up = training_loss(fwd, f);
    x.data()[i] = keep - eps;
    const double down = training_loss(fwd, f);
    x.data()[i] = keep;
    return (up - down) / (2 * eps);
}

}  // namespace goopt::testing
