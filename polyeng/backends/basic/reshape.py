"""reshape in numpy: a view wherever numpy can make one."""


def reshape(p, x, shape):
    return x.reshape(shape)
