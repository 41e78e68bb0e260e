// Shape inference, cost formulas and facts of every entry of ops::op_table.
#include <goopt/graph/computation_graph.hpp>
#include <goopt/ops.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

using namespace goopt;
using ops::attr_id;
using ops::op_kind;
using ops::shape;
using ops::tensor_type;
using ints = std::vector<std::int64_t>;

namespace {

ops::tensor_type f32(shape s) { return {s, ops::dtype::f32}; }

/// One shape-inference example: inputs and attributes of an op and the outputs it must infer.
struct example {
    op_kind kind;
    std::vector<tensor_type> inputs;
    ops::attribute_map attrs;
    std::vector<tensor_type> outputs;
};

/// Adds the op through computation_graph::add (which fills default attributes) and returns the
/// output types it inferred.
std::vector<tensor_type> infer(const example& e) {
    graph::computation_graph g;
    std::vector<graph::tensor_id> in;
    for (std::size_t i = 0; i < e.inputs.size(); ++i)
        in.push_back(g.input("in" + std::to_string(i), e.inputs[i].dims, e.inputs[i].type));
    auto out = g.add(e.kind, in, e.attrs, "op");
    std::vector<tensor_type> types;
    for (auto t : out) types.push_back(g.type_of(t));
    return types;
}

const std::vector<example>& examples() {
    using A = attr_id;
    static const std::vector<example> list = {
        {op_kind::input, {}, {{A::shape, ints{2, 3}}}, {f32({2, 3})}},
        {op_kind::weight,
         {},
         {{A::shape, ints{4}}, {A::dtype, std::int64_t(ops::dtype::f16)}},
         {{{4}, ops::dtype::f16}}},
        {op_kind::const_pool, {}, {{A::shape, ints{8, 1, 3, 3}}}, {f32({8, 1, 3, 3})}},
        {op_kind::const_iconv, {}, {{A::shape, ints{8, 8, 3, 3}}}, {f32({8, 8, 3, 3})}},
        {op_kind::const_imm, {}, {{A::shape, ints{5, 5}}}, {f32({5, 5})}},
        {op_kind::const_one, {}, {{A::shape, ints{2, 2, 2}}}, {f32({2, 2, 2})}},
        // SAME keeps ceil(56 / 1); the 3x3 kernel on 64 channels
        {op_kind::conv2d, {f32({1, 64, 56, 56}), f32({128, 64, 3, 3})}, {}, {f32({1, 128, 56, 56})}},
        // VALID stride 2: (224 - 7) / 2 + 1 = 109
        {op_kind::conv2d,
         {f32({2, 3, 224, 224}), f32({64, 3, 7, 7})},
         {{A::stride, ints{2, 2}}, {A::padding, std::int64_t(1)}},
         {f32({2, 64, 109, 109})}},
        // grouped: 32 groups of 4 input channels (ResNeXt)
        {op_kind::conv2d,
         {f32({1, 128, 28, 28}), f32({128, 4, 3, 3})},
         {{A::stride, ints{2, 2}}},
         {f32({1, 128, 14, 14})}},
        // dilation 4 on a 2-tap kernel covers 5 cells: VALID leaves 32 - 4 = 28
        {op_kind::conv2d,
         {f32({1, 16, 1, 32}), f32({16, 16, 1, 2})},
         {{A::dilation, ints{1, 4}}, {A::padding, std::int64_t(1)}},
         {f32({1, 16, 1, 28})}},
        {op_kind::matmul, {f32({8, 64}), f32({64, 32})}, {}, {f32({8, 32})}},
        {op_kind::matmul, {f32({4, 12, 128, 64}), f32({4, 12, 64, 128})}, {}, {f32({4, 12, 128, 128})}},
        {op_kind::matmul, {f32({4, 128, 768}), f32({768, 3072})}, {}, {f32({4, 128, 3072})}},
        {op_kind::ewadd, {f32({2, 3}), f32({2, 3})}, {}, {f32({2, 3})}},
        {op_kind::ewadd, {f32({4, 128, 768}), f32({768})}, {}, {f32({4, 128, 768})}},
        {op_kind::ewmul, {f32({2, 1, 5}), f32({3, 1})}, {}, {f32({2, 3, 5})}},
        {op_kind::smul, {f32({2, 3}), f32({})}, {}, {f32({2, 3})}},
        {op_kind::relu, {f32({7})}, {}, {f32({7})}},
        {op_kind::transpose, {f32({2, 3, 4})}, {}, {f32({4, 3, 2})}},
        {op_kind::transpose, {f32({2, 3, 4})}, {{A::perm, ints{0, 2, 1}}}, {f32({2, 4, 3})}},
        {op_kind::enlarge, {f32({16, 8, 1, 1})}, {{A::kernel, ints{3, 3}}}, {f32({16, 8, 3, 3})}},
        {op_kind::avgpool2d,
         {f32({1, 8, 7, 7})},
         {{A::kernel, ints{3, 3}}, {A::stride, ints{2, 2}}},
         {f32({1, 8, 4, 4})}},
        {op_kind::maxpool2d,
         {f32({1, 8, 7, 7})},
         {{A::kernel, ints{3, 3}}, {A::stride, ints{2, 2}}, {A::padding, std::int64_t(1)}},
         {f32({1, 8, 3, 3})}},
        {op_kind::concat,
         {f32({1, 3, 4}), f32({1, 5, 4}), f32({1, 1, 4})},
         {{A::axis, std::int64_t(1)}},
         {f32({1, 9, 4})}},
        {op_kind::split,
         {f32({1, 9, 4})},
         {{A::axis, std::int64_t(-2)}, {A::sizes, ints{3, 6}}},
         {f32({1, 3, 4}), f32({1, 6, 4})}},
        {op_kind::sub, {f32({3}), f32({2, 3})}, {}, {f32({2, 3})}},
        {op_kind::div, {f32({2, 3}), f32({1})}, {}, {f32({2, 3})}},
        {op_kind::pow, {f32({2, 3}), f32({})}, {}, {f32({2, 3})}},
        {op_kind::sqrt, {f32({3})}, {}, {f32({3})}},
        {op_kind::sigmoid, {f32({3})}, {}, {f32({3})}},
        {op_kind::tanh, {f32({3})}, {}, {f32({3})}},
        {op_kind::gelu, {f32({3})}, {}, {f32({3})}},
        {op_kind::erf, {f32({3})}, {}, {f32({3})}},
        {op_kind::log, {f32({3})}, {}, {f32({3})}},
        {op_kind::clip, {f32({3})}, {{A::min, 0.0}, {A::max, 6.0}}, {f32({3})}},
        {op_kind::leaky_relu, {f32({3})}, {{A::alpha, 0.1}}, {f32({3})}},
        {op_kind::hard_sigmoid, {f32({2, 3})}, {}, {f32({2, 3})}},
        {op_kind::hard_swish, {f32({3})}, {}, {f32({3})}},
        {op_kind::exp, {f32({3})}, {}, {f32({3})}},
        {op_kind::prelu, {f32({1, 3, 4, 4}), f32({3, 1, 1})}, {}, {f32({1, 3, 4, 4})}},
        {op_kind::softplus, {f32({3})}, {}, {f32({3})}},
        {op_kind::elu, {f32({3})}, {{A::alpha, 0.5}}, {f32({3})}},
        {op_kind::abs, {f32({2, 3})}, {}, {f32({2, 3})}},
        {op_kind::lrn, {f32({1, 6, 4, 4})}, {{A::size, std::int64_t{5}}}, {f32({1, 6, 4, 4})}},
        {op_kind::lrn_grad, {f32({1, 6, 4, 4}), f32({1, 6, 4, 4})}, {{A::size, std::int64_t{3}}}, {f32({1, 6, 4, 4})}},
        {op_kind::instance_norm, {f32({2, 3, 4, 4}), f32({3}), f32({3})}, {}, {f32({2, 3, 4, 4})}},
        {op_kind::softsign, {f32({3})}, {}, {f32({3})}},
        {op_kind::max, {f32({2, 3}), f32({3})}, {}, {f32({2, 3})}},
        {op_kind::min, {f32({1, 3}), f32({2, 1})}, {}, {f32({2, 3})}},
        {op_kind::identity, {f32({3, 2})}, {}, {f32({3, 2})}},
        {op_kind::reshape, {f32({2, 3, 4})}, {{A::shape, ints{6, -1}}}, {f32({6, 4})}},
        {op_kind::flatten, {f32({2, 3, 4, 5})}, {}, {f32({2, 60})}},
        {op_kind::pad, {f32({1, 3, 4, 4})}, {{A::pads, ints{0, 0, 1, 2, 0, 0, 1, 2}}}, {f32({1, 3, 6, 8})}},
        {op_kind::slice, {f32({4, 6})}, {{A::begin, ints{1, 0}}, {A::end, ints{3, 6}}}, {f32({2, 6})}},
        {op_kind::gather, {f32({1000, 64}), {{4, 16}, ops::dtype::i64}}, {}, {f32({4, 16, 64})}},
        {op_kind::global_avgpool, {f32({2, 8, 7, 7})}, {}, {f32({2, 8, 1, 1})}},
        {op_kind::batchnorm, {f32({2, 8, 7, 7}), f32({8}), f32({8}), f32({8}), f32({8})}, {}, {f32({2, 8, 7, 7})}},
        {op_kind::softmax, {f32({2, 5})}, {}, {f32({2, 5})}},
        {op_kind::layernorm, {f32({2, 16, 768}), f32({768}), f32({768})}, {}, {f32({2, 16, 768})}},
        {op_kind::reduce_sum, {f32({2, 3, 4})}, {{A::axes, ints{1}}}, {f32({2, 1, 4})}},
        {op_kind::reduce_mean, {f32({2, 3, 4})}, {{A::axes, ints{-1, 0}}, {A::keepdims, std::int64_t(0)}}, {f32({3})}},
        {op_kind::reduce_max, {f32({2, 3, 4})}, {{A::keepdims, std::int64_t(0)}}, {f32({})}},
        {op_kind::lstm_cell,
         {f32({8, 32}), f32({8, 16}), f32({8, 16}), f32({32, 64}), f32({16, 64}), f32({64})},
         {},
         {f32({8, 16}), f32({8, 16})}},
        {op_kind::gru_cell, {f32({8, 32}), f32({8, 16}), f32({32, 48}), f32({16, 48}), f32({48})}, {}, {f32({8, 16})}},
        // fused kernels: a per-channel bias, a residual of the output's shape
        {op_kind::conv2d_bias, {f32({1, 4, 8, 8}), f32({6, 4, 3, 3}), f32({6, 1, 1})}, {}, {f32({1, 6, 8, 8})}},
        {op_kind::matmul_bias,
         {f32({5, 7}), f32({7, 3}), f32({5, 3})},
         {{A::activation, std::int64_t(4)}},
         {f32({5, 3})}},
        // gradients and optimizer updates (training graphs)
        {op_kind::const_fill, {}, {{A::shape, ints{}}, {A::value, 0.5}}, {f32({})}},
        {op_kind::add_n, {f32({2, 3}), f32({2, 3}), f32({2, 3})}, {}, {f32({2, 3})}},
        // dx of a stride-2 SAME conv: 7 and 8 both give 4, so x's shape comes from the attribute
        {op_kind::conv2d_grad_input,
         {f32({1, 8, 4, 4}), f32({8, 2, 3, 3})},
         {{A::stride, ints{2, 2}}, {A::shape, ints{1, 4, 7, 7}}},
         {f32({1, 4, 7, 7})}},
        {op_kind::conv2d_grad_weight,
         {f32({1, 4, 7, 7}), f32({1, 8, 5, 5})},
         {{A::padding, std::int64_t(1)}, {A::shape, ints{8, 2, 3, 3}}},
         {f32({8, 2, 3, 3})}},
        {op_kind::relu_grad, {f32({2, 3}), f32({2, 3})}, {}, {f32({2, 3})}},
        {op_kind::sigmoid_grad, {f32({3}), f32({3})}, {}, {f32({3})}},
        {op_kind::tanh_grad, {f32({3}), f32({3})}, {}, {f32({3})}},
        {op_kind::gelu_grad, {f32({3}), f32({3})}, {}, {f32({3})}},
        {op_kind::erf_grad, {f32({3}), f32({3})}, {}, {f32({3})}},
        {op_kind::reduce_max_grad,
         {f32({2, 3, 4}), f32({2, 4})},
         {{A::axes, ints{1}}, {A::keepdims, std::int64_t(0)}},
         {f32({2, 3, 4})}},
        {op_kind::avgpool2d_grad,
         {f32({1, 8, 4, 4})},
         {{A::kernel, ints{3, 3}}, {A::stride, ints{2, 2}}, {A::shape, ints{1, 8, 7, 7}}},
         {f32({1, 8, 7, 7})}},
        {op_kind::maxpool2d_grad,
         {f32({1, 8, 7, 7}), f32({1, 8, 3, 3})},
         {{A::kernel, ints{3, 3}}, {A::stride, ints{2, 2}}, {A::padding, std::int64_t(1)}},
         {f32({1, 8, 7, 7})}},
        {op_kind::softmax_grad, {f32({2, 5}), f32({2, 5})}, {}, {f32({2, 5})}},
        {op_kind::layernorm_grad,
         {f32({2, 16, 8}), f32({8}), f32({2, 16, 8})},
         {},
         {f32({2, 16, 8}), f32({8}), f32({8})}},
        {op_kind::batchnorm_grad,
         {f32({2, 8, 7, 7}), f32({8}), f32({8}), f32({8}), f32({2, 8, 7, 7})},
         {},
         {f32({2, 8, 7, 7}), f32({8}), f32({8}), f32({8}), f32({8})}},
        {op_kind::gather_grad,
         {{{4, 16}, ops::dtype::i64}, f32({4, 16, 64})},
         {{A::shape, ints{1000, 64}}},
         {f32({1000, 64})}},
        {op_kind::lstm_cell_grad,
         {f32({8, 32}), f32({8, 16}), f32({8, 16}), f32({32, 64}), f32({16, 64}), f32({64}), f32({8, 16}),
          f32({8, 16})},
         {},
         {f32({8, 32}), f32({8, 16}), f32({8, 16}), f32({32, 64}), f32({16, 64}), f32({64})}},
        {op_kind::gru_cell_grad,
         {f32({8, 32}), f32({8, 16}), f32({32, 48}), f32({16, 48}), f32({48}), f32({8, 16})},
         {},
         {f32({8, 32}), f32({8, 16}), f32({32, 48}), f32({16, 48}), f32({48})}},
        {op_kind::sgd_update, {f32({4, 4}), f32({4, 4}), f32({})}, {}, {f32({4, 4})}},
        {op_kind::adam_update,
         {f32({4}), f32({4}), f32({4}), f32({4}), f32({}), f32({}), f32({1})},
         {},
         {f32({4}), f32({4}), f32({4})}},
        {op_kind::constant,
         {},
         {{A::shape, ints{3}}, {A::dtype, std::int64_t(ops::dtype::i64)}},
         {{{3}, ops::dtype::i64}}},
        {op_kind::opaque,
         {f32({2, 5})},
         {{A::node, std::int64_t(0)},
          {A::shapes, ints{2, 2, 5, 1, 2}},
          {A::dtypes, ints{std::int64_t(ops::dtype::f32), std::int64_t(ops::dtype::i64)}}},
         {f32({2, 5}), {{2}, ops::dtype::i64}}},
    };
    return list;
}

/// Input types and attributes each op must reject, with a fragment of the expected message.
struct bad_example {
    op_kind kind;
    std::vector<tensor_type> inputs;
    ops::attribute_map attrs;
    std::string message;
};

const std::vector<bad_example>& bad_examples() {
    using A = attr_id;
    static const std::vector<bad_example> list = {
        {op_kind::input, {}, {}, "missing required attribute 'shape'"},
        {op_kind::input, {}, {{A::shape, ints{2, 0}}}, "expected every dimension >= 1"},
        {op_kind::input, {}, {{A::shape, ints{1 << 30, 1 << 30, 1 << 30}}}, "overflows"},
        {op_kind::const_iconv, {}, {{A::shape, ints{8, 8, 2, 2}}}, "odd kh, kw"},
        {op_kind::const_imm, {}, {{A::shape, ints{2, 3}}}, "expected [n,n]"},
        {op_kind::const_pool, {}, {{A::shape, ints{8, 2, 3, 3}}}, "[C,1,kh,kw]"},
        {op_kind::conv2d, {f32({1, 6, 8, 8}), f32({4, 4, 3, 3})}, {}, "not a multiple"},
        {op_kind::conv2d, {f32({1, 6, 8, 8}), f32({4, 6, 3})}, {}, "expected rank 4"},
        {op_kind::conv2d, {f32({1, 6, 2, 2}), f32({4, 6, 3, 3})}, {{A::padding, std::int64_t(1)}}, "does not fit"},
        {op_kind::conv2d, {f32({1, 6, 8, 8}), f32({4, 6, 3, 3})}, {{A::stride, ints{1}}}, "expected 2 values"},
        {op_kind::conv2d, {f32({1, 6, 8, 8}), {{4, 6, 3, 3}, ops::dtype::f64}}, {}, "dtype f64: expected f32"},
        {op_kind::conv2d, {f32({1, 6, 8, 8}), f32({4, 6, 3, 3})}, {{A::padding, std::int64_t(7)}}, "expected same"},
        {op_kind::conv2d,
         {f32({1, 6, 8, 8}), f32({4, 6, 3, 3})},
         {{A::axis, std::int64_t(0)}},
         "unknown attribute 'axis'"},
        {op_kind::conv2d, {f32({1, 6, 8, 8})}, {}, "has 1 inputs: expected 2"},
        {op_kind::conv2d, {f32({1, 6, 8, 8}), f32({4, 6, 3, 3})}, {{A::dilation, ints{0, 1}}}, "expected values >= 1"},
        {op_kind::matmul, {f32({8, 64}), f32({32, 64})}, {}, "inner dimensions differ"},
        {op_kind::matmul, {f32({64}), f32({64, 2})}, {}, "rank >= 2"},
        {op_kind::matmul, {f32({2, 8, 64}), f32({3, 64, 2})}, {}, "do not broadcast"},
        {op_kind::ewadd, {f32({2, 3}), f32({3, 2})}, {}, "do not broadcast"},
        {op_kind::smul, {f32({2, 3}), f32({2})}, {}, "expected [] or [1]"},
        {op_kind::transpose, {f32({2, 3})}, {{A::perm, ints{0, 0}}}, "not a permutation"},
        {op_kind::enlarge, {f32({4, 4, 3, 3})}, {{A::kernel, ints{4, 4}}}, "same parity"},
        {op_kind::avgpool2d, {f32({1, 8, 7, 7})}, {}, "missing required attribute 'kernel'"},
        {op_kind::concat, {f32({1, 3, 4}), f32({1, 3, 5})}, {{A::axis, std::int64_t(1)}}, "except along axis 1"},
        {op_kind::concat, {f32({1, 3})}, {{A::axis, std::int64_t(2)}}, "out of range"},
        {op_kind::concat, {}, {{A::axis, std::int64_t(0)}}, "expected at least 1"},
        {op_kind::split,
         {f32({1, 9})},
         {{A::axis, std::int64_t(1)}, {A::sizes, ints{3, 5}}},
         "add up to 8: expected 9"},
        {op_kind::clip, {f32({3})}, {{A::min, 1.0}, {A::max, 0.0}}, "min <= max"},
        {op_kind::lrn, {f32({1, 6, 4, 4})}, {{A::size, std::int64_t(0)}}, "a window of at least 1 channel"},
        {op_kind::lrn, {f32({6, 4})}, {{A::size, std::int64_t(3)}}, "expected [N,C,D1,...]"},
        {op_kind::lrn, {f32({1, 6, 4, 4})}, {}, "missing required attribute 'size'"},
        {op_kind::instance_norm, {f32({2, 3, 4}), f32({4}), f32({3})}, {}, "expected [3] (channels)"},
        {op_kind::clip, {f32({3})}, {{A::min, ints{1}}, {A::max, 0.0}}, "expected a real"},
        {op_kind::reshape, {f32({2, 3})}, {{A::shape, ints{4, -1}}}, "cannot reshape"},
        {op_kind::reshape, {f32({2, 3})}, {{A::shape, ints{-1, -1}}}, "more than one -1"},
        {op_kind::flatten, {f32({2, 3})}, {{A::axis, std::int64_t(3)}}, "out of range"},
        // sizes that overflow int64 are bad input, never undefined behaviour or a division by zero
        {op_kind::reshape, {f32({2, 3})}, {{A::shape, ints{1ll << 32, 1ll << 32, -1}}}, "overflows 64 bits"},
        {op_kind::split,
         {f32({1, 9})},
         {{A::axis, std::int64_t(1)}, {A::sizes, ints{1ll << 62, 1ll << 62, 1}}},
         "overflows"},
        {op_kind::pad, {f32({2, 3})}, {{A::pads, ints{1ll << 62, 0, 1ll << 62, 0}}}, "overflows"},
        {op_kind::matmul, {f32({1 << 30, 1, 8, 4}), f32({1, 1 << 30, 4, 8})}, {}, "overflows 64 bits"},
        {op_kind::pad, {f32({2, 3})}, {{A::pads, ints{1, 1}}}, "expected 4 values"},
        {op_kind::slice, {f32({4, 6})}, {{A::begin, ints{3, 0}}, {A::end, ints{3, 6}}}, "is empty or outside"},
        {op_kind::gather, {f32({10, 4}), f32({3})}, {}, "expected an integer type"},
        {op_kind::batchnorm, {f32({2, 8, 7, 7}), f32({8}), f32({7}), f32({8}), f32({8})}, {}, "expected [8]"},
        {op_kind::layernorm, {f32({2, 16}), f32({8}), f32({16})}, {}, "expected [16]"},
        {op_kind::reduce_sum, {f32({2, 3})}, {{A::axes, ints{1, -1}}}, "names an axis twice"},
        {op_kind::softmax, {f32({2, 3})}, {{A::axis, std::int64_t(-3)}}, "out of range"},
        {op_kind::lstm_cell,
         {f32({8, 32}), f32({8, 16}), f32({8, 16}), f32({32, 60}), f32({16, 64}), f32({64})},
         {},
         "w[I,4H]"},
        {op_kind::gru_cell, {f32({8, 32}), f32({8, 16}), f32({32, 48}), f32({16, 48}), f32({47})}, {}, "b[3H]"},
        // a per-channel bias laid out [C] broadcasts along the width, not the channels
        {op_kind::conv2d_bias, {f32({1, 4, 8, 8}), f32({6, 4, 3, 3}), f32({6})}, {}, "does not broadcast"},
        {op_kind::matmul_bias, {f32({5, 7}), f32({7, 3}), f32({2, 5, 3})}, {}, "does not broadcast"},
        {op_kind::matmul,
         {f32({5, 7}), f32({7, 3})},
         {{A::activation, std::int64_t(5)}},
         "none/relu/sigmoid/tanh/gelu"},
        // a gradient op must agree with its forward op
        {op_kind::conv2d_grad_input,
         {f32({1, 8, 4, 4}), f32({8, 2, 3, 3})},
         {{A::shape, ints{1, 4, 7, 7}}},
         "incoming gradient has shape [1,8,4,4], but the forward op gives [1,8,7,7]"},
        {op_kind::add_n, {f32({2, 3}), f32({3, 2})}, {}, "an addend has shape [3,2]: expected [2,3]"},
        {op_kind::sgd_update, {f32({4}), f32({4}), f32({2})}, {}, "the learning rate has shape [2]"},
    };
    return list;
}

}  // namespace

