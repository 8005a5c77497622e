"""GPU kernels (CUDA sources, Python launchers) and their NumPy CPU twins."""
