"""reshape on NUMBA: numpy's own reshape, a view wherever numpy can make one (nothing to compile)."""


def reshape(p, x, shape):
    return x.reshape(shape)
