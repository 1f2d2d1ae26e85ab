"""Kernels of the significance tests (surrogates)."""
