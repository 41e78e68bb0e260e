#!/usr/bin/python3
"""Makes the ONNX test files under tests/data/onnx/ (committed, so that CI needs no Python).

Needs Debian's python3-onnx, python3-numpy, python3-torch and python3-torchvision (bookworm:
onnx 1.12, torch 1.13, torchvision 0.14). Every model is randomly initialized from a fixed seed;
no pretrained weights are downloaded.

  tools/make_onnx_testdata.py [OUT_DIR]      (default: tests/data/onnx next to this script)

Files:
  resnet50.onnx, inception_v3.onnx, transformer_encoder.onnx
      real exports from torchvision / torch.nn with the weights stripped: every initializer larger
      than 1 KiB keeps its name, type and shape but its data is marked as external data in a file
      that is not kept, so the importer knows the weights and their shapes without their values.
  squeezenet1_1.onnx (+ .json), encoder_small.onnx (+ .json), ops_torch.onnx (+ .json)
      real exports WITH their weights, plus a stored input and the exporter's own output
      (torch's forward on that input) in JSON: {"inputs": {name: {"shape", "data"}}, "outputs": [...]}.
  ops_helper.onnx (+ .json)
      built with the onnx helper API at opset 13, for ops and input forms torch does not emit
      (Clip/Pad/Split/Squeeze with tensor inputs, Where, Expand, Constant, Identity, ...); the
      expected output is computed with numpy in this script.
  ops_opset11.onnx (+ .json), ops_misc.onnx (+ .json)
      opset 11 forms (Split/Squeeze/Unsqueeze axes as attributes, Softmax flattening at its axis,
      1-D MatMul, Gemm transA/alpha/beta, Conv auto_pad, GlobalMaxPool, Neg), expected by numpy.
  unsupported.onnx, dangling.onnx, symbolic_dim.onnx
      files the importer must reject with a clear error.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import torch
import torch.nn as nn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "data", "onnx")
os.makedirs(OUT, exist_ok=True)


def path(name):
    return os.path.join(OUT, name)


def strip_weights(file):
    """Marks every initializer over 1 KiB as external data in a file that is then deleted."""
    model = onnx.load(file)
    data = os.path.basename(file) + ".weights"
    onnx.save_model(model, file, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data, size_threshold=1024)
    os.remove(os.path.join(os.path.dirname(file), data))


def tensor_json(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float(f"{v:.9g}") for v in a.reshape(-1)]}


def write_expected(file, inputs, outputs):
    with open(file, "w") as f:
        json.dump({"inputs": {k: tensor_json(v) for k, v in inputs.items()},
                   "outputs": [tensor_json(o) for o in outputs]}, f)


def export(model, args, name, opset, strip, input_names, expected=False):
    model.eval()
    file = path(name + ".onnx")
    torch.onnx.export(model, args, file, opset_version=opset, input_names=input_names,
                      output_names=["output"], do_constant_folding=True)
    if expected:
        with torch.no_grad():
            out = model(*args)
        outs = out if isinstance(out, (tuple, list)) else [out]
        write_expected(path(name + ".json"), {n: a.numpy() for n, a in zip(input_names, args)},
                       [o.numpy() for o in outs])
    if strip:
        strip_weights(file)
    print(f"{file}: {os.path.getsize(file)} bytes")


class OpsTorch(nn.Module):
    """One module exercising the operators real exports produce, with asymmetric pads, ceil_mode,
    count_include_pad, BatchNormalization (after a Clip, so that export does not fold it into the
    Conv), Gemm, ReLU6 (Clip), GELU (Erf), softmax, mean, pow, sqrt, slicing."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=False)
        self.conv3 = nn.Conv2d(8, 6, (1, 3), padding=(0, 2), dilation=(1, 2))
        self.pool_ceil = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.pool_pad = nn.MaxPool2d(3, stride=1, padding=1)
        self.avg_incl = nn.AvgPool2d(3, stride=1, padding=1)                          # count_include_pad
        self.avg_excl = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.fc = nn.Linear(6 * 4 * 4, 10)
        self.proj = nn.Linear(10, 12, bias=False)
        self.ln = nn.LayerNorm(12)
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 1.5)
        with torch.no_grad():
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        y = torch.clamp(self.conv1(x), 0.0, 6.0)  # Clip, [1,8,8,8]
        y = self.bn(y)                            # after the Clip, so not folded into the Conv
        y = self.conv2(y)
        y = self.pool_pad(y) + self.avg_incl(y) - self.avg_excl(y)
        y = self.pool_ceil(y)                     # 8 -> 4 (ceil)
        y = self.conv3(y)                         # [1,6,4,4]
        y = torch.sigmoid(y) * torch.tanh(y) + torch.sqrt(y * y + 1.0) / 2.0
        y = y.reshape(y.shape[0], -1)             # Shape -> Gather -> Unsqueeze -> Concat -> Reshape
        y = self.fc(y)                            # Gemm
        y = torch.nn.functional.gelu(y)
        z = self.proj(y)                          # MatMul (no bias)
        z = self.ln(z)
        z = z.pow(2.0) - z.mean(dim=-1, keepdim=True)
        a, b = torch.split(z, [5, 7], dim=1)
        c = torch.cat([b[:, 1:6], a], dim=1)       # Slice + Concat
        c = torch.softmax(c.unsqueeze(0), dim=-1).squeeze(0)
        return c.transpose(0, 1).flatten()


