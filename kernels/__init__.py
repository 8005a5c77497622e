"""GPU kernels (CUDA sources with their launchers) and their NumPy CPU twins (``fsstgpu.kernels``)."""
