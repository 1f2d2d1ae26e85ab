"""Constants of the simplex kernels, shared by the CPU (numba) and GPU (CUDA source) twins.

Pure Python: importing it compiles nothing, so the GPU modules and ``core`` read the values
from here; the CUDA sources write them in as literals (``repr`` of the float).
"""

D_MIN = 1e-6  # floor of the nearest distance in simplex weights (CONVENTIONS.md)
SWEEP_MAX_E = 64  # E values per simplex_sweep call: one bit each in a uint64 candidate mask
