"""Cross-map kernels: CCM (sorted tables, sampled-library skill) and xmap (all-pairs lookups)."""
