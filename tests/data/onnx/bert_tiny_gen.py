"""Generates bert_tiny.onnx: a BERT-style encoder (2 layers, hidden 64, 4 heads, sequence 8,
LayerNorm, exact GELU through Erf) exported by PyTorch at opset 13, where LayerNorm is decomposed
into ReduceMean / Sub / Pow / Add / Sqrt / Div. Used by tests/onnx/ to check that an imported
transformer trains (gradients of models::make_training_graph against finite differences).
Not run by CI; run with Debian's PyTorch: /usr/bin/python3 tests/data/onnx/bert_tiny_gen.py
"""
import math
import os

import torch
from torch import nn

HIDDEN, HEADS, SEQ, LAYERS, FFN = 64, 4, 8, 2, 128


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.o = nn.Linear(HIDDEN, HIDDEN)
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.act = nn.GELU()  # exact: x * 0.5 * (1 + erf(x / sqrt(2)))

    def heads(self, t):
        return t.reshape(1, SEQ, HEADS, HIDDEN // HEADS).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS), dim=-1)
        ctx = (p @ v).transpose(1, 2).reshape(1, SEQ, HIDDEN)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.down(self.act(self.up(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, HIDDEN)
        self.position = nn.Parameter(torch.randn(1, SEQ, HIDDEN) * 0.1)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))

    def forward(self, tokens):
        x = self.embed(tokens) + self.position
        for layer in self.layers:
            x = layer(x)
        return x


torch.manual_seed(0)
model = Encoder().eval()
with torch.no_grad():  # LayerNorm's defaults (1, 0) make the mean of its output 0 for any input
    for layer in model.layers:
        for ln in (layer.ln1, layer.ln2):
            ln.weight.normal_(1.0, 0.5)
            ln.bias.normal_(0.0, 0.5)
tokens = torch.randint(0, 32, (1, SEQ))
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bert_tiny.onnx")
torch.onnx.export(model, (tokens,), out, opset_version=13, input_names=["tokens"], output_names=["hidden"],
                  do_constant_folding=True)
print(out, os.path.getsize(out), "bytes")
