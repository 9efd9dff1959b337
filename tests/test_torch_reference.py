"""The BASIC reference checked against PyTorch's CPU functional ops, for the ops whose own test
files check known values only (pooling, upsampling, lstm and matmul have their torch checks beside
their known values). The other engines are checked against BASIC elsewhere."""
from __future__ import annotations

import numpy as np
import pytest

import polyeng

torch = pytest.importorskip("torch")
F = torch.nn.functional

RNG = np.random.default_rng(2026)
SHAPES = [(7,), (3, 5), (2, 3, 17), (2, 4, 3, 9), (1, 1)]


def _tol(dtype):
    return {np.float32: 2e-6, np.float64: 1e-13}[dtype]


def _data(shape, dtype, scale=3.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_and_log_softmax(shape, dtype):
    x = _data(shape, dtype)
    for axis in range(-len(shape), len(shape)):
        t = torch.from_numpy(x)
        np.testing.assert_allclose(polyeng.softmax(x, axis=axis), F.softmax(t, dim=axis).numpy(),
                                   rtol=_tol(dtype) * 4, atol=_tol(dtype))
        np.testing.assert_allclose(polyeng.log_softmax(x, axis=axis), F.log_softmax(t, dim=axis).numpy(),
                                   rtol=_tol(dtype) * 4, atol=_tol(dtype) * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, normalized", [((4, 10), (10,)), ((2, 3, 8), (3, 8)), ((5, 1), (1,)),
                                               ((2, 3, 4, 5), (5,))])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(shape, normalized, affine, dtype):
    x = _data(shape, dtype) + 100.0   # an offset: a one-pass variance would lose digits
    weight = _data(normalized, dtype, 1.0) if affine else None
    bias = _data(normalized, dtype, 1.0) if affine else None
    want = F.layer_norm(torch.from_numpy(x), normalized,
                        None if weight is None else torch.from_numpy(weight),
                        None if bias is None else torch.from_numpy(bias), eps=1e-5).numpy()
    got = polyeng.layer_norm(x, normalized, weight, bias, eps=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-10,
                               atol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate, dtype):
    x = np.concatenate([_data((1000,), dtype), np.array([0.0, -0.0, 1e-30, -40, 40, -np.inf], dtype)])
    want = F.gelu(torch.from_numpy(x), approximate=approximate).numpy()
    np.testing.assert_allclose(polyeng.gelu(x, approximate=approximate), want,
                               rtol=_tol(dtype) * 4, atol=_tol(dtype))
    # torch's vectorized f32 erf path gives nan at +inf; the limit x * Phi(x) -> inf is what polyeng returns
    assert polyeng.gelu(np.array([np.inf], dtype), approximate=approximate)[0] == np.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_concat_permute_select_matmul_linear(dtype):
    a, b = _data((2, 3, 4), dtype), _data((2, 5, 4), dtype)
    np.testing.assert_array_equal(polyeng.concat([a, b], axis=1),
                                  torch.cat([torch.from_numpy(a), torch.from_numpy(b)], dim=1).numpy())
    x = _data((2, 3, 4, 5), dtype)
    np.testing.assert_array_equal(polyeng.permute_contiguous(x, (0, 2, 3, 1)),
                                  torch.from_numpy(x).permute(0, 2, 3, 1).contiguous().numpy())
    cond = RNG.integers(0, 2, (3, 1)).astype(bool)
    then, other = _data((3, 4), dtype), _data((1, 4), dtype)
    np.testing.assert_array_equal(polyeng.select(cond, then, other),
                                  torch.where(torch.from_numpy(cond), torch.from_numpy(then),
                                              torch.from_numpy(other)).numpy())
    m, n = _data((3, 4, 6), dtype), _data((6, 2), dtype)
    np.testing.assert_allclose(polyeng.matmul(m, n), torch.matmul(torch.from_numpy(m), torch.from_numpy(n)).numpy(),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5 if dtype == np.float32 else 1e-12)
    w, bias = _data((5, 6), dtype), _data((5,), dtype)
    np.testing.assert_allclose(polyeng.linear(m, w, bias),
                               F.linear(torch.from_numpy(m), torch.from_numpy(w), torch.from_numpy(bias)).numpy(),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("target", ["bfloat16", "float16"])
def test_cast_rounds_as_torch(target):
    bits = RNG.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x)]
    want = torch.from_numpy(x).to(getattr(torch, target))
    got = polyeng.cast(x, getattr(polyeng, target))
    # compare bit patterns: torch and polyeng both round to nearest even, overflow to inf
    want_bits = want.view(torch.int16).numpy()
    np.testing.assert_array_equal(got.view(np.int16), want_bits)
