"""Edge cases of the public surface: dtype names, numpy error settings, scalars, reuse of scopes."""
import asyncio
import logging

import ml_dtypes
import numpy as np
import pytest

import polyeng


def test_dtype_names_are_the_scalar_types():
    assert polyeng.bfloat16 is ml_dtypes.bfloat16
    assert polyeng.float32 is np.float32 and polyeng.bool_ is np.bool_
    assert polyeng.float16(1.5) == 1.5
    assert np.ones(2, polyeng.bfloat16).dtype == polyeng.bfloat16


def test_numpy_error_settings_do_not_turn_ieee_results_into_failures():
    with np.errstate(all="raise"):
        out = polyeng.layer_norm(np.array([[np.inf, 1, 2]], np.float32), 3)
        assert np.isnan(out).all()
        out = polyeng.gelu(np.array([-1e20, 1e20], np.float32), approximate="tanh")
        assert out.tolist() == [-0.0, float(np.float32(1e20))]


def test_results_are_arrays_in_the_storage_dtype():
    out = polyeng.matmul(np.ones(2, np.float16), np.ones(2, np.float16))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.float16 and out == 2
    out = polyeng.gelu(np.float32(1.0))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.float32
    assert polyeng.permute_contiguous(np.float16(1), ()).shape == ()


def test_select_python_scalars_promote_weakly():
    m = np.array([True, False])
    assert polyeng.select(m, np.ones(2, np.float32), 0.0).dtype == np.float32
    assert polyeng.select(m, np.ones(2, np.int8), 1).dtype == np.int8
    assert polyeng.select(m, 0, np.ones(2, np.float16)).dtype == np.float16
    masked = polyeng.select(m, np.ones(2, polyeng.bfloat16), -1e9)
    assert masked.dtype == polyeng.bfloat16 and float(masked[1]) < -9e8
    assert polyeng.select(m, np.ones(2, np.int8), 0.5).dtype == np.float64
    with pytest.raises(ValueError, match="else_=1000 does not fit"):
        polyeng.select(m, np.ones(2, np.int8), 1000)


def test_one_scope_object_reused_by_concurrent_tasks():
    scope = polyeng.compute_eng("basic")
    mode = polyeng.fp_math_mode("bf16")

    async def task(delay):
        with scope, mode:
            await asyncio.sleep(delay)
            return polyeng.get_compute_eng(), polyeng.get_fp_math_mode().value

    async def main():
        return await asyncio.gather(task(0.02), task(0.01))

    assert asyncio.run(main()) == [("basic", "bf16")] * 2
    assert polyeng.get_compute_eng() == "recommend"


def test_engine_enum_lookup_is_case_insensitive():
    assert polyeng.Engine("NUMBA") is polyeng.Engine.NUMBA
    with polyeng.compute_eng(" OpenCL "):
        assert polyeng.get_compute_eng() == "opencl"


def test_registering_a_duplicate_engine_is_an_error():
    class Twice:
        @polyeng.hookimpl
        def polyeng_register(self, registry):
            registry.add_engine("twice")
    first, second = Twice(), Twice()
    polyeng.register_backend(first)
    try:
        with pytest.raises(ValueError, match="engine 'twice' is already registered"):
            polyeng.register_backend(second)
        assert [e.name for e in polyeng.engines()].count("twice") == 1
        assert not any(e.name.startswith("Twice") for e in polyeng.engines())
    finally:
        polyeng.unregister_backend(first)


def test_cast_edge_cases():
    with pytest.raises(TypeError, match="dtype=None"):
        polyeng.cast(np.ones(2), None)
    # int -> bf16 rounds once (ml_dtypes alone rounds int -> f32 -> bf16)
    out = polyeng.cast(np.array([2 ** 24 + 2 ** 16 + 1], np.int32), "bf16")
    assert float(out[0]) == 2 ** 24 + 2 ** 17


def test_messages_name_the_op_and_inputs_are_normalised():
    with pytest.raises(TypeError, match="log_softmax expects a floating-point array"):
        polyeng.log_softmax(np.ones(3, np.int32))
    with pytest.raises(TypeError, match="eps='a'"):
        polyeng.layer_norm(np.ones((2, 3)), 3, eps="a")
    np.testing.assert_allclose(polyeng.softmax(np.ones(3, ">f4")), 1 / 3, rtol=1e-6)
    assert polyeng.permute_contiguous(np.ones((2, 3)), np.array([1, 0])).shape == (3, 2)
    out = polyeng.layer_norm(np.ones((2, 3), np.float32), np.array([3]), [1.0, 1.0, 1.0], [0, 0, 0])
    assert out.dtype == np.float32
    assert polyeng.linear(np.ones((1, 2), np.float16), [[1.0, 1.0]]).dtype == np.float16


def test_verbose_respects_an_application_logger_level(caplog):
    logger = logging.getLogger("polyeng")
    logger.setLevel(logging.WARNING)
    try:
        with caplog.at_level(logging.INFO), polyeng.verbose(1):
            polyeng.softmax(np.ones(3))
        assert caplog.messages == [] and logger.level == logging.WARNING
    finally:
        logger.setLevel(logging.NOTSET)
