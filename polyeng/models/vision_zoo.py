"""Small vision models of the common architectures, with random weights, for the model tests and
``polyeng bench --models``: built in PyTorch and exported to ONNX with either of PyTorch's
exporters.

- ``resnet``: a stem (7x7 conv, batch norm, max pool) and two basic blocks, one downsampling;
- ``mobilenetv3``: MobileNetV3-Small's blocks (inverted residuals with depthwise convolutions,
  squeeze-excite gated by hardsigmoid, hardswish and ReLU), narrower and shorter;
- ``efficientnet``: EfficientNet's MBConv blocks (SiLU, squeeze-excite gated by sigmoid);
- ``squeezenet``: SqueezeNet 1.1's stem, fire modules and classifier, narrower;
- ``vit``: a ViT (patch embedding, class token, position embedding, two pre-norm encoder blocks
  with a fused QKV projection, GELU MLPs) at 32x32 pixels.

Every block is written as torchvision and timm write it; neither is needed (timm imports
torchvision, whose wheel on CPU-only machines does not import beside the CPU torch). torch is
imported on first use; polyeng does not depend on it.
"""
from __future__ import annotations

import functools

NAMES = ("resnet", "mobilenetv3", "efficientnet", "squeezenet", "vit")
SEEDS = {name: i + 10 for i, name in enumerate(NAMES)}
SIZES = {"resnet": 64, "mobilenetv3": 64, "efficientnet": 64, "squeezenet": 64, "vit": 32}   # input pixels
CLASSES = 10


def build(name: str):
    """The module ``name`` in eval mode, its weights from ``SEEDS[name]`` (batch norm statistics
    too, so a loader that drops them is caught)."""
    if name not in SEEDS:
        raise ValueError(f"model {name!r}: expected one of {', '.join(NAMES)}")
    torch = _import("torch")
    torch.manual_seed(SEEDS[name])
    model = _constructors()[name]().eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
    return model


def example_input(name: str, batch: int = 2):
    torch = _import("torch")
    generator = torch.Generator().manual_seed(SEEDS[name])
    return torch.randn(batch, 3, SIZES[name], SIZES[name], generator=generator)


def export(name: str, path, exporter: str) -> None:
    """``build(name)`` exported to ``path`` (one file): ``exporter`` "torchscript" (``dynamo=False``,
    opset 17) or "dynamo" (``dynamo=True``, its default opset); the batch dim is named either way."""
    torch = _import("torch")
    model, x = build(name), example_input(name)
    if exporter == "torchscript":
        torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["logits"], opset_version=17,
                          dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
    elif exporter == "dynamo":
        batch = torch.export.Dim("batch", min=1, max=1024)
        program = torch.onnx.export(model, (x,), input_names=["x"], output_names=["logits"],
                                    dynamic_shapes={"x": {0: batch}}, dynamo=True, verbose=False)
        program.save(str(path), external_data=False)
    else:
        raise ValueError(f"exporter={exporter!r}: expected 'torchscript' or 'dynamo'")


def cached_export(name: str, exporter: str, folder=None):
    """The path of ``export(name, ..., exporter)``'s file in ``folder`` (default: ``polyeng`` under
    the user's cache folder), exported once per source of this module and torch/onnx versions
    (``export_cache.cached_export``)."""
    from .export_cache import cached_export as cached
    return cached(__name__, name, exporter, export, folder)


def _import(module: str):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"the vision models need {module}: pip install torch") from None


