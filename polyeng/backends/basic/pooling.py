"""placeholder"""
KERNELS = {}
