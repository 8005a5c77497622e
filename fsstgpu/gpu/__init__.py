"""The GPU runtime: columns in device memory, their decoding there and their encoding.

One layer above the column API (``fsstgpu.arrays``, ``fsstgpu.columns``), below the file
formats: :mod:`~fsstgpu.gpu.arrays` (device columns and the upload), :mod:`~fsstgpu.gpu.layout`
(what a decode launch reads, planned on the host), :mod:`~fsstgpu.gpu.decode` (the decode call),
:mod:`~fsstgpu.gpu.arrow_device` (the Arrow C Device interface), :mod:`~fsstgpu.gpu.concat`
(device columns joined), :mod:`~fsstgpu.gpu.encode` (strings compressed on the GPU) and
:mod:`~fsstgpu.gpu.encoded` (their compressed column made where the codes are). CuPy
is imported on first use, so these modules import without a GPU.
"""
