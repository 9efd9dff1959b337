"""embedding on OPENCL (embedding.cl): a gather of whole rows of ``weight``, moved as words, so
every float dtype is copied bit for bit. The ids were range-checked at validation."""
from __future__ import annotations

import numpy as np

from . import _enqueue as enqueue

CHUNK = 256   # words a work item moves (embedding.cl)
_ID_TYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long"}


def embedding(p, ids, weight):
    ti, ids_stay = enqueue.on_device(ids)
    tw, weight_stays = enqueue.on_device(weight)
    stay = ids_stay or weight_stays
    out = enqueue.empty(p.shape, tw.dtype, not stay)
    if out.size:
        count, dim = ti.size, tw.shape[1]
        blocks = -(-dim // CHUNK)
        options = enqueue.word_options(tw.dtype) + (f"-DID={_ID_TYPES[ti.dtype]}",)
        enqueue.run("embedding.cl", "embedding_rows", options, (blocks, count), ti.buffer, tw.buffer, out.buffer,
                    np.uint64(count), np.uint64(dim), local=enqueue.group(blocks, count, widest=4, items=16))
    return enqueue.result(out, stay)
