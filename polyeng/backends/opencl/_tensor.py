"""OpenCL device tensors: a buffer on polyeng's OpenCL device with a shape and a dtype.

The class is importable without pyopencl (the registry needs it as the engine's native
type at import time); buffers are created on first use. Data is stored C-contiguous in
the numpy dtype's bytes, bfloat16 included (its 16-bit pattern).
"""
from __future__ import annotations

import math

import numpy as np

from ...engine.dtypes import short_name


class OpenCLTensor:
    """A tensor resident on the OpenCL device. ``polyeng.to_device(x)`` makes one and
    ``polyeng.to_numpy(t)`` brings it back; ops on it run on the OPENCL engine when that
    engine implements them (the layout step)."""

    __slots__ = ("buffer", "shape", "dtype", "host", "__weakref__")

    def __init__(self, buffer, shape, dtype, host=None):
        self.buffer, self.shape, self.dtype = buffer, tuple(int(s) for s in shape), np.dtype(dtype)
        self.host = host   # the numpy array a zero-copy buffer lives in (enqueue.py), else None

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __reduce__(self):   # its buffer belongs to this process's OpenCL context
        raise TypeError(f"an OpenCLTensor {self.shape} cannot be pickled: its data lives in this process's "
                        f"OpenCL context; send polyeng.to_numpy(t) instead")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        from ._runtime import state
        device = state().device.name.strip()
        return f"OpenCLTensor(shape={self.shape}, dtype={short_name(self.dtype)}, device={device!r})"

    def reshape(self, *shape) -> "OpenCLTensor":
        """This tensor with another shape (numpy's rule: ints or one tuple, at most one -1) over
        the same buffer: the data is C-contiguous, so no copy and no kernel. It is
        ``polyeng.reshape``, so a shape that cannot hold exactly this tensor's elements is the
        op's ValueError naming it."""
        from ...engine.api import call_op
        if not shape:
            raise TypeError("reshape() takes a shape: ints or one tuple of ints")
        return call_op("reshape", self, shape[0] if len(shape) == 1 else shape)

    def with_shape(self, dims: tuple) -> "OpenCLTensor":
        """This tensor's buffer under ``dims``, which hold exactly its elements (checked by the caller)."""
        host = self.host.reshape(dims) if self.host is not None else None
        return OpenCLTensor(self.buffer, tuple(dims), self.dtype, host=host)

    def __getitem__(self, key) -> "OpenCLTensor":
        """Rows of the leading axis, copied on the device: ``t[i]`` and ``t[a:b]`` (step 1), each
        optionally followed by full slices (``t[i, :]``). The rows of a C-contiguous tensor are
        one contiguous byte range, so this is one buffer-to-buffer copy, no transfer to the host.
        Any other key is NotImplementedError: bring the tensor to the host for it."""
        import pyopencl as cl
        from ._runtime import state
        parts = key if isinstance(key, tuple) else (key,)
        if not self.shape or len(parts) > len(self.shape) or any(
                not (isinstance(p, slice) and p == slice(None)) for p in parts[1:]):
            raise NotImplementedError(f"device indexing with {key!r}")
        first, rows = parts[0], self.shape[0]
        if isinstance(first, (int, np.integer)) and not isinstance(first, (bool, np.bool_)):
            index = int(first) + (rows if first < 0 else 0)
            if not 0 <= index < rows:
                raise IndexError(f"index {int(first)} is out of bounds for axis 0 with size {rows}")
            start, count, shape = index, 1, self.shape[1:]
        elif isinstance(first, slice) and first.step in (None, 1):
            start, stop, _ = first.indices(rows)
            count = max(stop - start, 0)
            shape = (count,) + self.shape[1:]
        else:
            raise NotImplementedError(f"device indexing with {key!r}")
        row_bytes = math.prod(self.shape[1:]) * self.dtype.itemsize
        nbytes = count * row_bytes
        if nbytes == 0 or self.buffer is None:
            return OpenCLTensor(None, shape, self.dtype)
        buffer = cl.Buffer(state().context, cl.mem_flags.READ_WRITE, size=nbytes)
        cl.enqueue_copy(state().queue, buffer, self.buffer, byte_count=nbytes, src_offset=start * row_bytes)
        return OpenCLTensor(buffer, shape, self.dtype)

    @property
    def T(self) -> "OpenCLTensor":   # noqa: N802 (numpy's name)
        """The axes reversed (the tensor itself for 0-d and 1-d). Unlike numpy's ``.T`` this is
        a copy: device tensors are always C-contiguous, so a transpose is a device
        ``permute_contiguous`` on the OPENCL engine."""
        if self.ndim < 2:
            return self
        from ...engine.api import call_op
        from ...engine.settings import compute_eng
        with compute_eng("opencl", fallback=False):
            return call_op("permute_contiguous", self, tuple(range(self.ndim - 1, -1, -1)))

    def __array__(self, dtype=None, copy=None):
        array = to_numpy(self)
        return array if dtype is None else array.astype(dtype)


ALIGN = 128   # bytes at least: PoCL copies a host buffer whose address is not aligned to this


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized C-ordered array whose data starts on the device's base address
    alignment (at least ``ALIGN`` bytes), so a buffer made on it is used in place rather than
    shadowed by a driver copy (numpy aligns to 16 bytes)."""
    from ._runtime import state
    align = max(ALIGN, int(state().device.mem_base_addr_align) // 8)
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def wrap(array: np.ndarray, read_only: bool = False) -> OpenCLTensor:
    """A tensor whose buffer lives in ``array`` (C-contiguous, aligned), on a device sharing the
    host's memory: kernels read and write the array itself."""
    import pyopencl as cl
    from ._runtime import state
    flags = (cl.mem_flags.READ_ONLY if read_only else cl.mem_flags.READ_WRITE) | cl.mem_flags.USE_HOST_PTR
    return OpenCLTensor(cl.Buffer(state().context, flags, hostbuf=array), array.shape, array.dtype, host=array)


def from_numpy(x: np.ndarray) -> OpenCLTensor:
    """Copy ``x`` to the device (one host-to-device transfer). On a device sharing the host's
    memory (PoCL) the copy is an aligned numpy array the buffer lives in: numpy's allocator
    backs large arrays with huge pages, which the kernels then read faster than the driver's
    own allocations."""
    import pyopencl as cl
    from ._runtime import state
    x = np.asarray(x)
    if x.nbytes == 0:
        return OpenCLTensor(None, x.shape, x.dtype)
    st = state()
    if st.unified:
        host = aligned_empty(x.shape, x.dtype)
        np.copyto(host, x)
        return wrap(host)
    if not x.flags.c_contiguous:
        x = x.copy(order="C")   # not ascontiguousarray: it turns 0-d arrays into 1-d ones
    buffer = cl.Buffer(st.context, cl.mem_flags.READ_WRITE, size=x.nbytes)
    cl.enqueue_copy(st.queue, buffer, x, is_blocking=True)
    return OpenCLTensor(buffer, x.shape, x.dtype)


def to_numpy(t: OpenCLTensor) -> np.ndarray:
    """Copy ``t`` back to a new numpy array (one device-to-host transfer)."""
    import pyopencl as cl
    from ._runtime import state
    out = np.empty(t.shape, t.dtype)
    if t.buffer is not None and out.nbytes:
        cl.enqueue_copy(state().queue, out, t.buffer, is_blocking=True)
    return out