class Encoder(nn.Module):
    def __init__(self, d_model, nhead, layers, ff, vocab=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model) if vocab else None
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ff, dropout=0.0,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        if self.embed is not None:
            x = self.embed(x)
        return self.encoder(x)


def torch_models():
    torch.manual_seed(0)
    export(torchvision.models.resnet50(weights=None), (torch.randn(1, 3, 224, 224),), "resnet50",
           13, True, ["input"])
    torch.manual_seed(0)
    export(torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True),
           (torch.randn(1, 3, 299, 299),), "inception_v3", 13, True, ["input"])
    torch.manual_seed(0)
    # 2 layers, d_model 256, 4 heads, seq 32 x batch 1 (sequence first), opset 14: LayerNorm
    # decomposes into ReduceMean/Sub/Pow/Sqrt/Div, attention has shape-only subgraphs
    export(Encoder(256, 4, 2, 1024), (torch.randn(32, 1, 256),), "transformer_encoder", 14, True,
           ["input"])

    torch.manual_seed(1)
    export(torchvision.models.squeezenet1_1(weights=None), (torch.rand(1, 3, 64, 64),),
           "squeezenet1_1", 13, False, ["input"], expected=True)
    torch.manual_seed(2)
    # with an embedding (Gather of token ids) and opset 17's LayerNormalization
    export(Encoder(32, 4, 2, 64, vocab=50), (torch.randint(0, 50, (6, 2)),), "encoder_small", 17,
           False, ["tokens"], expected=True)
    torch.manual_seed(3)
    export(OpsTorch(), (torch.randn(1, 3, 16, 16),), "ops_torch", 13, False, ["input"], expected=True)


