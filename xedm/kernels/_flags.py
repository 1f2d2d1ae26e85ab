"""One place for numba flags: fastmath without nnan/ninf (NaN and inf must keep their meaning)."""

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
# Distances for neighbour ORDER are compared exactly; reassociation could change which of two
# tied neighbours wins between kernels, so the kNN kernels use only these:
FASTMATH_STRICT = {"nsz", "arcp", "contract", "afn"}
# ... and the kernels that compute distances use no contraction either: an FMA rounds
# ``s + d*d`` once instead of twice, so the same squared differences summed in another lag
# order (the windows of a sliding stretch of data seen from a constant state) tie in plain
# float64 but not once fused.  Every distance is the plain float64 sum, lag by lag and column
# by column within a lag, as tests/naive.py computes it: exact ties are then the same ties in
# every kernel and in the reference.
FASTMATH_DIST = {"nsz", "arcp", "afn"}
