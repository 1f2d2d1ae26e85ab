"""One place for numba flags: fastmath without nnan/ninf (NaN and inf must keep their meaning)."""

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
# Distances for neighbour ORDER are compared exactly; reassociation could change which of two
# tied neighbours wins between kernels, so the kNN kernels use only these:
FASTMATH_STRICT = {"nsz", "arcp", "contract", "afn"}