TEST_CASE("every op kind has a table entry, a name that parses back, and a shape example") {
    std::set<op_kind> covered;
    for (const auto& e : examples()) covered.insert(e.kind);
    for (std::size_t i = 0; i < ops::num_op_kinds; ++i) {
        const auto k = static_cast<op_kind>(i);
        CAPTURE(ops::name(k));
        CHECK(ops::spec(k).kind == k);
        CHECK(ops::parse_op_kind(ops::name(k)) == k);
        CHECK(covered.count(k) == 1);
    }
    CHECK_FALSE(ops::parse_op_kind("Conv").has_value());
}

TEST_CASE("shape inference of every op kind") {
    for (const auto& e : examples()) {
        CAPTURE(ops::name(e.kind));
        const auto got = infer(e);
        REQUIRE(got.size() == e.outputs.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            CAPTURE(i);
            CHECK(ops::to_string(got[i]) == ops::to_string(e.outputs[i]));
        }
    }
}

TEST_CASE("shape inference rejects bad inputs with a message that says what was expected") {
    for (const auto& e : bad_examples()) {
        CAPTURE(ops::name(e.kind));
        CAPTURE(e.message);
        std::string what;
        try {
            (void)infer({e.kind, e.inputs, e.attrs, {}});
        } catch (const error& x) {
            what = x.what();
        }
        CHECK(what.find(e.message) != std::string::npos);
        // the graph prefixes the op's name and kind
        CHECK(what.find("op 'op' (" + std::string(ops::name(e.kind)) + ")") == 0);
    }
}

