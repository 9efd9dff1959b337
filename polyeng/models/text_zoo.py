"""Small text (and one image) transformer models of Hugging Face ``transformers``, and a GRU text
classifier, with random weights from small configs (nothing is downloaded), for the model tests
and ``polyeng bench --models``; exported to ONNX with either of PyTorch's exporters.

- ``bert``, ``distilbert``: encoders taking ``input_ids`` and an ``attention_mask`` with padding;
- ``gpt2``: a causal decoder with a padding mask as well (no key/value cache);
- ``t5encoder``: T5's encoder (RMSNorm, relative position buckets);
- ``hf_vit``: ``transformers``' ViTModel on 32x32 images (its fused QKV, class token);
- ``gru``: an embedding, a bidirectional two-layer ``torch.nn.GRU`` and a linear head.

Every model returns one output: ``last_hidden_state`` (``logits`` for ``gru``). torch and
transformers are imported on first use; polyeng depends on neither.
"""
from __future__ import annotations

import functools

NAMES = ("bert", "distilbert", "gpt2", "t5encoder", "hf_vit", "gru")
SEEDS = {name: i + 30 for i, name in enumerate(NAMES)}
VOCAB = 100
WIDTH = 32
IMAGE = 32
POSITIONS = 256   # the longest sequence (the benchmark runs 128)


def inputs_of(name: str) -> list:
    """The model's input names, in order."""
    _check(name)
    if name == "hf_vit":
        return ["pixel_values"]
    if name == "gru":
        return ["input_ids"]
    return ["input_ids", "attention_mask"]


def example_inputs(name: str, batch: int = 2, seq: int = 16) -> dict:
    """numpy inputs by name: token ids in [0, VOCAB), and an int64 attention mask whose odd rows
    are padded after ``seq // 2 + row`` tokens (images: standard normal pixels)."""
    import numpy as np
    _check(name)
    rng = np.random.default_rng(SEEDS[name] * 1000 + batch * 100 + seq)
    if name == "hf_vit":
        return {"pixel_values": rng.standard_normal((batch, 3, IMAGE, IMAGE)).astype(np.float32)}
    found = {"input_ids": rng.integers(0, VOCAB, (batch, seq), dtype=np.int64)}
    if name != "gru":
        mask = np.ones((batch, seq), dtype=np.int64)
        for row in range(1, batch, 2):
            mask[row, min(seq, seq // 2 + row):] = 0
        found["attention_mask"] = mask
    return found


def build(name: str):
    """The model ``name`` in eval mode, wrapped to take its inputs positionally and return one
    tensor, its weights from ``SEEDS[name]``."""
    _check(name)
    torch = _import("torch")
    torch.manual_seed(SEEDS[name])
    if name == "gru":
        return _define()[2]().eval()
    transformers = _import("transformers")
    common = {"hidden_size": WIDTH, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 2 * WIDTH}
    if name == "bert":
        config = transformers.BertConfig(vocab_size=VOCAB, max_position_embeddings=POSITIONS, **common)
        model = transformers.BertModel(config, add_pooling_layer=False)
    elif name == "distilbert":
        model = transformers.DistilBertModel(transformers.DistilBertConfig(
            vocab_size=VOCAB, dim=WIDTH, n_layers=2, n_heads=2, hidden_dim=2 * WIDTH, max_position_embeddings=POSITIONS))
    elif name == "gpt2":
        model = transformers.GPT2Model(transformers.GPT2Config(vocab_size=VOCAB, n_embd=WIDTH, n_layer=2, n_head=2,
                                                               n_positions=POSITIONS, use_cache=False))
    elif name == "t5encoder":
        model = transformers.T5EncoderModel(transformers.T5Config(vocab_size=VOCAB, d_model=WIDTH, d_kv=WIDTH // 2,
                                                                  d_ff=2 * WIDTH, num_layers=2, num_heads=2))
    else:
        model = transformers.ViTModel(transformers.ViTConfig(image_size=IMAGE, patch_size=8, **common),
                                      add_pooling_layer=False)
    return _define()[1 if name == "hf_vit" else 0](model).eval()


def export(name: str, path, exporter: str) -> None:
    """``build(name)`` exported to ``path`` (one file): ``exporter`` "torchscript" (``dynamo=False``,
    opset 17) or "dynamo" (``dynamo=True``, its default opset); batch and sequence dims named."""
    torch = _import("torch")
    model, names = build(name), inputs_of(name)
    args = tuple(torch.from_numpy(v) for v in example_inputs(name).values())
    output = "logits" if name == "gru" else "last_hidden_state"
    dims = {0: "batch"} if name == "hf_vit" else {0: "batch", 1: "sequence"}
    with torch.no_grad():   # T5 fails torch.export's decomposition when autograd is on
        if exporter == "torchscript":
            axes = {n: dims for n in names + [output]}
            if name == "gru":
                axes[output] = {0: "batch"}
            torch.onnx.export(model, args, str(path), input_names=names, output_names=[output], opset_version=17,
                              dynamic_axes=axes, dynamo=False)
        elif exporter == "dynamo":
            batch = torch.export.Dim("batch", min=1, max=1024)
            sequence = torch.export.Dim("sequence", min=2, max=POSITIONS)
            shapes = {n: ({0: batch} if name == "hf_vit" else {0: batch, 1: sequence}) for n in names}
            program = torch.onnx.export(model, args, input_names=names, output_names=[output],
                                        dynamic_shapes=shapes, dynamo=True, verbose=False)
            program.save(str(path), external_data=False)
        else:
            raise ValueError(f"exporter={exporter!r}: expected 'torchscript' or 'dynamo'")


def cached_export(name: str, exporter: str, folder=None):
    """The path of ``export(name, ..., exporter)``'s file in ``folder`` (default: ``polyeng`` under
    the user's cache folder), exported once per source of this module and torch/onnx/transformers
    versions (``export_cache.cached_export``)."""
    from .export_cache import cached_export as cached
    return cached(__name__, name, exporter, export, folder)


def _check(name: str) -> None:
    if name not in SEEDS:
        raise ValueError(f"model {name!r}: expected one of {', '.join(NAMES)}")


def _import(module: str):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"the text models need {module}: pip install torch transformers") from None


@functools.cache
def _define():
    """The wrapper modules, defined once torch is imported."""
    torch = _import("torch")
    nn = torch.nn

    class Hidden(nn.Module):   # the exporters name the inputs after forward's parameters
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    class ImageHidden(Hidden):
        def forward(self, pixel_values):
            return self.model(pixel_values=pixel_values).last_hidden_state

    class Gru(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, 16)
            self.gru = nn.GRU(16, 24, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(48, 4)

        def forward(self, input_ids):
            y, _ = self.gru(self.embedding(input_ids))
            return self.head(y[:, -1])
    return Hidden, ImageHidden, Gru

