#!/usr/bin/python3
"""Makes the recurrent and upsampling ONNX test files next to this script (committed; CI does not
run this). Needs Debian's python3-torch, python3-onnx and python3-numpy (bookworm: torch 1.13,
onnx 1.12); run it with /usr/bin/python3. Every model is randomly initialized from a fixed seed.

  tests/data/onnx/make_recurrent_upsampling.py [OUT_DIR]     (default: this directory)

Each model is exported at opset 13 with its weights, plus <name>.json holding the stored inputs and
PyTorch's own outputs on them: {"inputs": {name: {"shape", "data"}}, "outputs": [...]}.
  lstm_lm     embedding, 2-layer nn.LSTM, linear (a small language model); outputs the logits and
              the final hidden and cell states of both layers (ONNX LSTM's Y, Y_h, Y_c)
  gru_bidir   2-layer bidirectional, batch-first nn.GRU with a given initial state
  lstm_bidir  bidirectional nn.LSTM with given initial states; outputs Y, Y_h and Y_c of both directions
  unet_small  conv, maxpool, ConvTranspose (stride 2, and stride 2 with groups, pads and
              output_padding) up-paths, concat skips, Resize nearest, bilinear (half-pixel and
              align_corners) upsampling, and nearest to a size that is no multiple of the input
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def tensor_json(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float(f"{v:.9g}") for v in a.reshape(-1)]}


def export(model, args, name, input_names, output_names):
    model.eval()
    file = os.path.join(OUT, name + ".onnx")
    torch.onnx.export(model, args, file, opset_version=13, input_names=input_names, output_names=output_names,
                      do_constant_folding=True)
    with torch.no_grad():
        out = model(*args)
    outs = out if isinstance(out, (tuple, list)) else [out]
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump({"inputs": {n: tensor_json(a.numpy()) for n, a in zip(input_names, args)},
                   "outputs": [tensor_json(o.numpy()) for o in outs]}, f)
    print(f"{file}: {os.path.getsize(file)} bytes")


class LstmLm(nn.Module):
    def __init__(self, vocab=20, embed=8, hidden=12):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        y, (h, c) = self.lstm(self.embed(tokens))
        return self.out(y), h, c


class GruBidir(nn.Module):
    def __init__(self, features=6, hidden=5):
        super().__init__()
        self.gru = nn.GRU(features, hidden, num_layers=2, batch_first=True, bidirectional=True)

    def forward(self, x, h0):
        y, h = self.gru(x, h0)
        return y, h


class LstmBidir(nn.Module):
    def __init__(self, features=4, hidden=3):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, bidirectional=True)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


class UNetSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(3, 8, 3, padding=1)
        self.enc2 = nn.Conv2d(8, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.up_grouped = nn.ConvTranspose2d(16, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.dec = nn.Conv2d(20, 8, 3, padding=1)
        self.head = nn.Conv2d(8 + 16 + 16 + 16, 2, 1)

    def forward(self, x):
        e1 = F.relu(self.enc1(x))                      # [1,8,16,16]
        e2 = F.relu(self.enc2(F.max_pool2d(e1, 2)))    # [1,16,8,8]
        d = F.relu(self.dec(torch.cat([self.up(e2), self.up_grouped(e2), e1], 1)))
        bottom = F.max_pool2d(e2, 2)                   # [1,16,4,4]
        nearest = F.interpolate(bottom, scale_factor=4, mode="nearest")
        bilinear = F.interpolate(e2, scale_factor=2, mode="bilinear", align_corners=False)
        corners = F.interpolate(bottom, size=(16, 16), mode="bilinear", align_corners=True)
        y = self.head(torch.cat([d, nearest, bilinear, corners], 1))
        odd = F.interpolate(x, size=(7, 5), mode="nearest")  # 16 -> 7 and 16 -> 5: no integer scale
        return y, odd


def main():
    torch.manual_seed(0)
    export(LstmLm(), (torch.randint(0, 20, (5, 2)),), "lstm_lm", ["tokens"], ["logits", "h", "c"])
    torch.manual_seed(1)
    export(GruBidir(), (torch.randn(3, 4, 6), torch.randn(4, 3, 5)), "gru_bidir", ["x", "h0"], ["y", "h"])  # batch 3, 4 steps
    torch.manual_seed(3)
    export(LstmBidir(), (torch.randn(3, 2, 4), torch.randn(2, 2, 3), torch.randn(2, 2, 3)), "lstm_bidir",
           ["x", "h0", "c0"], ["y", "h", "c"])
    torch.manual_seed(2)
    export(UNetSmall(), (torch.randn(1, 3, 16, 16),), "unet_small", ["x"], ["y", "odd"])


if __name__ == "__main__":
    main()
