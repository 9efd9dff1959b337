"""upsample_nearest and upsample_bilinear2d on OPENCL (upsample.cl).

Both take the source positions ``polyeng.ops.upsample`` prepares for every engine: nearest each
dim's rule (``axes``), which the kernel applies, bilinear the tables of ``coordinates`` with
their weights in f32 (f64 for f64 data), uploaded once per call as int32 indices. They run over
(output column runs, rows, planes) ranges: one work item writes a run of adjacent outputs of
one row (upsample.cl says why). A call that reads a spatial position of 2**31 or more is
rejected at the special-argument step (``limit``).

- nearest: 1, 2 or 3 spatial dims, any dtype, moved as words (bit-exact); fewer than 3
  spatial dims are padded in front with size-1 dims indexing 0, and the output depth is
  folded into the plane dimension. Columns that repeat each input 1, 2 or 4 times run as
  vector loads and shuffles. It needs no cl_khr_fp64, so it takes f64 on any device.
- bilinear: every float dtype (16-bit storage computed in f32; f64 in f64, so only where the
  device has cl_khr_fp64), in two passes as BASIC computes it: the source rows that some
  output reads, interpolated along W into a scratch tensor, then along H. With contraction
  into fused multiply-adds off, results are BASIC's bit for bit (NaN payloads aside).
"""
from __future__ import annotations

import numpy as np

from .._loader import limit
from . import _enqueue as enqueue


RUN = 16          # outputs per work item along a row (upsample.cl's RUN)
GROUP_ITEMS = 64  # work items a group aims for: the runs of a row, several rows when short
INDEX_LIMIT = 2 ** 31   # upsample.cl holds spatial positions as int (bilinear tables) or uint (nearest)


def _range(ow: int, oh: int, planes: int) -> tuple:
    """(global counts, group shape) for an output of ``planes`` planes of ``oh`` x ``ow``."""
    runs = -(-ow // RUN)
    width = -(-runs // -(-runs // GROUP_ITEMS))   # split long rows into even groups
    return (runs, oh, planes), (width, max(1, min(oh, GROUP_ITEMS // width)), 1)


def _index_rejection(call, largest: int):
    """The reason to reject a call that reads position ``largest``, which int32 cannot hold."""
    if largest < INDEX_LIMIT:
        return None
    return (f"x has shape {tuple(call.args['x'].shape)}: this call reads position {largest} of a spatial dim, "
            f"but OPENCL's upsample kernels index with int32 (expected positions below 2**31)")


def _nearest_limit(call):
    return _index_rejection(call, max(axis.largest for axis in call.prepared.axes))


def _bilinear_limit(call):
    tables = [index for dim in call.prepared.coordinates for index in dim[:2]]
    return _index_rejection(call, max((int(t.max()) for t in tables if t.size), default=0))


def _indices(*tables) -> np.ndarray:
    """The tables concatenated as int32 (every index is below ``INDEX_LIMIT``: see the limits)."""
    return np.concatenate(tables).astype(np.int32)


def _rule(axis) -> tuple:
    """upsample.cl's ``source`` arguments for one dim: step, shift, and the largest position read."""
    return np.float32(axis.step), np.int32(axis.shift), np.uint32(axis.largest)


@limit(_nearest_limit)
def upsample_nearest(p, x, size, scale_factor):
    tx, stay = enqueue.on_device(x)
    out = enqueue.empty(p.shape, tx.dtype, not stay)
    if out.size:
        pad = 3 - len(p.axes)
        id_, ih, iw = [1] * pad + list(tx.shape[2:])
        rules = [(np.float32(1), np.int32(0), np.uint32(0))] * pad + [_rule(axis) for axis in p.axes]
        depth, oh, ow = [1] * pad + [axis.out_size for axis in p.axes]
        planes = tx.shape[0] * tx.shape[1] * depth
        items, local = _range(ow, oh, planes)
        repeat = p.axes[-1].repeat
        options = enqueue.word_options(tx.dtype) + (f"-DREPEAT={repeat if repeat in (1, 2, 4) else 0}",)
        enqueue.run("upsample.cl", "upsample_nearest", options, items,
                   tx.buffer, out.buffer, np.uint64(ow), np.uint64(oh), np.uint64(depth), np.uint64(planes),
                   np.uint64(iw), np.uint64(ih * iw), np.uint64(id_ * ih * iw),
                   *[value for rule in rules for value in rule], local=local)
    return enqueue.result(out, stay)


@limit(_bilinear_limit)
def upsample_bilinear2d(p, x, size, scale_factor, align_corners):
    tx, stay = enqueue.on_device(x)
    (h0, h1, lh0, lh1), (w0, w1, lw0, lw1) = p.coordinates
    n, c, ih, iw = tx.shape
    oh, ow, planes = len(h0), len(w0), n * c
    out = enqueue.empty(p.shape, tx.dtype, not stay)
    if out.size:
        real = lw0.dtype   # the coordinates' arithmetic type: f64 for f64 data, else f32
        # the source rows some output reads, and each output row's two among them
        used, slots = p.rows_read
        index = enqueue.upload(_indices(used, *slots, w0, w1))
        weight = enqueue.upload(np.concatenate([lh0, lh1, lw0, lw1]))
        rows = enqueue.empty((planes, len(used), ow), real)
        options = enqueue.float_options(tx.dtype)
        sizes = (np.uint64(ow), np.uint64(oh), np.uint64(len(used)), np.uint64(planes))
        items, local = _range(ow, len(used), planes)
        enqueue.run("upsample.cl", "bilinear_rows", options, items, tx.buffer, rows.buffer, *sizes,
                   np.uint64(iw), np.uint64(ih * iw), index, weight, local=local)
        items, local = _range(ow, oh, planes)
        enqueue.run("upsample.cl", "bilinear_cols", options, items, rows.buffer, out.buffer, *sizes, index, weight,
                   local=local)
    return enqueue.result(out, stay)