def helper_models():
    rng = np.random.default_rng(0)
    f = TensorProto.FLOAT
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    init = [numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(np.array([-0.5], np.float32), "lo"),
            numpy_helper.from_array(np.array(0.75, np.float32), "hi"),
            numpy_helper.from_array(np.array([2, 3], np.int64), "split_sizes"),
            numpy_helper.from_array(np.array([0, 1, 0, 0, 0, 2], np.int64), "pads"),
            numpy_helper.from_array(np.array([1], np.int64), "axis1"),
            numpy_helper.from_array(np.array([2, 3, 5], np.int64), "expand_shape"),
            numpy_helper.from_array(np.array([0, 2], np.int64), "idx"),
            numpy_helper.from_array(np.array([1, -4], np.int64), "starts"),
            numpy_helper.from_array(np.array([9223372036854775807, -1], np.int64), "ends"),
            numpy_helper.from_array(np.array([1, 2], np.int64), "slice_axes"),
            numpy_helper.from_array(np.array([3, 1], np.int64), "expand_shape32"),
            numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),                  # [2,3,5]
        helper.make_node("Clip", ["m", "lo", "hi"], ["c"], name="clip"),
        helper.make_node("Constant", [], ["two"], name="const_two",
                         value=numpy_helper.from_array(np.array(2.0, np.float32))),
        helper.make_node("Pow", ["m", "two"], ["p"], name="pow"),
        helper.make_node("Sqrt", ["p"], ["s"], name="sqrt"),
        helper.make_node("Erf", ["c"], ["e"], name="erf"),
        helper.make_node("Div", ["e", "two"], ["d"], name="div"),
        helper.make_node("Sub", ["s", "d"], ["sd"], name="sub"),
        helper.make_node("Split", ["sd", "split_sizes"], ["s0", "s1"], name="split", axis=2),
        helper.make_node("Pad", ["s1", "pads"], ["padded"], name="pad", mode="constant"),  # [2,4,5]
        helper.make_node("Slice", ["padded", "starts", "ends", "slice_axes"], ["sl"], name="slice"),
        helper.make_node("Unsqueeze", ["s0", "axis1"], ["u"], name="unsqueeze"),      # [2,1,3,2]
        helper.make_node("Squeeze", ["u", "axis1"], ["sq"], name="squeeze"),          # [2,3,2]
        # a shape-only subgraph: Shape -> Gather -> Equal -> Where -> Concat feeds a Reshape
        helper.make_node("Shape", ["sq"], ["sq_shape"], name="shape"),
        helper.make_node("Gather", ["sq_shape", "idx"], ["sq_dims"], name="gather_dims", axis=0),
        helper.make_node("Equal", ["sq_dims", "sq_dims"], ["eq"], name="equal"),
        helper.make_node("Where", ["eq", "sq_dims", "sq_dims"], ["dims"], name="where"),
        helper.make_node("Concat", ["dims", "minus_one"], ["new_shape"], name="concat_dims", axis=0),
        helper.make_node("Reshape", ["sq", "new_shape"], ["r3"], name="reshape"),      # [2,2,3]
        helper.make_node("Transpose", ["r3"], ["r3t"], name="transpose_r3", perm=[0, 2, 1]),
        helper.make_node("Expand", ["r3t", "expand_shape32"], ["wh"], name="expand_x"),  # [2,3,2]
        helper.make_node("Expand", ["hi", "expand_shape"], ["ex"], name="expand"),     # [2,3,5]
        helper.make_node("Mul", ["ex", "m"], ["em"], name="mul"),
        helper.make_node("Gather", ["em", "idx"], ["ga"], name="gather", axis=2),      # [2,3,2]
        helper.make_node("Add", ["ga", "wh"], ["gw"], name="add"),
        helper.make_node("ReduceMean", ["gw"], ["rm"], name="reduce_mean", axes=[2], keepdims=0),
        helper.make_node("Identity", ["rm"], ["y"], name="identity"),
        helper.make_node("Transpose", ["sl"], ["y2"], name="transpose", perm=[2, 0, 1]),
    ]
    graph = helper.make_graph(nodes, "ops_helper", [helper.make_tensor_value_info("x", f, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", f, [2, 3]),
                               helper.make_tensor_value_info("y2", f, [3, 2, 3])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path("ops_helper.onnx"))

    from math import erf
    m = x @ w
    c = np.clip(m, -0.5, 0.75)
    sd = np.sqrt(m ** 2) - np.vectorize(erf)(c) / 2.0
    s0, s1 = sd[:, :, :2], sd[:, :, 2:]
    padded = np.pad(s1, [(0, 0), (1, 0), (0, 2)])
    sl = padded[:, 1:, -4:-1]
    wh = s0.reshape(2, 2, 3).transpose(0, 2, 1)
    ga = (0.75 * m)[:, :, [0, 2]]
    y = (ga + wh).mean(axis=2)
    write_expected(path("ops_helper.json"), {"x": x}, [y, sl.transpose(2, 0, 1)])

    # opset 11: axes and split sizes as attributes
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=2, split=[1, 3]),
        helper.make_node("Unsqueeze", ["a"], ["u"], name="unsqueeze", axes=[0]),
        helper.make_node("Squeeze", ["u"], ["sq"], name="squeeze", axes=[0, 3]),     # [2,3]
        helper.make_node("ReduceSum", ["b"], ["rs"], name="reduce_sum", axes=[-1], keepdims=0),
        helper.make_node("Add", ["sq", "rs"], ["y"], name="add"),
        helper.make_node("Relu", ["y"], ["yr"], name="relu"),
    ]
    graph = helper.make_graph(nodes, "ops_opset11", [helper.make_tensor_value_info("x", f, [2, 3, 4])],
                              [helper.make_tensor_value_info("yr", f, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    onnx.checker.check_model(model)
    onnx.save(model, path("ops_opset11.onnx"))
    write_expected(path("ops_opset11.json"), {"x": x},
                   [np.maximum(x[:, :, 0] + x[:, :, 1:].sum(axis=2), 0.0)])

    # opset 11 forms: Softmax flattening at axis 1, 1-D MatMul operand, Gemm with transA / alpha /
    # beta, Conv with auto_pad SAME_UPPER and stride 2, GlobalMaxPool, Neg
    w1 = rng.standard_normal(4).astype(np.float32)
    gb = rng.standard_normal((4, 3)).astype(np.float32)
    gc = rng.standard_normal(3).astype(np.float32)
    cw = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    cb = rng.standard_normal(3).astype(np.float32)
    mat = rng.standard_normal((4, 2)).astype(np.float32)
    img = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    nodes = [
        helper.make_node("Softmax", ["x"], ["sm"], name="softmax", axis=1),
        helper.make_node("MatMul", ["x", "w1"], ["v"], name="matvec"),
        helper.make_node("Gemm", ["m", "gb", "gc"], ["g"], name="gemm", transA=1, alpha=0.5, beta=2.0),
        helper.make_node("Add", ["v", "g"], ["vg"], name="add"),
        helper.make_node("Conv", ["img", "cw", "cb"], ["c"], name="conv", auto_pad="SAME_UPPER",
                         strides=[2, 2]),
        helper.make_node("GlobalMaxPool", ["c"], ["gm"], name="global_max"),
        helper.make_node("Neg", ["gm"], ["ng"], name="neg"),
    ]
    graph = helper.make_graph(
        nodes, "ops_misc",
        [helper.make_tensor_value_info("x", f, [2, 3, 4]), helper.make_tensor_value_info("m", f, [4, 2]),
         helper.make_tensor_value_info("img", f, [1, 2, 5, 5])],
        [helper.make_tensor_value_info("sm", f, [2, 3, 4]), helper.make_tensor_value_info("vg", f, [2, 3]),
         helper.make_tensor_value_info("ng", f, [1, 3, 1, 1])],
        [numpy_helper.from_array(a, n) for a, n in [(w1, "w1"), (gb, "gb"), (gc, "gc"), (cw, "cw"), (cb, "cb")]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    onnx.checker.check_model(model)
    onnx.save(model, path("ops_misc.onnx"))
    flat = x.reshape(2, 12).astype(np.float64)
    sm = (np.exp(flat) / np.exp(flat).sum(axis=1, keepdims=True)).reshape(2, 3, 4)
    vg = x @ w1 + (0.5 * (mat.T @ gb) + 2.0 * gc)
    padded = np.pad(img, [(0, 0), (0, 0), (1, 1), (1, 1)])   # SAME_UPPER, 5 -> 3 at stride 2: 1 + 1
    conv = np.zeros((1, 3, 3, 3))
    for o in range(3):
        for i in range(3):
            for j in range(3):
                conv[0, o, i, j] = (padded[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3] * cw[o]).sum() + cb[o]
    write_expected(path("ops_misc.json"), {"x": x, "m": mat, "img": img},
                   [sm, vg, -conv.max(axis=(2, 3), keepdims=True)])

    # rejected files
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("TopK", ["r", "k"], ["v", "i"], name="top", axis=-1),
             helper.make_node("LSTM", ["v", "W", "R"], ["h"], name="lstm_1", hidden_size=2),
             helper.make_node("TopK", ["h", "k"], ["v2", "i2"], name="top2", axis=-1)]
    graph = helper.make_graph(nodes, "unsupported", [helper.make_tensor_value_info("x", f, [2, 3, 4])],
                              [helper.make_tensor_value_info("v2", f, [2, 3, 2])],
                              [numpy_helper.from_array(np.array([2], np.int64), "k"),
                               numpy_helper.from_array(np.zeros((1, 8, 2), np.float32), "W"),
                               numpy_helper.from_array(np.zeros((1, 8, 2), np.float32), "R")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              path("unsupported.onnx"))

    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "bias"], ["y"], name="add_bias")]
    graph = helper.make_graph(nodes, "dangling", [helper.make_tensor_value_info("x", f, [2, 3])],
                              [helper.make_tensor_value_info("y", f, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path("dangling.onnx"))

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "symbolic",
                              [helper.make_tensor_value_info("x", f, ["batch", 3])],
                              [helper.make_tensor_value_info("y", f, ["batch", 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              path("symbolic_dim.onnx"))


if __name__ == "__main__":
    helper_models()
    torch_models()
