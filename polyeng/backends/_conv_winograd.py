"""Winograd's F(2x2, 3x3) for conv2d, the ``winograd`` algorithm of ``polyeng.ops.conv`` (3x3
kernels of stride 1, undilated): each 2x2 output tile is ``A^T [U * (B^T d B)] A`` of its 4x4 input
tile ``d``, with ``U = G w G^T`` per (out, in) channel pair, so a tile costs 16 products per
channel pair instead of 36. The products of all tiles are 16 matrix products, one per position k
of the 4x4 tile: ``M[k] (O, tiles) = U[k] (O, C) @ V[k] (C, tiles)`` per group, one batched BLAS
call.

The transforms only add and subtract inputs (B, A) and halve weights (G), so the error stays
that of the products: within 1e-6 of the largest output in f32 at 64-256 channels, as direct
convolution. F(4x4, 3x3) needs 2.25x fewer products again but was 2-5x over the f32 tolerance of
the conv tests at those channel counts, so it is not used.

This module holds what both CPU engines share: the weight transform, the passes over the images
(as many per pass as keep V and M near 8 MB, in the thread's scratch) and the products; BASIC's tile
transforms in numpy are here too (their temporaries in scratch as well), NUMBA's JIT ones in
``backends/numba/_conv_winograd.py``.
The transformed tiles of an image are ``V[k, c, ty * per_row + tx]`` for tile (ty, tx); NUMBA's
rows hold one spare tile (``per_row = tiles across + 1``), which keeps its loops flat.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from . import _conv_scratch as scratch
from ._blas_threads import blas_threads

# G of F(2x2, 3x3) (Lavin and Gray, 2016); B^T and A^T are written out in the transforms.
# G w G^T of a flat 3x3 kernel w is kron(G, G) @ w: one product for all channel pairs.
WEIGHT_TRANSFORM = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
_FLAT_WEIGHT_TRANSFORM = np.kron(WEIGHT_TRANSFORM, WEIGHT_TRANSFORM)   # (16, 9)
PASS_BYTES = 8 << 20   # V and M of at most about this size per pass (at least one image)
# NUMBA's chunks (``backends/numba/_winograd_chunks.py``): V and M of one chunk about a core's L2
# cache (1 MB on the machines measured; at 64 channels and 56x56, chunks of 1, 2, 3 and 4 tile rows,
# 0.24-0.95 MB, took 7.8, 6.6, 6.2 and 5.9 ms at batch 8), and at least MIN_CHUNK_WIDTH tiles: each
# chunk's 16 products pack all of U again, which a few columns do not repay (measured as chunks /
# passes on 2 threads: 512 channels at 7x7, 20 tiles an image, 11.6 / 5.6 ms at batch 1; 256 at
# 14x14, 56 tiles, 2.5 / 1.7 ms; 64 at 16x16, 72 tiles, 0.44 / 0.44 ms and 1.05 / 1.71 at batch 8).
CHUNK_BYTES = 1 << 20
MIN_CHUNK_WIDTH = 64


class Transforms(NamedTuple):
    """An engine's tile transforms, over the tile rows ``block`` = [first, last) of images: ``input(g,
    x, v, block, tw)`` fills V (16, C, images * rows * per_row) from x (images, C, H, W); ``output(g,
    m, out, bias, block, tw)`` writes their output rows of out (images, O, OH, OW) from M (16, O,
    images * rows * per_row), adding ``bias`` (None or (O,)); ``spare`` is per_row - tw."""
    input: Callable
    output: Callable
    spare: int


def tiles(g) -> tuple:
    """(tiles down, tiles across) of the output."""
    return (g.out[0] + 1) // 2, (g.out[1] + 1) // 2


def chunk_rows(g, itemsize: int) -> int:
    """Tile rows per chunk of NUMBA's chunked Winograd for this call, or 0 where an image has fewer
    than ``MIN_CHUNK_WIDTH`` tiles (BASIC's passes, many images at once, are faster there)."""
    th, tw = tiles(g)
    per_row = tw + 1
    if th * per_row < MIN_CHUNK_WIDTH:
        return 0
    by_cache = CHUNK_BYTES // (16 * (g.channels + g.out_channels) * per_row * itemsize)
    return min(th, max(1, by_cache, -(-MIN_CHUNK_WIDTH // per_row)))


def weights(g, weight) -> np.ndarray:
    """``G w G^T`` of every (out, in) channel pair as U (16, groups, out per group, in per group)."""
    u = _FLAT_WEIGHT_TRANSFORM.astype(weight.dtype) @ weight.reshape(-1, 9).T
    return u.reshape(16, g.groups, g.group_out, g.group_in)


def conv(g, x, weight, bias, transforms: Transforms) -> np.ndarray:
    """The convolution of x (N, C, H, W) in x's dtype, its bias added."""
    th, tw = tiles(g)
    per_row = tw + transforms.spare
    out = np.empty((g.batch, g.out_channels) + g.out, x.dtype)
    if not out.size:
        return out
    u = weights(g, weight)
    rows = max(1, PASS_BYTES // (16 * (g.channels + g.out_channels) * per_row * x.itemsize))
    images = max(1, min(g.batch, rows // th))
    rows = min(rows, th)
    v_all, m_all = scratch.arrays(x.dtype, (16, g.channels, images * rows * per_row),
                                  (16, g.out_channels, images * rows * per_row))
    for first in range(0, g.batch, images):
        last = min(g.batch, first + images)
        for top in range(0, th, rows):
            block = (top, min(th, top + rows))
            width = (last - first) * (block[1] - top) * per_row
            v, m = v_all[:, :, :width], m_all[:, :, :width]
            transforms.input(g, x[first:last], v, block, tw)
            with blas_threads(16 * g.out_channels * g.group_in * width):
                np.matmul(u, v.reshape(16, g.groups, g.group_in, width),
                          out=m.reshape(16, g.groups, g.group_out, width))
            transforms.output(g, m, out[first:last], bias, block, tw)
    return out


def _numpy_input(g, x, v, block, tw) -> None:
    """V = B^T d B of every tile, as a few numpy operations over all images and channels at once."""
    n, (top, _, left, _) = x.shape[0], g.padding
    th = block[1] - block[0]
    # the padded rows from 2 * block[0] on, and B^T down each tile (of the pass's scratch)
    d, down = scratch.arrays(x.dtype, (n, g.channels, 2 * th + 2, 2 * tw + 2), (4, n, g.channels, th, 2 * tw + 2),
                             slot="transform")
    d[...] = 0
    first, last = max(0, 2 * block[0] - top), min(g.size[0], 2 * block[1] + 2 - top)
    start = first + top - 2 * block[0]
    d[:, :, start:start + last - first, left:left + g.size[1]] = x[:, :, first:last]
    # B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]] down each tile (rows r0..r3)...
    r0, r1, r2, r3 = (d[:, :, r:r + 2 * th:2] for r in range(4))
    np.subtract(r0, r2, out=down[0])
    np.add(r1, r2, out=down[1])
    np.subtract(r2, r1, out=down[2])
    np.subtract(r1, r3, out=down[3])
    # ... then across it (columns c0..c3), for the four rows at once
    c0, c1, c2, c3 = (down[..., c:c + 2 * tw:2] for c in range(4))
    target = v.reshape(4, 4, g.channels, n, th, tw).transpose(1, 0, 3, 2, 4, 5)   # (k, i, n, C, th, tw)
    np.subtract(c0, c2, out=target[0])
    np.add(c1, c2, out=target[1])
    np.subtract(c2, c1, out=target[2])
    np.subtract(c1, c3, out=target[3])


def _numpy_output(g, m, out, bias, block, tw) -> None:
    """Each 2x2 output tile A^T M A (+ bias), as a few numpy operations over all images and channels."""
    n, th = out.shape[0], block[1] - block[0]
    rows = m.reshape(4, 4, g.out_channels, n, th, tw)   # (i, j, O, n, th, tw)
    # A^T = [[1, 1, 1, 0], [0, 1, -1, -1]] down each tile...
    down, full = scratch.arrays(out.dtype, (2,) + rows.shape[1:], (n, g.out_channels, th, 2, tw, 2), slot="transform")
    np.add(rows[0], rows[1], out=down[0])
    down[0] += rows[2]
    np.subtract(rows[1], rows[2], out=down[1])
    down[1] -= rows[3]
    # ... then across it, into the tiles' places in the output
    left, right = full[..., 0].transpose(3, 1, 0, 2, 4), full[..., 1].transpose(3, 1, 0, 2, 4)   # (a, O, n, th, tw)
    np.add(down[:, 0], down[:, 1], out=left)
    left += down[:, 2]
    np.subtract(down[:, 1], down[:, 2], out=right)
    right -= down[:, 3]
    first, last = 2 * block[0], min(g.out[0], 2 * block[1])
    full = full.reshape(n, g.out_channels, 2 * th, 2 * tw)[:, :, :last - first, :g.out[1]]
    if bias is None:
        out[:, :, first:last] = full
    else:
        np.add(full, bias[:, None, None], out=out[:, :, first:last])


NUMPY = Transforms(_numpy_input, _numpy_output, 0)
