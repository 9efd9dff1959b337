"""Recommendation rules (step 4 of the selection): the engine each op prefers for a call.

NUMBA's kernels run on the calling thread below a 256 KB output (``backends/numba/_runtime.py``),
so a small call on either engine is one thread's work, on a busy machine as on an idle one;
each op prefers NUMBA from the size on which its kernel beats numpy and BASIC below it. The
thresholds are where NUMBA overtook BASIC in ``benchmarks/crossover.py`` (table in
docs/performance.md); the size is the number of elements of all array arguments. After the
recommendation, every op tries NUMBA, then BASIC (``PREFERENCE``).
"""
from __future__ import annotations

import math

import numpy as np

JIT, REFERENCE = "numba", "basic"
PREFERENCE = (JIT,)


def elements(call) -> int:
    return sum(math.prod(t.shape) for t in call.tensors().values())


def jit_from(min_elements: int):
    """Recommend NUMBA for calls of at least ``min_elements`` elements, else BASIC."""
    def recommend(call):
        return JIT if elements(call) >= min_elements else REFERENCE
    recommend.min_elements = min_elements
    recommend.__doc__ = f"numba from {min_elements} elements, basic below"
    return recommend


def reference(call):
    """BASIC: the NUMBA kernel runs the same numpy BLAS call, so nothing is gained."""
    return REFERENCE


ONEDNN = "onednn"
THREADED_MIN_SIDE = 64   # an f32 product goes to ONEDNN for OpenBLAS's threads only from this many rows and columns
PRODUCT_MIN = 1 << 20   # multiply-adds below which a oneDNN product gains nothing on numba's


def _native_down_conversion(call) -> bool:
    """f32 work that the fp math mode lets run in a type this CPU multiplies natively (bf16, f16)."""
    from ..backends.onednn._fpmath import native_types   # reads /proc/cpuinfo once; loads no library
    return call.allowed_compute[0] in native_types()


def _product(call):
    """(rows, multiply-adds, constant right operand) of a matmul or linear call."""
    from ..backends._constant import constant
    args = call.args
    left, right = (args["x"], args["weight"]) if call.op == "linear" else (args["a"], args["b"])
    rows = math.prod(left.shape[:-1]) if left.ndim > 1 else 1
    return rows, math.prod(call.prepared.shape) * (left.shape[-1] if left.ndim else 1), constant(right)


def products(call):
    """matmul and linear: ONEDNN where it computes what BLAS cannot (measured in
    benchmarks/crossover.py): 16-bit storage from a million multiply-adds, and f32 under a bf16/f16
    mode the CPU computes natively when the right operand is constant (its conversion is made
    once) or the left has 512 rows or more (the conversion is repaid). ONEDNN too, where it takes
    the call, for an f32 product large enough that OpenBLAS would run it on its threads
    (``_blas_threads.SMALL_WORK`` multiply-adds): OpenBLAS's workers spin for about 0.1 s after
    each such product and take a core from whatever runs next (the LSTM LM's lstm on NUMBA's
    threads after its 512x128 by 128x1000 head: 0.81 ms after a oneDNN head, 1.51 ms after
    OpenBLAS's), where oneDNN's OpenMP workers sleep. Else BASIC, whose BLAS product NUMBA runs too."""
    storage = call.storage_dtype
    if storage is not None and str(storage) in ("bfloat16", "float16"):
        rows, work, _ = _product(call)
        return ONEDNN if work >= PRODUCT_MIN else REFERENCE
    if _native_down_conversion(call):
        rows, work, fixed = _product(call)
        if work >= PRODUCT_MIN and (fixed or rows >= 512):
            return ONEDNN
    if _threaded_f32_product(call) and _onednn_accepts(call):
        return ONEDNN
    return REFERENCE


def _threaded_f32_product(call) -> bool:
    """An f32 product of host matrices (at least ``THREADED_MIN_SIDE`` rows and columns of output)
    that OpenBLAS would run on its threads: ``SMALL_WORK`` multiply-adds or more in one product
    (a batched matmul's items each; a batch of smaller items may still run on OpenBLAS's threads,
    each item split, and stays with BLAS). Vector-shaped products stay with BLAS, 1.3-5x faster
    there (a batch-1 linear of 1x4096 by 4096x2048: 2.9 against 3.9-5.1 ms)."""
    from ..backends._blas_threads import SMALL_WORK
    args = call.args
    left, right = (args["x"], args["weight"]) if call.op == "linear" else (args["a"], args["b"])
    if np.dtype(call.prepared.dtype) != np.float32 or not all(isinstance(a, np.ndarray) for a in (left, right)) \
            or left.ndim < 2 or right.ndim < 2:
        return False
    if call.op == "linear":
        rows, columns, inner = math.prod(left.shape[:-1]), right.shape[0], left.shape[-1]
    else:
        rows, columns, inner = left.shape[-2], right.shape[-1], left.shape[-1]
    return min(rows, columns) >= THREADED_MIN_SIDE and rows * columns * inner >= SMALL_WORK


def _onednn_accepts(call) -> bool:
    """Whether ONEDNN is available and its kernel takes this call (asked once per call signature:
    plans are cached)."""
    from ..engine.plugins import registry
    reg = registry()
    record = reg.engines.get(ONEDNN)
    if record is None or not record.status()[0]:
        return False
    kernel = reg.kernel(call.op, ONEDNN)
    return kernel is not None and kernel.rejection(call) is None