TEST_CASE("default attributes are filled in") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 4, 8, 8});
    auto w = g.weight("w", {4, 4, 3, 3});
    auto y = g.add1(op_kind::conv2d, {x, w});
    const auto& a = g.get_op(g.producer(y)).attrs;
    CHECK(a.get_ints(attr_id::stride) == ints{1, 1});
    CHECK(a.get_int(attr_id::padding) == std::int64_t(ops::padding_mode::same));
    CHECK(a.get_int(attr_id::activation) == std::int64_t(ops::activation::none));
    auto n = g.add1(op_kind::layernorm, {g.input("h", {2, 8}), g.weight("gm", {8}), g.weight("bt", {8})});
    CHECK(g.get_op(g.producer(n)).attrs.get_real(attr_id::epsilon) == doctest::Approx(1e-5));
    // an integer where a real is expected is accepted (JSON has one number type)
    auto c = g.add1(op_kind::clip, {x}, {{attr_id::min, std::int64_t(0)}, {attr_id::max, std::int64_t(6)}});
    CHECK(g.get_op(g.producer(c)).attrs.get_real(attr_id::max) == 6.0);
}

TEST_CASE("FLOP and traffic formulas") {
    graph::computation_graph g;
    auto x = g.input("x", {1, 64, 56, 56});
    auto w = g.weight("w", {128, 64, 3, 3});
    auto y = g.add1(op_kind::conv2d, {x, w});
    // 2 * N * O * OH * OW * C * kh * kw
    CHECK(g.flops(g.producer(y)) == doctest::Approx(2.0 * 128 * 56 * 56 * 64 * 9));
    CHECK(g.bytes_accessed(g.producer(y)) == doctest::Approx(4.0 * (64 * 56 * 56 + 128 * 64 * 9 + 128 * 56 * 56)));
    auto a = g.input("a", {4, 8, 16});
    auto b = g.input("b", {16, 32});
    auto m = g.add1(op_kind::matmul, {a, b});
    CHECK(g.flops(g.producer(m)) == doctest::Approx(2.0 * 4 * 8 * 32 * 16));
    auto r = g.add1(op_kind::relu, {m});
    CHECK(g.flops(g.producer(r)) == doctest::Approx(4.0 * 8 * 32));
    CHECK(g.flops(g.producer(x)) == 0);
    CHECK(g.bytes_accessed(g.producer(x)) == 0);  // graph inputs are fed, not computed
    auto table = g.weight("emb", {1000, 64});
    auto idx = g.input("idx", {4, 16}, ops::dtype::i64);
    auto e = g.add1(op_kind::gather, {table, idx});
    // gather reads its indices and the selected rows only
    CHECK(g.bytes_accessed(g.producer(e)) == doctest::Approx(8.0 * 64 + 2 * 4.0 * 64 * 64));
    auto h = g.input("h", {8, 16});
    auto cell = g.add(op_kind::lstm_cell, {g.input("xi", {8, 32}), h, g.input("c", {8, 16}), g.weight("lw", {32, 64}),
                                           g.weight("lu", {16, 64}), g.weight("lb", {64})});
    CHECK(cell.size() == 2);
    CHECK(g.flops(g.producer(cell[0])) == doctest::Approx(2.0 * 8 * 48 * 64 + 10.0 * 8 * 16));
    CHECK(g.parameter_bytes() == 4 * (128 * 64 * 9 + 1000 * 64 + 32 * 64 + 16 * 64 + 64));
}

