// Imported transformers train: a BERT-style encoder and a ViT-style classifier exported by PyTorch
// at opset 13 (LayerNorm decomposed into ReduceMean / Sub / Pow / Sqrt / Div, exact GELU through
// Erf) go through models::make_training_graph, and their gradients match central differences of the
// loss on the interpreter (double precision). tests/data/onnx/{bert,vit}_tiny_gen.py generate them.
#include <goopt/graph/validate.hpp>
#include <goopt/interp/interpreter.hpp>
#include <goopt/io/onnx.hpp>
#include <goopt/models/training_graph.hpp>

#include "../models/finite_differences.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

using namespace goopt;
using ops::op_kind;

namespace {

const std::filesystem::path exports_dir = std::filesystem::path(GOOPT_TEST_DATA_DIR) / "onnx";

/// Whether a weight is one of the PyTorch module's parameters ("layers.0.q.bias"), not a constant the
/// exporter named ("/layers.0/Constant_output_0", "onnx::MatMul_171") or a top-level one.
bool is_parameter(const std::string& name) {
    return name.find('.') != std::string::npos && !name.starts_with("/") && !name.starts_with("onnx::");
}

/// Whether weight op w feeds the exponent of a pow: the loss has no derivative in it where the
/// base is negative (x^(2 + eps) is NaN there), so finite differences cannot check it.
bool is_pow_exponent(const graph::computation_graph& g, graph::op_id w) {
    for (const graph::use& u : g.get_tensor(g.get_op(w).outputs[0]).uses)
        if (g.get_op(u.op).kind == op_kind::pow && u.slot == 1) return true;
    return false;
}

/// Imports `file`, transforms it for SGD training and checks the gradients: every one finite, and up
/// to 4 elements of every weight (pow exponents aside) against central differences of the loss.
/// `input` is fed `value_of(i)` at element i. Returns how many of the module's parameters (weights
/// with a PyTorch parameter name, holding a '.') were checked.
template <class Value>
std::size_t check_imported_training(const std::string& file, const std::string& input, Value value_of) {
    const io::onnx_model m = io::import_onnx(exports_dir / file);
    const graph::computation_graph& fwd = m.graph;
    const auto train = models::make_training_graph(fwd, {.optimizer = models::optimizer_kind::sgd});
    graph::validate(train);

    interp::feed_map<double> f = io::weight_feeds<double>(m);
    const graph::op_id in = fwd.ops_of_kind(op_kind::input).at(0);
    REQUIRE(fwd.get_op(in).name == input);
    interp::value<double> x = interp::detail::filled(fwd.type_of(fwd.get_op(in).outputs[0]).dims, 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = value_of(i);
    f.emplace(input, x);
    const auto values = interp::evaluate<double>(train, f);
    const graph::tensor_id loss = train.outputs()[fwd.outputs().size()];
    CHECK(values[loss]() == doctest::Approx(testing::training_loss(fwd, f)).epsilon(1e-12));

    std::map<std::string, graph::tensor_id> grad_of;  // weight name -> its gradient in `train`
    for (const graph::op_id u : train.ops_of_kind(op_kind::sgd_update))
        grad_of.emplace(train.get_op(train.producer(train.get_op(u).inputs[0])).name, train.get_op(u).inputs[1]);

    std::size_t checked = 0, parameters = 0;
    double largest = 0;
    for (const graph::op_id w : fwd.ops_of_kind(op_kind::weight)) {
        const std::string& name = fwd.get_op(w).name;
        CAPTURE(name);
        const auto it = grad_of.find(name);
        if (it == grad_of.end()) continue;  // no path to the loss (a shape constant)
        const auto& grad = values[it->second];
        for (const double e : grad.storage()) REQUIRE(std::isfinite(e));  // every update stays finite
        if (is_pow_exponent(fwd, w)) continue;
        if (is_parameter(name)) ++parameters;
        // up to 4 elements spread over the tensor: all of them would take minutes
        const std::size_t n = grad.size(), step = std::max<std::size_t>(1, n / 4);
        for (std::size_t i = 0; i < n; i += step) {
            CAPTURE(i);
            const double fd = testing::central_difference(fwd, f, name, i);
            CHECK(std::abs(grad.data()[i] - fd) <= 1e-7 + 1e-5 * std::abs(fd));
            largest = std::max(largest, std::abs(fd));
            ++checked;
        }
    }
    MESSAGE(file << ": " << checked << " gradient elements of " << parameters << " parameters checked");
    CHECK(largest > 1e-3);
    return parameters;
}

}  // namespace

TEST_CASE("a BERT-style encoder exported at opset 13 trains: its gradients match finite differences") {
    const io::onnx_model m = io::import_onnx(exports_dir / "bert_tiny.onnx");
    CHECK(m.graph.ops_of_kind(op_kind::pow).size() == 4);  // two decomposed LayerNorms per layer
    CHECK(m.graph.ops_of_kind(op_kind::erf).size() == 2);  // exact GELU
    // embedding, and per layer 4 attention biases, 2 LayerNorms, 2 FFN biases (the exporter names
    // the projection matrices onnx::MatMul_*)
    CHECK(check_imported_training("bert_tiny.onnx", "tokens", [](std::size_t i) { return double((7 * i + 3) % 32); }) ==
          21);
}

TEST_CASE("a ViT-style classifier exported at opset 13 trains: its gradients match finite differences") {
    const io::onnx_model m = io::import_onnx(exports_dir / "vit_tiny.onnx");
    CHECK(m.graph.ops_of_kind(op_kind::conv2d).size() == 1);  // the patch embedding
    CHECK(m.graph.ops_of_kind(op_kind::pow).size() == 3);
    // patch embedding, 9 of the encoder layer, final LayerNorm, head
    CHECK(check_imported_training("vit_tiny.onnx", "image", [](std::size_t i) { return std::sin(0.37 * double(i)); }) ==
          15);
}

TEST_CASE(
    "an attention block written with Einsum, Selu and LogSoftmax trains: its gradients match finite "
    "differences") {
    // tests/data/onnx/make_einsum_attention.py: each of the three is lowered onto existing kinds
    const io::onnx_model m = io::import_onnx(exports_dir / "einsum_attention.onnx");
    CHECK(m.graph.ops_of_kind(op_kind::opaque).empty());
    CHECK(m.graph.ops_of_kind(op_kind::matmul).size() == 7);  // one per Einsum
    CHECK(m.graph.ops_of_kind(op_kind::elu).size() == 1);
    CHECK(m.graph.ops_of_kind(op_kind::log).size() == 1);
    // q, k, v, the feed-forward matrix and the head
    CHECK(check_imported_training("einsum_attention.onnx", "x",
                                  [](std::size_t i) { return std::sin(0.53 * double(i)); }) == 5);
}
