"""Exact k-nearest-neighbour kernels: CPU (numba) and GPU (CuPy), and the GPU inverted-file scan."""
