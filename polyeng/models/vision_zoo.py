"""Small vision models of the common architectures, with random weights, for the model tests and
``polyeng bench --models``: built in PyTorch (timm's constructors where timm has a small one; the
torchvision wheel on CPU-only machines does not import beside the CPU torch, so the ResNet and
SqueezeNet blocks are written here, as torchvision writes them) and exported to ONNX with either
of PyTorch's exporters.

- ``resnet``: a stem (7x7 conv, batch norm, max pool) and two basic blocks, one downsampling;
- ``mobilenetv3``: timm's ``mobilenetv3_small_050`` (inverted residuals, squeeze-excite, hardswish);
- ``efficientnet``: timm's ``tinynet_e``, EfficientNet's MBConv blocks (SiLU, squeeze-excite);
- ``squeezenet``: SqueezeNet 1.1's stem, fire modules and classifier, narrower;
- ``vit``: timm's ViT (patch embedding, class token, two encoder blocks) at 32x32 pixels.

torch and timm are imported on first use; polyeng does not depend on them.
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
    the user's cache folder, ``XDG_CACHE_HOME`` or ``~/.cache``), exporting it when it is not there.
    The file name carries a digest of this module's source and of the torch, timm and onnx
    versions, so a changed builder or a new torch makes a new file; it is written under a
    temporary name and renamed, so processes side by side never read half a file."""
    import hashlib
    import importlib
    import inspect
    import os
    import pathlib
    import sys
    import tempfile
    if folder is None:
        folder = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "polyeng"
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    parts = [inspect.getsource(sys.modules[__name__])]
    for module in ("torch", "timm", "onnx"):
        try:
            parts.append(f"{module} {importlib.import_module(module).__version__}")
        except ImportError:
            parts.append(f"{module} missing")
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]
    path = folder / f"{name}-{exporter}-{digest}.onnx"
    if not path.exists():
        handle, temporary = tempfile.mkstemp(suffix=".onnx", dir=folder)
        os.close(handle)
        try:
            export(name, temporary, exporter)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return path


def _import(module: str):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"the vision models need {module}: pip install torch timm") from None


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

    def timm_model(name, **kwargs):
        return lambda: _import("timm").create_model(name, pretrained=False, num_classes=CLASSES, **kwargs)

    return {"resnet": ResNet, "squeezenet": SqueezeNet,
            "mobilenetv3": timm_model("mobilenetv3_small_050"),
            "efficientnet": timm_model("tinynet_e"),
            "vit": timm_model("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=2, embed_dim=32, num_heads=2)}
