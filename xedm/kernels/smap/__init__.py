"""S-map kernels: the CPU normal-equation and QR solvers, the GPU QR solvers, their constants."""
