"""embedding in numpy: ``weight[ids]`` (ids were range-checked at validation)."""
import numpy as np


def embedding(p, ids, weight):
    return np.take(weight, ids, axis=0)
