"""Op calls for the dask tests: each case is (name, fn, arrays, chunks per array, exact).

``fn(*arrays)`` is called once with numpy arrays (the eager reference) and once with the arrays
as dask arrays of the given chunks, on one engine; ``exact`` cases must give the very same bits
on the BASIC engine (data movement, max pooling, everything computed block by block from whole
rows), the others (matmul summed over a chunked contraction axis) the same values up to f32
rounding of the summation order. ``linear`` is exact only where this BLAS gives a row of a
product the same bits whatever the number of rows in the call (``BLAS_ROWS_EXACT``): OpenBLAS's
Haswell kernels, which it runs on AVX2 CPUs, sum a call of 1, 4 or 8 rows in another order than
the rows of a larger call (1 ulp apart), and a block of the leading axes is such a call.
Chunks are chosen to cut the axes each op needs whole, so rechunking is exercised.
"""
import numpy as np

import polyeng

_rng = np.random.default_rng(7)


def _f(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _lstm_params(layers, directions, inputs, hidden):
    params = []
    for layer in range(layers):
        for _ in range(directions):
            width = inputs if layer == 0 else hidden * directions
            params.append([_f(4 * hidden, width), _f(4 * hidden, hidden), _f(4 * hidden), _f(4 * hidden)])
    return params


def _blas_rows_exact() -> bool:
    rng = np.random.default_rng(11)   # not _rng: the cases' arrays stay as they were
    x, w = (rng.standard_normal(shape).astype(np.float32) for shape in ((360, 10), (10, 10)))
    whole = x @ w.T
    return all(np.array_equal(np.concatenate([x[i:i + m] @ w.T for i in range(0, len(x), m)]), whole)
               for m in (1, 2, 3, 4, 5, 7, 8, 16, 24, 60))


BLAS_ROWS_EXACT = _blas_rows_exact()
X = _f(6, 5, 12, 10)
W = _f(10, 10)
V = _f(10)
IDS = _rng.integers(0, 40, (6, 9))
TABLE = _f(40, 16)
SEQ = _f(7, 6, 4)
PARAMS = _lstm_params(2, 2, 4, 3)
H0 = _f(4, 6, 3)
A3 = _f(4, 7, 30)
B2 = _f(30, 6)
GAMMA, BETA = _f(12, 10), _f(12, 10)
V5 = _f(2, 3, 8, 8, 6)

CASES = [
    # elementwise, broadcasting a numpy operand and a Python scalar
    ("add", lambda x: polyeng.add(x, V), [X], [(4, 2, 5, 3)], True),
    ("sub_scalar", lambda x: polyeng.sub(x, 1.5), [X], [(4, 2, 5, 3)], True),
    ("mul_two_dask", polyeng.mul, [X, X[:1, :, :1]], [(4, 2, 5, 3), (1, 3, 1, 5)], True),
    ("div", lambda x: polyeng.div(x, V + 3), [X], [(2, 5, 12, 4)], True),
    ("pow", lambda x: polyeng.pow(x, 2.0), [X], [(4, 2, 5, 3)], True),
    ("relu", polyeng.relu, [X], [(4, 2, 5, 3)], True),
    ("gelu_tanh", lambda x: polyeng.gelu(x, approximate="tanh"), [X], [(4, 2, 5, 3)], True),
    ("sigmoid", polyeng.sigmoid, [X], [(4, 2, 5, 3)], True),
    ("tanh", polyeng.tanh, [X], [(4, 2, 5, 3)], True),
    ("exp", polyeng.exp, [X], [(4, 2, 5, 3)], True),
    ("erf", polyeng.erf, [X], [(4, 2, 5, 3)], True),
    ("sqrt", lambda x: polyeng.sqrt(polyeng.relu(x)), [X], [(4, 2, 5, 3)], True),
    ("cast_bf16", lambda x: polyeng.cast(x, polyeng.bfloat16), [X], [(4, 2, 5, 3)], True),
    ("add_f16", lambda x: polyeng.add(x, x), [X.astype(np.float16)], [(4, 2, 5, 3)], True),
    ("add_int", lambda x: polyeng.add(x, 3), [IDS], [(4, 5)], True),
    ("select", lambda x: polyeng.select(x > 0, x, 0.0), [X], [(4, 2, 5, 3)], True),
    # whole axes
    ("softmax_axis1", lambda x: polyeng.softmax(x, axis=1), [X], [(4, 2, 5, 3)], True),
    ("log_softmax", polyeng.log_softmax, [X], [(4, 2, 5, 3)], True),
    ("fused_softmax_mask", lambda x, m: polyeng.fused_softmax(x, m, nan_fill=0.0), [X, X[:, :1, :1] * 10],
     [(4, 2, 5, 3), (3, 1, 1, 5)], True),
    # a last block of width 1 makes the sum along axis 2 contiguous: numpy sums it pairwise (the last bit)
    ("fused_softmax_numpy_mask", lambda x: polyeng.fused_softmax(x, V, axis=2), [X], [(4, 2, 5, 3)], False),
    ("layer_norm", lambda x: polyeng.layer_norm(x, (12, 10), GAMMA, BETA), [X], [(4, 2, 5, 3)], True),
    ("mean_axes", lambda x: polyeng.mean(x, axis=(1, 3)), [X], [(4, 2, 5, 3)], True),
    ("mean_keepdims", lambda x: polyeng.mean(x, axis=2, keepdims=True), [X], [(4, 2, 5, 3)], True),
    ("mean_all", polyeng.mean, [X], [(4, 2, 5, 3)], True),
    ("linear", lambda x: polyeng.linear(x, W, V), [X], [(4, 2, 5, 3)], BLAS_ROWS_EXACT),
    ("linear_no_bias", lambda x: polyeng.linear(x, W[:4]), [X], [(4, 2, 5, 3)], BLAS_ROWS_EXACT),
    # matmul: the contraction axis chunked (a blockwise sum) and not
    ("matmul_k_chunked", polyeng.matmul, [A3, B2], [(3, 4, 7), (7, 4)], False),
    ("matmul_k_whole", polyeng.matmul, [A3, B2], [(3, 4, 30), (30, 4)], True),
    ("matmul_vector", polyeng.matmul, [A3[0, 0], B2], [(11,), (11, 4)], False),
    ("matmul_batch_broadcast", polyeng.matmul, [A3[:1], A3[:, :5].transpose(0, 2, 1).copy()], [(1, 4, 30), (2, 30, 5)], True),
    ("matmul_f16", polyeng.matmul, [A3.astype(np.float16), B2.astype(np.float16)], [(3, 4, 7), (7, 4)], True),
    ("matmul_int", polyeng.matmul, [IDS, IDS.T.copy()], [(4, 5), (5, 4)], True),
    # pooling and upsampling
    ("max_pool2d_overlap", lambda x: polyeng.max_pool2d(x, 3, 2, 1), [X], [(4, 2, 5, 3)], True),
    ("max_pool2d_tiles", lambda x: polyeng.max_pool2d(x, 2), [X], [(4, 2, 5, 3)], True),
    ("avg_pool2d_tiles", lambda x: polyeng.avg_pool2d(x, (3, 2)), [X], [(4, 2, 7, 3)], True),
    ("avg_pool2d_ceil", lambda x: polyeng.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     [X], [(4, 2, 5, 3)], True),
    ("max_pool2d_indices", lambda x: polyeng.max_pool2d(x, 2, return_indices=True), [X], [(4, 2, 5, 3)], True),
    ("max_pool3d", lambda x: polyeng.max_pool3d(x, 2), [V5], [(1, 2, 3, 5, 4)], True),
    ("avg_pool3d", lambda x: polyeng.avg_pool3d(x, 3, 1, 1), [V5], [(1, 2, 3, 5, 4)], True),
    ("upsample_bilinear", lambda x: polyeng.upsample_bilinear2d(x, scale_factor=2, align_corners=True),
     [X], [(4, 2, 5, 3)], True),
    ("upsample_nearest", lambda x: polyeng.upsample_nearest(x, size=(17, 23)), [X], [(4, 2, 5, 3)], True),
    # sequences, lookups, data movement
    ("lstm", lambda x: polyeng.lstm(x, PARAMS, bidirectional=True), [SEQ], [(3, 4, 3)], True),
    ("lstm_states", lambda x, h: polyeng.lstm(x, PARAMS, h, h, bidirectional=True), [SEQ, H0],
     [(3, 4, 3), (3, 2, 2)], True),
    ("lstm_batch_first", lambda x: polyeng.lstm(x, PARAMS[:2], batch_first=True, bidirectional=True),
     [SEQ.transpose(1, 0, 2).copy()], [(4, 3, 3)], True),
    ("embedding", lambda i: polyeng.embedding(i, TABLE), [IDS], [(4, 5)], True),
    ("embedding_dask_table", polyeng.embedding, [IDS, TABLE], [(4, 5), (15, 7)], True),
    ("concat", lambda x, y: polyeng.concat([x, y, X], axis=2), [X, X], [(4, 2, 5, 3), (3, 5, 7, 10)], True),
    ("concat_mixed_dtype", lambda x: polyeng.concat([x, IDS], axis=1), [X[:, 0, 0, :9].copy()], [(4, 5)], True),
    ("permute", lambda x: polyeng.permute_contiguous(x, (3, 1, 0, 2)), [X], [(4, 2, 5, 3)], True),
    ("reshape_tail", lambda x: polyeng.reshape(x, (6, 5, 120)), [X], [(4, 2, 5, 3)], True),
    ("reshape_split", lambda x: polyeng.reshape(x, (6, 5, 3, 4, -1)), [X], [(4, 2, 5, 3)], True),
    ("reshape_all", lambda x: polyeng.reshape(x, (-1,)), [X], [(4, 2, 5, 3)], True),
    # zero-size
    ("softmax_empty", polyeng.softmax, [np.zeros((0, 5), np.float32)], [(0, 5)], True),
    ("linear_empty", lambda x: polyeng.linear(x, W, V), [np.zeros((0, 10), np.float32)], [(0, 5)], True),
]


def flat(result) -> list:
    """Every array of a result (nested tuples flattened)."""
    if isinstance(result, (tuple, list)):
        return [a for item in result for a in flat(item)]
    return [result]
