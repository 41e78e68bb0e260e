#!/usr/bin/python3
"""Makes skip_sums.onnx next to this script (committed; CI does not run this): the two sums of
products goopt's sum_of_products family joins, with their weights, built with onnx.helper, so that
the ONNX round-trip test exports the joined products (inputs and weights concatenated). Needs
Debian's python3-onnx and python3-numpy; run it with /usr/bin/python3. Weights come from a fixed seed.

  tests/data/onnx/make_skip_sums.py [OUT_DIR]     (default: this directory)

x [1,8,1,32] -> nine layers of Conv 1x1 -> Tanh, each layer's output also through a 1x1 "skip"
Conv to 16 channels, the nine skip outputs summed one Add at a time (WaveNet's skip total) -> skip
[1,16,1,32]; xi [4,6], hi [4,5] -> Sigmoid(MatMul(xi, W) + MatMul(hi, U) + b) (an LSTM's gate) ->
gate [4,8]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(42)
    nodes, weights = [], []

    def weight(name, shape, scale):
        weights.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    layer, total = "x", None
    for i in range(9):
        nodes.append(helper.make_node("Conv", [layer, weight(f"filter{i}", (8, 8, 1, 1), 0.3)], [f"conv{i}"]))
        nodes.append(helper.make_node("Tanh", [f"conv{i}"], [f"layer{i}"]))
        nodes.append(helper.make_node("Conv", [f"layer{i}", weight(f"skip{i}", (16, 8, 1, 1), 0.3)], [f"skip_out{i}"]))
        if total is None:
            total = f"skip_out{i}"
        else:
            nodes.append(helper.make_node("Add", [total, f"skip_out{i}"], [f"total{i}"]))
            total = f"total{i}"
        layer = f"layer{i}"
    nodes.append(helper.make_node("Identity", [total], ["skip"]))
    nodes += [
        helper.make_node("MatMul", ["xi", weight("W", (6, 8), 0.5)], ["xw"]),
        helper.make_node("MatMul", ["hi", weight("U", (5, 8), 0.5)], ["hu"]),
        helper.make_node("Add", ["xw", "hu"], ["pre"]),
        helper.make_node("Add", ["pre", weight("b", (8,), 0.5)], ["pre_b"]),
        helper.make_node("Sigmoid", ["pre_b"], ["gate"]),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 1, 32]),
        helper.make_tensor_value_info("xi", TensorProto.FLOAT, [4, 6]),
        helper.make_tensor_value_info("hi", TensorProto.FLOAT, [4, 5]),
    ]
    outputs = [
        helper.make_tensor_value_info("skip", TensorProto.FLOAT, [1, 16, 1, 32]),
        helper.make_tensor_value_info("gate", TensorProto.FLOAT, [4, 8]),
    ]
    model = helper.make_model(helper.make_graph(nodes, "skip_sums", inputs, outputs, weights),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, "skip_sums.onnx"))


if __name__ == "__main__":
    main()