@functools.cache
def _constructors() -> dict:
    torch = _import("torch")
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (x if self.downsample is None else self.downsample(x)))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            self.layers = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2))
            self.fc = nn.Linear(32, CLASSES)

        def forward(self, x):
            y = nn.functional.adaptive_avg_pool2d(self.layers(self.stem(x)), 1)
            return self.fc(torch.flatten(y, 1))

    class Fire(nn.Module):
        def __init__(self, cin, squeeze, expand):
            super().__init__()
            self.squeeze = nn.Conv2d(cin, squeeze, 1)
            self.expand1x1 = nn.Conv2d(squeeze, expand, 1)
            self.expand3x3 = nn.Conv2d(squeeze, expand, 3, padding=1)

        def forward(self, x):
            x = torch.relu(self.squeeze(x))
            return torch.cat([torch.relu(self.expand1x1(x)), torch.relu(self.expand3x3(x))], 1)

    class SqueezeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
                Fire(16, 4, 8), Fire(16, 4, 8), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(16, 8, 16))
            self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(32, CLASSES, 1), nn.ReLU(),
                                            nn.AdaptiveAvgPool2d(1))

        def forward(self, x):
            return torch.flatten(self.classifier(self.features(x)), 1)

    def conv_bn(cin, cout, k, stride=1, groups=1, act=None):
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, *([act()] if act else []))

    class SqueezeExcite(nn.Module):
        def __init__(self, channels, squeezed, gate, act=nn.ReLU):
            super().__init__()
            self.reduce = nn.Conv2d(channels, squeezed, 1)
            self.act = act()
            self.expand = nn.Conv2d(squeezed, channels, 1)
            self.gate = gate()

        def forward(self, x):
            s = self.act(self.reduce(x.mean((2, 3), keepdim=True)))
            return x * self.gate(self.expand(s))

    class InvertedResidual(nn.Module):
        """MobileNetV3's and EfficientNet's block: expand 1x1, depthwise kxk, squeeze-excite, project 1x1."""

        def __init__(self, cin, mid, cout, k, stride, act, se_gate, se_act=nn.ReLU):
            super().__init__()
            self.expand = conv_bn(cin, mid, 1, act=act) if mid != cin else nn.Identity()
            self.depthwise = conv_bn(mid, mid, k, stride, groups=mid, act=act)
            self.se = SqueezeExcite(mid, max(8, mid // 4), se_gate, se_act) if se_gate else nn.Identity()
            self.project = conv_bn(mid, cout, 1)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.project(self.se(self.depthwise(self.expand(x))))
            return x + y if self.residual else y

    class MobileNetV3(nn.Module):
        def __init__(self):
            super().__init__()
            hs, re = nn.Hardswish, nn.ReLU
            self.stem = conv_bn(3, 16, 3, 2, act=hs)
            self.blocks = nn.Sequential(
                InvertedResidual(16, 16, 16, 3, 2, re, nn.Hardsigmoid),
                InvertedResidual(16, 72, 24, 3, 2, re, None),
                InvertedResidual(24, 88, 24, 3, 1, re, None),
                InvertedResidual(24, 96, 40, 5, 2, hs, nn.Hardsigmoid),
                InvertedResidual(40, 240, 40, 5, 1, hs, nn.Hardsigmoid))
            self.head = conv_bn(40, 144, 1, act=hs)
            self.classifier = nn.Sequential(nn.Linear(144, 256), nn.Hardswish(), nn.Dropout(0.2),
                                            nn.Linear(256, CLASSES))

        def forward(self, x):
            y = self.head(self.blocks(self.stem(x))).mean((2, 3))
            return self.classifier(y)

    class EfficientNet(nn.Module):
        def __init__(self):
            super().__init__()
            silu = nn.SiLU
            self.stem = conv_bn(3, 16, 3, 2, act=silu)
            self.blocks = nn.Sequential(
                InvertedResidual(16, 16, 8, 3, 1, silu, nn.Sigmoid, silu),
                InvertedResidual(8, 48, 16, 3, 2, silu, nn.Sigmoid, silu),
                InvertedResidual(16, 96, 16, 3, 1, silu, nn.Sigmoid, silu),
                InvertedResidual(16, 96, 24, 5, 2, silu, nn.Sigmoid, silu),
                InvertedResidual(24, 144, 24, 5, 1, silu, nn.Sigmoid, silu))
            self.head = conv_bn(24, 128, 1, act=silu)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(128, CLASSES))

        def forward(self, x):
            return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(
                self.head(self.blocks(self.stem(x))), 1), 1))

    class Attention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads, self.scale = heads, (dim // heads) ** -0.5
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            attention = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
            return self.proj((attention @ v).transpose(1, 2).reshape(b, n, c))

    class EncoderBlock(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.norm1, self.attn = nn.LayerNorm(dim, eps=1e-6), Attention(dim, heads)
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self, size=32, patch=8, dim=32, heads=2, depth=2):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, dim, patch, patch)
            self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            self.pos_embed = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, dim) * 0.02)
            self.blocks = nn.Sequential(*[EncoderBlock(dim, heads) for _ in range(depth)])
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, CLASSES)

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
            return self.head(self.norm(self.blocks(x))[:, 0])

    return {"resnet": ResNet, "squeezenet": SqueezeNet, "mobilenetv3": MobileNetV3, "efficientnet": EfficientNet,
            "vit": ViT}
