"""add, sub, mul, div and pow in numpy. 16-bit operands arrive widened to f32 (the dispatcher
widens them) and the f32 result is rounded back once: correctly rounded for + - * /, as
numpy's own float16 loops are."""
import numpy as np


def add(p, a, b):
    return np.add(a, b)


def sub(p, a, b):
    return np.subtract(a, b)


def mul(p, a, b):
    return np.multiply(a, b)


def div(p, a, b):
    return np.true_divide(a, b)


def pow(p, x, exponent):   # noqa: A001
    return np.power(x, exponent)
