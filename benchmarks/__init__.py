"""Benchmarks of fsstgpu: not installed, run from a checkout (``python -m benchmarks.kernels``).

They use only the public API of :mod:`fsstgpu` and its kernel modules; every GPU figure is timed
with CUDA events and printed beside the same run's device-to-device copy bandwidth
(:mod:`benchmarks.timing`).
"""
