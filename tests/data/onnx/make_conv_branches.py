#!/usr/bin/python3
"""Makes conv_branches.onnx next to this script (committed; CI does not run this): a small CNN with
its weights, built with onnx.helper, on which goopt's substitution search folds batchnorms into
their convolutions (kernel and bias computed by weight-only ops) and merges parallel convolutions
of one input (a 1x1 kernel enlarged to 3x3, the kernels concatenated, the result split), so that
the ONNX round-trip test exports those rewrites. Needs Debian's python3-onnx and python3-numpy;
run it with /usr/bin/python3. Weights come from a fixed seed; batchnorm variances are positive.

  tests/data/onnx/make_conv_branches.py [OUT_DIR]     (default: this directory)

x [1,8,12,12] -> Conv 3x3 (no bias) -> BatchNormalization -> Relu -> (Conv 1x1 | Conv 3x3, both
with bias, one input) -> Concat -> Conv 3x3 stride 2 (no bias) -> BatchNormalization -> Add of a
Conv 1x1 stride 2 shortcut of x -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> y [1,10]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20240611)
inits = []


def weight(name, *shape, scale=0.3, positive=False):
    a = rng.uniform(-1, 1, size=shape).astype(np.float32) * scale
    if positive:
        a = np.abs(a) + 0.5
    inits.append(numpy_helper.from_array(a.astype(np.float32), name))
    return name


def conv(name, x, cin, cout, k, stride=1, bias=True):
    ins = [x, weight(name + ".w", cout, cin, k, k)]
    if bias:
        ins.append(weight(name + ".b", cout))
    p = k // 2
    return helper.make_node("Conv", ins, [name], name=name, kernel_shape=[k, k], strides=[stride, stride],
                            pads=[p, p, p, p])


def batchnorm(name, x, c):
    ins = [x, weight(name + ".scale", c, scale=1.0, positive=True), weight(name + ".bias", c),
           weight(name + ".mean", c), weight(name + ".var", c, scale=1.0, positive=True)]
    return helper.make_node("BatchNormalization", ins, [name], name=name, epsilon=1e-5)


nodes = [
    conv("conv1", "x", 8, 16, 3, bias=False),
    batchnorm("bn1", "conv1", 16),
    helper.make_node("Relu", ["bn1"], ["relu1"], name="relu1"),
    conv("branch1x1", "relu1", 16, 8, 1),
    conv("branch3x3", "relu1", 16, 8, 3),
    helper.make_node("Concat", ["branch1x1", "branch3x3"], ["cat"], name="cat", axis=1),
    conv("conv2", "cat", 16, 16, 3, stride=2, bias=False),
    batchnorm("bn2", "conv2", 16),
    conv("shortcut", "x", 8, 16, 1, stride=2),
    helper.make_node("Add", ["bn2", "shortcut"], ["sum"], name="sum"),
    helper.make_node("Relu", ["sum"], ["relu2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["relu2"], ["gap"], name="gap"),
    helper.make_node("Flatten", ["gap"], ["flat"], name="flat", axis=1),
    helper.make_node("Gemm", ["flat", weight("fc.w", 10, 16), weight("fc.b", 10)], ["y"], name="fc", transB=1),
]
graph = helper.make_graph(nodes, "conv_branches",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
model = helper.make_model(graph, producer_name="make_conv_branches.py",
                          opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(OUT, "conv_branches.onnx"))
