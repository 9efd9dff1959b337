"""Transcendental functions for NUMBA kernels, resolved at compile time by argument type.

``exp``, ``tanh``, ``sigmoid`` and ``erf`` take an f32 or f64 value. f64 uses libm (f64 is
the accuracy path, not the speed path). f32 uses the ``*_f32`` functions below.
"""
from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable


@register_jitable(inline="always")
def exp_f32(x):
    return np.float32(math.exp(x))


@register_jitable(inline="always")
def tanh_f32(x):
    return np.float32(math.tanh(x))


@register_jitable(inline="always")
def sigmoid_f32(x):
    return np.float32(1.0 / (1.0 + math.exp(-x)))


@register_jitable(inline="always")
def erf_f32(x):
    return np.float32(math.erf(x))


def exp(x):
    """e**x"""


def tanh(x):
    """tanh(x)"""


def sigmoid(x):
    """1 / (1 + e**-x)"""


def erf(x):
    """the error function"""


def _generic(f32_impl, f64_impl):
    def typer(x):
        if x == types.float32:
            return lambda x: f32_impl(x)
        if x == types.float64:
            return lambda x: f64_impl(x)
    return typer


@register_jitable(inline="always")
def _sigmoid_f64(x):
    return 1.0 / (1.0 + math.exp(-x))


overload(exp, inline="always")(_generic(exp_f32, math.exp))
overload(tanh, inline="always")(_generic(tanh_f32, math.tanh))
overload(sigmoid, inline="always")(_generic(sigmoid_f32, _sigmoid_f64))
overload(erf, inline="always")(_generic(erf_f32, math.erf))