def onednn_if(condition, otherwise):
    """ONEDNN for the calls ``condition(call)`` holds for and its kernel takes, else ``otherwise(call)``."""
    def recommend(call):
        return ONEDNN if condition(call) and _onednn_accepts(call) else otherwise(call)
    recommend.__doc__ = f"onednn where it runs the call and {condition.__doc__}; else {otherwise.__doc__}"
    recommend.onednn = condition   # where ONEDNN is preferred
    if hasattr(otherwise, "min_elements"):
        recommend.min_elements = otherwise.min_elements   # NUMBA's threshold when ONEDNN is not
    return recommend


def below(max_elements: int):
    def condition(call):
        return elements(call) < max_elements
    condition.__doc__ = f"below {max_elements} elements"
    return condition


def output_below(max_elements: int):
    def condition(call):
        return math.prod(call.prepared.shape) < max_elements
    condition.__doc__ = f"its output below {max_elements} elements"
    return condition


def _f32_conv_rule(engine: str, applies, doc: str, otherwise):
    """``engine`` for the f32 convolutions whose prepared call ``applies`` holds for, unless the fp
    math mode lets the CPU compute in bf16 (ONEDNN's native bf16 convolutions win there); else
    ``otherwise(call)``."""
    def recommend(call):
        p = call.prepared
        if np.dtype(p.dtype) == np.float32 and applies(p) and not _native_down_conversion(call):
            return engine
        return otherwise(call)
    recommend.__doc__ = f"{doc}; else {otherwise.__doc__}"
    for attr in ("onednn", "min_elements"):
        if hasattr(otherwise, attr):
            setattr(recommend, attr, getattr(otherwise, attr))
    return recommend


def pointwise_on_blas(otherwise):
    """BASIC for an f32 pointwise convolution (its BLAS product per group: 1.3-3x oneDNN's gemm
    convolution on MobileNetV3's 1x1 layers at batch 8, and NUMBA makes the same BLAS call), unless
    the storage is 16-bit or the fp math mode lets the CPU compute in bf16; else ``otherwise``."""
    return _f32_conv_rule(REFERENCE, lambda p: getattr(p, "algorithm", None) == "pointwise",
                          "basic for an f32 pointwise convolution", otherwise)


CHUNKS_MIN_OUTPUT = 1 << 17   # output elements from which NUMBA's Winograd chunks run on two threads


def winograd_chunks_on_jit(otherwise):
    """NUMBA for an f32 Winograd convolution of at least ``CHUNKS_MIN_OUTPUT`` output elements that
    NUMBA runs in chunks (``backends/numba/_winograd_chunks.py``: numpy's BLAS is OpenBLAS and an
    image has enough tiles), unless the fp math mode lets the CPU compute in bf16; else
    ``otherwise``, which prefers ONEDNN below 2^18 output elements. Measured against ONEDNN on 2
    threads, two runs: 64 channels at 56x56 1.02-1.30 against 1.37-1.49 ms; 16 at 32x32, batch 8,
    0.39-0.53 against 0.52-0.65 ms. Smaller outputs, which NUMBA runs on one thread, were within
    the noise of ONEDNN (32 channels at 32x32: 0.28-0.40 against 0.31-0.40 ms)."""
    def applies(p):
        return getattr(p, "algorithm", None) == "winograd" and math.prod(p.shape) >= CHUNKS_MIN_OUTPUT \
            and _chunks_run(p.geometry)
    return _f32_conv_rule(JIT, applies, "numba for an f32 Winograd convolution in chunks", otherwise)


def _chunks_run(geometry) -> bool:
    """Whether NUMBA would run this f32 Winograd call in chunks (``_winograd_chunks.available``,
    asked once NUMBA is available, which imports numba: the call runs there next). The cheap
    conditions come first, so that a call that takes ``otherwise`` does not import numba."""
    from ..backends import _conv_winograd
    from ..backends._blas_threads import blas_info
    from ..engine.plugins import registry
    if _conv_winograd.chunk_rows(geometry, 4) <= 0:
        return False
    info = blas_info()
    if info is None or info.get("library") != "openblas":
        return False
    record = registry().engines.get(JIT)
    if record is None or not record.status()[0]:
        return False
    from ..backends.numba import _winograd_chunks
    return _winograd_chunks.available(geometry, np.float32)


def between(min_elements: int, max_elements: int):
    def condition(call):
        return min_elements <= elements(call) < max_elements
    condition.__doc__ = f"from {min_elements} to below {max_elements} elements"
    return condition


def always(call):
    """at every size"""
    return True


def at_least(min_elements: int):
    def condition(call):
        return elements(call) >= min_elements
    condition.__doc__ = f"from {min_elements} elements"
    return condition


def at_least_by_vendor(thresholds: dict, otherwise: int | None):
    """From ``thresholds[vendor]`` elements on a CPU of that vendor (``/proc/cpuinfo``'s
    vendor_id), from ``otherwise`` elements on any other (None: never): where a crossover was
    measured on one maker's CPU and differs on another's, or was measured on one maker's only."""
    def condition(call):
        from ..backends.onednn._fpmath import cpu_vendor   # reads /proc/cpuinfo once; loads no library
        threshold = thresholds.get(cpu_vendor(), otherwise)
        return threshold is not None and elements(call) >= threshold
    condition.__doc__ = "from " + ", ".join(f"{n} elements on {v}" for v, n in thresholds.items()) + \
        (f", {otherwise} elsewhere" if otherwise is not None else ", never elsewhere")
    return condition
