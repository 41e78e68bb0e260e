"""Generates vit_tiny.onnx: a ViT-style classifier (4x4 patches of a 16x16 image by a strided Conv,
a class token, learned positions, one nn.TransformerEncoderLayer with exact GELU, LayerNorm, a
linear head on the class token) exported by PyTorch at opset 13. Used by tests/onnx/ to check that
an imported vision transformer trains. Not run by CI; run with Debian's PyTorch:
/usr/bin/python3 tests/data/onnx/vit_tiny_gen.py
"""
import os

import torch
from torch import nn

WIDTH, HEADS, PATCH, IMAGE = 32, 4, 4, 16


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, WIDTH, PATCH, PATCH)
        self.cls = nn.Parameter(torch.randn(1, 1, WIDTH))
        self.position = nn.Parameter(torch.randn(1, (IMAGE // PATCH) ** 2 + 1, WIDTH) * 0.1)
        self.encoder = nn.TransformerEncoderLayer(WIDTH, HEADS, 2 * WIDTH, dropout=0.0, activation="gelu",
                                                  batch_first=True)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 10)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), t], 1) + self.position
        return self.head(self.norm(self.encoder(t))[:, 0])


torch.manual_seed(0)
model = ViT().eval()
with torch.no_grad():  # LayerNorm's defaults (1, 0) would hide upstream gradients behind the mean loss
    for ln in (model.encoder.norm1, model.encoder.norm2, model.norm):
        ln.weight.normal_(1.0, 0.5)
        ln.bias.normal_(0.0, 0.5)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vit_tiny.onnx")
torch.onnx.export(model, (torch.randn(1, 3, IMAGE, IMAGE),), out, opset_version=13, input_names=["image"],
                  output_names=["logits"], do_constant_folding=True)
print(out, os.path.getsize(out), "bytes")
