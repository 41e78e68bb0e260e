#pragma once
/// @file
/// @brief A typed front end to computation_graph::add for writing models by hand: one method per op
/// with designated-initializer options, and a current layer stamped on every op it adds.

#include <goopt/graph/computation_graph.hpp>

#include <array>
#include <span>
#include <string>
#include <vector>

namespace goopt::graph {

/// Options of conv2d, e.g. `{.stride = {2, 2}, .activation = ops::activation::relu}`.
struct conv2d_options {
    std::array<std::int64_t, 2> stride{1, 1};
    ops::padding_mode padding = ops::padding_mode::same;
    ops::activation activation = ops::activation::none;
    std::array<std::int64_t, 2> dilation{1, 1};
    std::string name = {};
};

/// Options of avgpool2d and maxpool2d.
struct pool2d_options {
    std::array<std::int64_t, 2> kernel{2, 2};
    std::array<std::int64_t, 2> stride{1, 1};
    ops::padding_mode padding = ops::padding_mode::same;
    ops::activation activation = ops::activation::none;
    std::string name = {};
};

/// Adds ops to a graph it does not own. Every op gets the builder's current layer, so that model
/// code says `b.set_layer(i)` once per layer and expert placements can later say "layer i on device
/// i mod n". Errors are those of computation_graph::add.
class builder {
public:
    explicit builder(computation_graph& g) : g_(&g) {}

    computation_graph& graph() noexcept { return *g_; }
    void set_layer(std::int32_t layer) noexcept { layer_ = layer; }
    std::int32_t layer() const noexcept { return layer_; }

    tensor_id input(std::string name, const ops::shape& s, ops::dtype t = ops::dtype::f32) {
        return stamp(g_->input(std::move(name), s, t));
    }
    tensor_id weight(std::string name, const ops::shape& s, ops::dtype t = ops::dtype::f32) {
        return stamp(g_->weight(std::move(name), s, t));
    }
    /// A constant of TASO's set (const_pool, const_iconv, const_imm, const_one) of the given shape.
    tensor_id constant(ops::op_kind k, const ops::shape& s, std::string name = {}) {
        return add1(k, {}, {{ops::attr_id::shape, ints(s)}}, std::move(name));
    }

    tensor_id conv2d(tensor_id x, tensor_id w, conv2d_options o = {}) {
        return add1(ops::op_kind::conv2d, {x, w},
                    {{ops::attr_id::stride, ints(o.stride)},
                     {ops::attr_id::padding, static_cast<std::int64_t>(o.padding)},
                     {ops::attr_id::activation, static_cast<std::int64_t>(o.activation)},
                     {ops::attr_id::dilation, ints(o.dilation)}},
                    std::move(o.name));
    }
    tensor_id matmul(tensor_id a, tensor_id b, ops::activation act = ops::activation::none, std::string name = {}) {
        return add1(ops::op_kind::matmul, {a, b}, {{ops::attr_id::activation, static_cast<std::int64_t>(act)}},
                    std::move(name));
    }
    tensor_id avgpool2d(tensor_id x, pool2d_options o = {}) { return pool(ops::op_kind::avgpool2d, x, std::move(o)); }
    tensor_id maxpool2d(tensor_id x, pool2d_options o = {}) { return pool(ops::op_kind::maxpool2d, x, std::move(o)); }

    /// Elementwise binary ops (ewadd, ewmul, sub, div, pow) and smul.
    tensor_id binary(ops::op_kind k, tensor_id a, tensor_id b, std::string name = {}) {
        return add1(k, {a, b}, {}, std::move(name));
    }
    tensor_id ewadd(tensor_id a, tensor_id b, std::string name = {}) {
        return binary(ops::op_kind::ewadd, a, b, std::move(name));
    }
    tensor_id ewmul(tensor_id a, tensor_id b, std::string name = {}) {
        return binary(ops::op_kind::ewmul, a, b, std::move(name));
    }