TEST_CASE("algebraic facts used by the substitution generator") {
    using ops::spec;
    CHECK(spec(op_kind::ewadd).has(ops::commutative));
    CHECK(spec(op_kind::ewadd).has(ops::associative));
    CHECK(spec(op_kind::ewmul).has(ops::commutative));
    CHECK_FALSE(spec(op_kind::sub).has(ops::commutative));
    CHECK_FALSE(spec(op_kind::matmul).has(ops::commutative));
    CHECK(spec(op_kind::matmul).linear_in == 0b11);
    CHECK(spec(op_kind::conv2d).linear_in == 0b11);
    CHECK(spec(op_kind::relu).has(ops::elementwise));
    CHECK_FALSE(spec(op_kind::relu).has(ops::linear));
    CHECK(spec(op_kind::concat).max_inputs == ops::variadic);
    CHECK(spec(op_kind::split).num_outputs == 0);
    CHECK(spec(op_kind::const_iconv).has(ops::constant));
    CHECK_FALSE(spec(op_kind::weight).has(ops::constant));
}

TEST_CASE("dtype and attribute names round-trip") {
    for (std::size_t i = 0; i < ops::num_dtypes; ++i) {
        const auto t = static_cast<ops::dtype>(i);
        CHECK(ops::parse_dtype(ops::name(t)) == t);
        CHECK(ops::size_of(t) >= 1);
    }
    for (std::size_t i = 0; i < ops::num_attr_ids; ++i) {
        const auto a = static_cast<attr_id>(i);
        CHECK(ops::parse_attr_id(ops::name(a)) == a);
    }
}

TEST_CASE("shape") {
    shape s{2, 3, 4};
    CHECK(s.rank() == 3);
    CHECK(s.num_elements() == 24);
    CHECK(s.axis(-1) == 2);
    CHECK_THROWS_AS(s.axis(3), error);
    CHECK(s.to_string() == "[2,3,4]");
    CHECK(shape{}.num_elements() == 1);
    CHECK_THROWS_AS((shape{1, 2, 3, 4, 5, 6, 7, 8, 9}), error);
    CHECK_THROWS_WITH_AS((shape{1 << 30, 1 << 30, 1 << 30}.num_elements()), doctest::Contains("overflows"), error);
}
