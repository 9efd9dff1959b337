"""gelu, relu, sigmoid, tanh, exp, sqrt, erf, hardswish, hardsigmoid, silu, leaky_relu, log and
reciprocal on OPENCL (activation.cl): a work item takes 16 elements (gelu) or as many runs of 16
as ``enqueue.runs_per_item`` gives the device; the function (and gelu's tanh form) is a build
option, so each is its own program; leaky_relu's slope is a kernel argument."""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue

_INTEGER = {np.dtype(np.int8): "char", np.dtype(np.uint8): "uchar", np.dtype(np.int32): "int",
           np.dtype(np.int64): "long"}


def gelu(p, x, approximate):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        options = enqueue.float_options(tx.dtype) + (("-DTANH_FORM=1",) if approximate == "tanh" else ())
        enqueue.run("activation.cl", "gelu", options, -(-tx.size // 16), tx.buffer, out.buffer,
                   np.uint64(tx.size), local=64)
    return enqueue.result(out, stay)


def _unary(name: str, x):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        kind = (f"-DITYPE={_INTEGER[tx.dtype]}",) if tx.dtype in _INTEGER else \
            enqueue.float_options(tx.dtype) + enqueue.exact_divide_sqrt()
        per = enqueue.runs_per_item(-(-tx.size // 16))
        enqueue.run("activation.cl", "unary", kind + (f"-DFN_{name.upper()}=1",), -(-tx.size // (16 * per)),
                    tx.buffer, out.buffer, np.uint64(tx.size), np.uint64(per), local=enqueue.group_items(per))
    return enqueue.result(out, stay)


def relu(p, x):
    return _unary("relu", x)


def sigmoid(p, x):
    return _unary("sigmoid", x)


def tanh(p, x):
    return _unary("tanh", x)


def exp(p, x):
    return _unary("exp", x)


def sqrt(p, x):
    return _unary("sqrt", x)


def erf(p, x):
    return _unary("erf", x)


def hardswish(p, x):
    return _unary("hardswish", x)


def hardsigmoid(p, x):
    return _unary("hardsigmoid", x)


def silu(p, x):
    return _unary("silu", x)


def log(p, x):
    return _unary("log", x)


def reciprocal(p, x):
    return _unary("reciprocal", x)


def leaky_relu(p, x, negative_slope):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(tx.shape, tx.dtype, not stay)
    if tx.size:
        per = enqueue.runs_per_item(-(-tx.size // 16))
        slope = enqueue.compute_dtype(tx.dtype).type(negative_slope)
        enqueue.run("activation.cl", "leaky_relu", enqueue.float_options(tx.dtype) + ("-DLEAKY_RELU=1",),
                    -(-tx.size // (16 * per)), tx.buffer, out.buffer, np.uint64(tx.size), np.uint64(per), slope,
                    local=enqueue.group_items(per))
    return enqueue.result(out, stay)
