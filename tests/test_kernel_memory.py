"""Memory: what a call allocates beyond its output stays a small fraction of it, on BASIC and
every engine under test (see conftest), and an output no machine could hold is a ValueError
at validation, naming the argument, before any engine tries to allocate it.

Peaks are measured with tracemalloc, which numpy reports its allocations to. A call on half
the input (the same kernels, compiled then) runs first; the measured call has a signature of
its own, so its prepared facts (built once per signature, then cached) are made inside the
measurement.
"""
import sys
import tracemalloc
import warnings

import numpy as np
import pytest

import polyeng
from polyeng.engine import dtypes as dt
from polyeng.ops import _memory

SHARE = 0.25   # the most a call may allocate beyond its output, as a fraction of it


def run(engine, op, *args, **kwargs):
    with polyeng.compute_eng(engine, fallback=False):
        return getattr(polyeng, op)(*args, **kwargs)


def extra_bytes(engine, op, x, warm, *args, **kwargs) -> tuple:
    """(peak bytes allocated beyond the output, output bytes) of a call on ``x``, after one on ``warm``."""
    run(engine, op, warm, *args, **kwargs)
    tracemalloc.start()
    try:
        out = run(engine, op, x, *args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - out.nbytes, out.nbytes


# (input shape, resize): outputs of 20-50 MB of bytes, where a table per output position
# (or per output row) would cost several times the output
UPSAMPLES = {
    "1d-x2": ((1, 2, 10_000_001), {"scale_factor": 2}),
    "1d-x2.5": ((1, 2, 8_000_001), {"scale_factor": 2.5}),
    "2d-x2": ((2, 3, 1024, 1025), {"scale_factor": 2}),
    "2d-odd": ((2, 3, 1023, 1024), {"scale_factor": (1.9, 2.1)}),
    "2d-tall": ((1, 2, 5_000_003, 1), {"scale_factor": (2, 1)}),
    "3d": ((1, 4, 64, 128, 129), {"scale_factor": (1.5, 2, 2)}),
}


def assert_upsample_memory(engine, case):
    shape, resize = UPSAMPLES[case]
    x = np.zeros(shape, np.uint8)
    extra, nbytes = extra_bytes(engine, "upsample_nearest", x, x[:, :1], **resize)
    assert nbytes >= 20e6
    assert extra < SHARE * nbytes, f"{extra / 1e6:.1f} MB beyond an output of {nbytes / 1e6:.1f} MB"


@pytest.mark.parametrize("case", UPSAMPLES)
def test_upsample_nearest_allocates_little_beyond_its_output_on_basic(case):
    assert_upsample_memory("basic", case)


@pytest.mark.uses_ops("upsample_nearest")
@pytest.mark.parametrize("case", UPSAMPLES)
def test_upsample_nearest_allocates_little_beyond_its_output(engine, case):
    assert_upsample_memory(engine, case)


# integer (and f64) inputs to 16-bit floats: no widened copy of the whole input
CASTS = [(dt.uint8, dt.float16), (dt.int8, dt.bfloat16), (dt.int32, dt.float16), (dt.int32, dt.bfloat16),
         (dt.bool_, dt.bfloat16), (dt.int64, dt.bfloat16), (dt.float64, dt.bfloat16), (dt.uint8, dt.float32)]


def assert_cast_memory(engine, source, target):
    x = np.ones(10_000_019, source)
    extra, nbytes = extra_bytes(engine, "cast", x, x[:5_000_000], target)
    assert extra < SHARE * nbytes, f"{extra / 1e6:.1f} MB beyond an output of {nbytes / 1e6:.1f} MB"


@pytest.mark.parametrize("source, target", CASTS, ids=lambda d: dt.short_name(d))
def test_cast_allocates_little_beyond_its_output_on_basic(source, target):
    assert_cast_memory("basic", source, target)


@pytest.mark.uses_ops("cast")
@pytest.mark.parametrize("source, target", CASTS, ids=lambda d: dt.short_name(d))
def test_cast_allocates_little_beyond_its_output(engine, source, target):
    assert_cast_memory(engine, source, target)


# --- outputs no machine could hold -----------------------------------------------------------

def placeholder(shape, dtype=np.float64):
    """An array of ``shape`` without its memory: validation reads shapes and dtypes only."""
    return np.broadcast_to(np.zeros((), dtype), shape)


# outputs of tens of terabytes or more, from small inputs or placeholders; no dim is so long
# that a table along it (as kernels once built) could exhaust a machine's memory
TOO_LARGE = {
    "nearest-scale": ("upsample_nearest", (np.zeros((1, 2, 3, 4), np.float32),), {"scale_factor": 1e6},
                      r"scale_factor=1000000\.0 on x of shape \(1, 2, 3, 4\)"),
    "nearest-size": ("upsample_nearest", (np.zeros((1, 2, 3), np.uint8),), {"size": 10 ** 19},
                     r"size=10000000000000000000 on x"),
    "nearest-huge-scale": ("upsample_nearest", (np.zeros((1, 1, 3, 4), np.float32),), {"scale_factor": 1e300},
                           r"scale_factor=1e\+300 on x of shape \(1, 1, 3, 4\)"),   # bytes past float's range
    "nearest-3d": ("upsample_nearest", (np.zeros((1, 1, 2, 2, 2), np.int64),), {"scale_factor": (1e5, 1e5, 1e5)},
                   r"scale_factor=\(100000\.0, 100000\.0, 100000\.0\)"),
    "bilinear": ("upsample_bilinear2d", (np.zeros((1, 2, 3, 4), np.float32),), {"size": (10 ** 6, 10 ** 7)},
                 r"size=\(1000000, 10000000\) on x"),
    "matmul": ("matmul", (placeholder((10 ** 8, 1)), placeholder((1, 10 ** 8))), {},
               r"a \(100000000, 1\) and b \(1, 100000000\)"),
    "matmul-batch": ("matmul", (placeholder((10 ** 5, 1, 1, 1), np.float32),
                                placeholder((1, 10 ** 5, 1, 10 ** 5), np.float32)),
                     {}, r"a \(100000, 1, 1, 1\) and b \(1, 100000, 1, 100000\)"),
    "linear": ("linear", (placeholder((10 ** 8, 1)), placeholder((10 ** 8, 1))), {},
               r"x \(100000000, 1\) and weight \(100000000, 1\)"),
    "select": ("select", (np.ones((1,), bool), placeholder((10 ** 8, 1)), placeholder((1, 10 ** 8))), {},
               r"then \(100000000, 1\) and else_ \(1, 100000000\)"),
}


@pytest.mark.parametrize("case", TOO_LARGE)
def test_an_output_too_large_to_allocate_is_a_value_error(case):
    op, args, kwargs, given = TOO_LARGE[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no engine tried it (no FallbackWarning)
        with pytest.raises(ValueError, match=given + r".* bytes .*more than this machine could allocate"):
            getattr(polyeng, op)(*args, **kwargs)
        with pytest.raises(ValueError, match=given):
            polyeng.explain(op, *args, **kwargs)


@pytest.mark.uses_ops("upsample_nearest", "matmul")
def test_the_check_comes_before_any_engine(engine):
    # a pinned engine gives the same ValueError, not an EngineError from a failed kernel
    for case in ("nearest-scale", "matmul"):
        op, args, kwargs, given = TOO_LARGE[case]
        with pytest.raises(ValueError, match=given):
            run(engine, op, *args, **kwargs)


def test_the_limit_is_the_machines_memory(monkeypatch):
    x = np.zeros((1, 1, 10), np.uint8)
    monkeypatch.setattr(_memory, "physical_memory", lambda: 1000)
    assert polyeng.upsample_nearest(x, size=1000).nbytes == 1000   # exactly the limit: allowed
    with pytest.raises(ValueError, match=r"size=1001 on x of shape \(1, 1, 10\).*1001 bytes"):
        polyeng.upsample_nearest(x, size=1001)
    assert polyeng.matmul(np.ones((1, 2, 3), np.int8), np.ones((3, 500), np.int8)).nbytes == 1000
    with pytest.raises(ValueError, match=r"a \(1, 2, 3\) and b \(3, 501\).*1002 bytes"):
        polyeng.matmul(np.ones((1, 2, 3), np.int8), np.ones((3, 501), np.int8))


@pytest.mark.parametrize("error", [AttributeError, ValueError, OSError])
def test_without_sysconf_the_limit_is_what_int64_counts(monkeypatch, error):
    def sysconf(name):
        raise error(name)
    monkeypatch.setattr(_memory.os, "sysconf", sysconf)
    assert _memory.physical_memory() == sys.maxsize
    _memory.check_output_size((10 ** 9, 10 ** 9), np.float64, "matmul", "a")   # 8e18 bytes: counted
    with pytest.raises(ValueError, match=r"^a: matmul's output .* 16000000000000000000 bytes"):
        _memory.check_output_size((2 * 10 ** 9, 10 ** 9), np.float64, "matmul", "a")


def test_physical_memory_is_what_the_os_reports():
    os = _memory.os
    if not hasattr(os, "sysconf"):
        pytest.skip("no sysconf here")
    assert _memory.physical_memory() == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


# --- the paths that keep memory small give the same results ---------------------------------------

def whole_dim_takes(x, **resize):
    """upsample_nearest as one take per dim over its whole table: the plain reference."""
    from polyeng.ops import upsample as ops
    args = ops._validate_nearest(x, resize.get("size"), resize.get("scale_factor"))
    for axis, rule in enumerate(ops.nearest_axes(args), 2):
        x = np.take(x, rule.sources(np.arange(rule.out_size)), axis=axis)
    return np.ascontiguousarray(x)


PATHS = {   # input, resize: BASIC's blocks of rows, of one row in column spans, non-contiguous input;
    # NUMBA's W positions from a table (many rows) and computed (few long rows)
    "rows": (np.arange(2 * 3 * 40 * 50).reshape(2, 3, 40, 50), {"size": (97, 33)}),
    "long-rows": (np.arange(2 * 3 * 700, dtype=np.uint8).reshape(2, 3, 700), {"scale_factor": 2.7}),
    "transposed": (np.arange(2 * 3 * 50 * 40, dtype=np.float32).reshape(2, 3, 50, 40).transpose(0, 1, 3, 2),
                   {"scale_factor": (1.3, 0.6)}),
    "reversed-3d": (np.arange(2 * 2 * 5 * 6 * 7, dtype=np.int64).reshape(2, 2, 5, 6, 7)[..., ::-1],
                    {"scale_factor": (1.5, 2, 1.2)}),
    "tall": (np.arange(2 * 3000, dtype=np.int32).reshape(1, 2, 3000, 1), {"scale_factor": (2.5, 3)}),
    "shortcuts": (np.arange(4 * 30 * 30, dtype=np.float64).reshape(2, 2, 30, 30), {"size": (30, 60)}),
}


@pytest.mark.parametrize("block", [256, 4096])
@pytest.mark.parametrize("case", PATHS)
def test_basic_blocks_match_whole_dim_takes(case, block, monkeypatch):
    from polyeng.backends.basic import upsample as kernels
    monkeypatch.setattr(kernels, "_BLOCK_BYTES", block)   # many blocks, long rows in column spans
    x, resize = PATHS[case]
    expected = whole_dim_takes(x, **resize)
    actual = run("basic", "upsample_nearest", x, **resize)
    assert actual.shape == expected.shape and actual.tobytes() == expected.tobytes()


@pytest.mark.uses_ops("upsample_nearest")
@pytest.mark.parametrize("case", PATHS)
def test_nearest_paths_match_whole_dim_takes(engine, case):
    x, resize = PATHS[case]
    expected = whole_dim_takes(x, **resize)
    actual = run(engine, "upsample_nearest", x, **resize)
    assert actual.shape == expected.shape and actual.tobytes() == expected.tobytes()
