"""Simplex prediction and skill kernels: CPU (numba) and GPU (CuPy), and their shared constants."""