    /// Unary ops without attributes (relu, sigmoid, tanh, gelu, erf, sqrt, identity, global_avgpool).
    tensor_id unary(ops::op_kind k, tensor_id x, std::string name = {}) { return add1(k, {x}, {}, std::move(name)); }
    tensor_id relu(tensor_id x, std::string name = {}) { return unary(ops::op_kind::relu, x, std::move(name)); }

    tensor_id concat(std::span<const tensor_id> xs, std::int64_t axis, std::string name = {}) {
        return add(ops::op_kind::concat, xs, {{ops::attr_id::axis, axis}}, std::move(name))[0];
    }
    std::vector<tensor_id> split(tensor_id x, std::int64_t axis, std::vector<std::int64_t> sizes,
                                 std::string name = {}) {
        const tensor_id in[] = {x};
        auto out = add(ops::op_kind::split, in, {{ops::attr_id::axis, axis}, {ops::attr_id::sizes, std::move(sizes)}},
                       std::move(name));
        return {out.begin(), out.end()};
    }
    tensor_id transpose(tensor_id x, std::vector<std::int64_t> perm = {}, std::string name = {}) {
        return add1(ops::op_kind::transpose, {x}, {{ops::attr_id::perm, std::move(perm)}}, std::move(name));
    }
    tensor_id reshape(tensor_id x, std::vector<std::int64_t> shape, std::string name = {}) {
        return add1(ops::op_kind::reshape, {x}, {{ops::attr_id::shape, std::move(shape)}}, std::move(name));
    }
    tensor_id batchnorm(tensor_id x, tensor_id scale, tensor_id bias, tensor_id mean, tensor_id var,
                        double epsilon = 1e-5, std::string name = {}) {
        return add1(ops::op_kind::batchnorm, {x, scale, bias, mean, var}, {{ops::attr_id::epsilon, epsilon}},
                    std::move(name));
    }
    tensor_id softmax(tensor_id x, std::int64_t axis = -1, std::string name = {}) {
        return add1(ops::op_kind::softmax, {x}, {{ops::attr_id::axis, axis}}, std::move(name));
    }
    tensor_id layernorm(tensor_id x, tensor_id gamma, tensor_id beta, std::int64_t axis = -1, std::string name = {}) {
        return add1(ops::op_kind::layernorm, {x, gamma, beta}, {{ops::attr_id::axis, axis}}, std::move(name));
    }

    /// Any op, for kinds without a method: computation_graph::add with the current layer.
    output_ids add(ops::op_kind k, std::span<const tensor_id> inputs, ops::attribute_map attrs = {},
                   std::string name = {}) {
        auto out = g_->add(k, inputs, std::move(attrs), std::move(name));
        g_->set_layer(g_->producer(out[0]), layer_);  // every op has at least one output
        return out;
    }
    tensor_id add1(ops::op_kind k, std::initializer_list<tensor_id> inputs, ops::attribute_map attrs = {},
                   std::string name = {}) {
        return stamp(g_->add1(k, inputs, std::move(attrs), std::move(name)));
    }

private:
    template <class C> static std::vector<std::int64_t> ints(const C& c) { return {c.begin(), c.end()}; }
    tensor_id pool(ops::op_kind k, tensor_id x, pool2d_options o) {
        return add1(k, {x},
                    {{ops::attr_id::kernel, ints(o.kernel)},
                     {ops::attr_id::stride, ints(o.stride)},
                     {ops::attr_id::padding, static_cast<std::int64_t>(o.padding)},
                     {ops::attr_id::activation, static_cast<std::int64_t>(o.activation)}},
                    std::move(o.name));
    }
    tensor_id stamp(tensor_id t) {
        g_->set_layer(g_->producer(t), layer_);
        return t;
    }

    computation_graph* g_;
    std::int32_t layer_ = -1;
};

}  // namespace goopt::graph
