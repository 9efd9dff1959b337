"""The PyTorch modules the bundled ONNX models were exported from, built from the same seeds.

``scripts/export_models.py`` exports ``build(name)`` to ``polyeng/models/<name>_*.onnx``, and
``polyeng bench --models`` times ``build(name)`` in PyTorch eager mode: both hold the same weights,
so the two sides of that comparison compute the same function. torch is imported on first use
(polyeng does not depend on it); without it ``build`` raises ImportError.
"""
from __future__ import annotations

import functools
import math

VOCAB = 1000
MAX_POSITIONS = 64
# torch.manual_seed before each constructor: the weights of every shipped file come from these.
SEEDS = {"lstm_lm": 1, "encoder": 2, "unet": 3}


def build(name: str):
    """The module ``name`` (lstm_lm, encoder or unet) with its seeded weights, in eval mode."""
    if name not in SEEDS:
        raise ValueError(f"model {name!r}: expected one of {', '.join(SEEDS)}")
    torch = _torch()
    torch.manual_seed(SEEDS[name])
    return randomise_affine(modules()[name]())


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("the PyTorch versions of the bundled models need torch: pip install torch") from None
    return torch


def randomise_affine(model):
    """Make every bias and layer-norm scale non-trivial, so a loader that drops one is caught."""
    torch = _torch()
    nn = torch.nn
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.copy_(1 + 0.2 * torch.randn_like(module.weight))
                module.bias.copy_(0.2 * torch.randn_like(module.bias))
            elif isinstance(module, nn.Linear):
                module.bias.copy_(0.1 * torch.randn_like(module.bias))
    return model.eval()


@functools.cache
def modules() -> dict:
    """name -> module class; defined on first call, when torch is imported."""
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    class LstmLanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, 64)
            self.lstm = nn.LSTM(64, 128)
            self.head = nn.Linear(128, VOCAB)

        def forward(self, ids):
            hidden, _ = self.lstm(self.embed(ids))
            return self.head(hidden)

    class EncoderLayer(nn.Module):
        def __init__(self, hidden, heads, gelu):
            super().__init__()
            self.heads, self.head_dim = heads, hidden // heads
            self.query, self.key, self.value, self.out = (nn.Linear(hidden, hidden) for _ in range(4))
            self.attention_norm = nn.LayerNorm(hidden)
            self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), gelu, nn.Linear(4 * hidden, hidden))
            self.mlp_norm = nn.LayerNorm(hidden)

        def forward(self, x, mask):
            batch, seq, hidden = x.shape

            def split(t):
                return t.view(batch, seq, self.heads, self.head_dim).transpose(1, 2)

            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
            # A tensor fill value, not a Python float, so both exporters accept torch.where.
            scores = torch.where(mask[:, None, None, :], scores, torch.tensor(torch.finfo(torch.float32).min))
            context = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(batch, seq, hidden)
            x = self.attention_norm(x + self.out(context))
            return self.mlp_norm(x + self.mlp(x))

    class Encoder(nn.Module):
        def __init__(self, hidden=128, heads=4):
            super().__init__()
            self.words = nn.Embedding(VOCAB, hidden)
            self.positions = nn.Embedding(MAX_POSITIONS, hidden)
            self.embed_norm = nn.LayerNorm(hidden)
            self.layers = nn.ModuleList([EncoderLayer(hidden, heads, nn.GELU()),
                                         EncoderLayer(hidden, heads, nn.GELU(approximate="tanh"))])

        def forward(self, input_ids, attention_mask):
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            x = self.embed_norm(self.words(input_ids) + self.positions(positions))
            for layer in self.layers:
                x = layer(x, attention_mask)
            return x

    class Pointwise(nn.Module):
        """Channel mixing at every pixel, written without a convolution op."""

        def __init__(self, inputs, outputs):
            super().__init__()
            self.linear = nn.Linear(inputs, outputs)

        def forward(self, x):
            return self.linear(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enter, self.down, self.bottom = Pointwise(3, 8), Pointwise(8, 16), Pointwise(16, 32)
            self.up_mid, self.up_top = Pointwise(32 + 16, 16), Pointwise(16 + 8, 8)
            self.mask_head = Pointwise(8, 1)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Linear(32, 10)

        def forward(self, image):
            top = F.relu(self.enter(image))
            mid = F.relu(self.down(F.max_pool2d(top, 2)))
            bottom = F.relu(self.bottom(F.avg_pool2d(mid, 2)))
            up = F.interpolate(bottom, scale_factor=2, mode="bilinear", align_corners=False)
            up = F.relu(self.up_mid(torch.cat([up, mid], dim=1)))
            up = F.interpolate(up, scale_factor=2, mode="nearest")
            up = F.relu(self.up_top(torch.cat([up, top], dim=1)))
            mask = torch.sigmoid(self.mask_head(up))
            logits = self.classifier(torch.flatten(self.pool(bottom), 1))
            return mask, logits

    return {"lstm_lm": LstmLanguageModel, "encoder": Encoder, "unet": UNet}
