#pragma once
/// @file
/// @brief The image classifiers' common head: global average pool, flatten, fully connected layer.

#include <goopt/graph/builder.hpp>

#include <cstdint>

namespace goopt::models {

/// @brief global_avgpool -> flatten -> x W + b with W [features, classes] (torchvision's `avgpool`,
/// `fc` names), in the builder's current layer.
/// @return the logits [N, classes].
inline graph::tensor_id classifier_head(graph::builder& b, graph::tensor_id x, std::int64_t classes) {
    x = b.unary(ops::op_kind::global_avgpool, x, "avgpool");
    x = b.add1(ops::op_kind::flatten, {x}, {{ops::attr_id::axis, std::int64_t{1}}}, "flatten");
    const std::int64_t features = b.graph().type_of(x).dims[1];
    x = b.matmul(x, b.weight("fc.weight", {features, classes}), ops::activation::none, "fc");
    return b.ewadd(x, b.weight("fc.bias", {classes}), "fc.add");
}

}  // namespace goopt::models
