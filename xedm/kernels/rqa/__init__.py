"""Recurrence quantification kernels: line-length histograms on the CPU and the GPU."""
