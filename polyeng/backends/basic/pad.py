"""pad in numpy: the constant mode fills a new array and copies the kept part of x into it;
reflect and replicate take, dim by padded dim, the source index of every output position."""
import numpy as np


def _sources(n: int, before: int, size: int, mode: str) -> np.ndarray:
    """The input index each of ``size`` output positions reads (reflect: mirrored about the edge
    element; replicate: the edge element)."""
    p = np.arange(size, dtype=np.int64) - before
    if mode == "reflect":
        p = np.abs(p)
        return np.where(p >= n, 2 * (n - 1) - p, p)
    return np.clip(p, 0, n - 1)


def pad(p, x, pads, mode, value):
    if mode == "constant":
        out = np.empty(p.shape, p.dtype)
        out[...] = p.fill
        if x.size and out.size:
            kept_in, kept_out = [], []
            for n, b, a in zip(x.shape, p.before, p.after):
                start, stop = max(-b, 0), n - max(-a, 0)
                kept_in.append(slice(start, stop))
                kept_out.append(slice(start + b, stop + b))
            out[tuple(kept_out)] = x[tuple(kept_in)]
        return out
    out = x
    for d, (n, b, a) in enumerate(zip(x.shape, p.before, p.after)):
        if b or a:
            out = np.take(out, _sources(n, b, n + b + a, mode), axis=d)
    return np.array(out, order="C")   # a copy, also where nothing is padded
