"""matmul and linear in numpy (BLAS for floats)."""
from .. import _blas

matmul = _blas.matmul
linear = _blas.linear
