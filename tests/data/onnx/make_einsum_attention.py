#!/usr/bin/python3
"""Makes einsum_attention.onnx next to this script (committed; CI does not run this): a one-head
attention block written with Einsum, as some exporters and hand-written models do, with a Selu
activation and a LogSoftmax head, built with onnx.helper. goopt lowers each of these onto existing
op kinds (matmuls, transposes, reductions; elu and a scale; max, exp, sum, log), so the model runs
on the interpreter and trains. (Mish, also lowered, is of operator set 18, which Debian's onnx
checker does not know; the one-node onnxruntime test covers it.) Needs Debian's python3-onnx and python3-numpy; run it
with /usr/bin/python3. Weights come from a fixed seed.

  tests/data/onnx/make_einsum_attention.py [OUT_DIR]     (default: this directory)

x [2,5,8] -> q, k, v = Einsum("bsd,de->bse", x, attn.{q,k,v}) -> scores Einsum("bqe,bke->bqk")
-> Softmax -> Einsum("bqk,bke->bqe", p, v) -> Selu -> Einsum("bse,ef->bsf", ffn.w)
-> ReduceMean over s -> Einsum("bf,fc->bc", head.w) -> LogSoftmax -> y [2,4]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261206)
inits = []


def weight(name, *shape, scale=0.5):
    inits.append(numpy_helper.from_array((rng.uniform(-1, 1, size=shape) * scale).astype(np.float32), name))
    return name


def einsum(eq, ins, out):
    return helper.make_node("Einsum", ins, [out], name=out, equation=eq)


nodes = [
    einsum("bsd,de->bse", ["x", weight("attn.q", 8, 6)], "q"),
    einsum("bsd,de->bse", ["x", weight("attn.k", 8, 6)], "k"),
    einsum("bsd,de->bse", ["x", weight("attn.v", 8, 6)], "v"),
    einsum("bqe,bke->bqk", ["q", "k"], "scores"),
    helper.make_node("Softmax", ["scores"], ["p"], name="p", axis=-1),
    einsum("bqk,bke->bqe", ["p", "v"], "mixed"),
    helper.make_node("Selu", ["mixed"], ["act"], name="act"),
    einsum("bse,ef->bsf", ["act", weight("ffn.w", 6, 7)], "ffn"),
    helper.make_node("ReduceMean", ["ffn"], ["pooled"], name="pooled", axes=[1], keepdims=0),
    einsum("bf,fc->bc", ["pooled", weight("head.w", 7, 4, scale=2.0)], "logits"),
    helper.make_node("LogSoftmax", ["logits"], ["y"], name="y", axis=-1),
]
graph = helper.make_graph(nodes, "einsum_attention",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="goopt-tests")
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(OUT, "einsum_attention.onnx"))
