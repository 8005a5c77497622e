"""The GPU runtime: columns in device memory and their decoding there.

One layer above the column API (``fsstgpu.arrays``, ``fsstgpu.columns``), below the file
formats: :mod:`~fsstgpu.gpu.arrays` (device columns and the upload), :mod:`~fsstgpu.gpu.layout`
(what a decode launch reads, planned on the host), :mod:`~fsstgpu.gpu.decode` (the decode call),
:mod:`~fsstgpu.gpu.arrow_device` (the Arrow C Device interface) and :mod:`~fsstgpu.gpu.concat`
(device columns joined). CuPy is imported on first use, so these modules import without a GPU.
"""
