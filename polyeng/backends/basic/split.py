"""split in numpy: each piece is a C-contiguous copy of its slice of ``x``."""
import numpy as np


def split(p, x, split_size_or_sections, axis):
    pieces, start = [], 0
    for size in split_size_or_sections:
        index = (slice(None),) * axis + (slice(start, start + size),)
        pieces.append(np.array(x[index], order="C"))
        start += size
    return tuple(pieces)
