#!/usr/bin/python3
"""Makes opaque_ops.onnx next to this script (committed; CI does not run this): a small CNN with its
weights and three operators goopt has no kind for (Shrink, CumSum with a constant axis input, Hardmax),
which the import keeps as opaque ops while the substitution search still rewrites the rest (each
Conv's bias Add into a fused conv2d_bias), so that the tests export and run a model with opaque ops.
Needs Debian's python3-onnx and python3-numpy; run it with /usr/bin/python3. Weights come from a
fixed seed.

  tests/data/onnx/make_opaque_ops.py [OUT_DIR]     (default: this directory)

x [1,3,8,8] -> Conv 3x3 (bias) -> Relu -> Shrink (lambd 0.1, bias 0.05) -> Conv 1x1 (bias) -> Relu ->
ReduceMean over H, W -> CumSum along axis 1 -> y [1,4]; Hardmax of it -> z [1,4]
(Until session 31 the third operator was LRN, which has a kind since.)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261202)
inits = []


def weight(name, *shape, scale=0.5):
    inits.append(numpy_helper.from_array(rng.uniform(-1, 1, size=shape).astype(np.float32) * scale, name))
    return name


nodes = [
    helper.make_node("Conv", ["x", weight("conv1.w", 4, 3, 3, 3), weight("conv1.b", 4)], ["c1"], name="conv1",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Shrink", ["r1"], ["n1"], name="shrink", lambd=0.1, bias=0.05),
    helper.make_node("Conv", ["n1", weight("conv2.w", 4, 4, 1, 1), weight("conv2.b", 4)], ["c2"], name="conv2",
                     kernel_shape=[1, 1]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("ReduceMean", ["r2"], ["m"], name="mean", axes=[2, 3], keepdims=0),
    helper.make_node("CumSum", ["m", "axis"], ["y"], name="cumsum"),
    helper.make_node("Hardmax", ["y"], ["z"], name="hardmax", axis=-1),
]
inits.append(numpy_helper.from_array(np.array(1, dtype=np.int64), "axis"))
graph = helper.make_graph(nodes, "opaque_ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])], initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_opaque_ops.py")
model.ir_version = 7
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(OUT, "opaque_ops.onnx"))
print("wrote", os.path.join(OUT, "opaque_ops.onnx"))
