"""Constants of the S-map solvers, one module for the CPU (numba) and GPU (CUDA source) kernels.

Pure Python: importing it compiles nothing.  The CUDA sources write these values in as
literals generated from here (``repr`` of the float, e.g. ``690.0``), never as copies.
"""

# exp(LOG_BIG) ~ 1e300: ridge rows are capped there (their limit, coefficients 0 but the
# intercept, is reached)
LOG_BIG = 690.0
# Householder vectors whose sum of squares lies outside (SQ_TINY, SQ_HUGE) are scaled by a
# power of 2 first (the QR solvers)
SQ_TINY = 2.0**-900
SQ_HUGE = 2.0**900
# the normal-equation solver (smap/cpu.py): acceptance of a problem, else the QR solver
GRAM_ACCEPT = 1e-10  # the last refinement correction, relative to the solution, at most
REFINE_STEPS = 3  # refinement steps at most
PIVOT_MIN = 1e-12  # smallest accepted Cholesky pivot of the unit-diagonal normal matrix
RIDGE_MAX = 2.0**250  # ridge rows heavier than this (their squares near overflow): QR
EXP_MIN = -708.0  # exp of arguments below this is taken as 0 (squared weights: they vanish)
