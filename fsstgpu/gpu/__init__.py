"""The GPU runtime: columns in device memory, their decoding there and their encoding.

One layer above the column API (``fsstgpu.arrays``, ``fsstgpu.columns``), below the file
formats: :mod:`~fsstgpu.gpu.arrays` (device columns and the upload), :mod:`~fsstgpu.gpu.layout`
(what a decode launch reads, planned on the host; :mod:`~fsstgpu.gpu.lengths` its string
lengths), :mod:`~fsstgpu.gpu.decode` (the decode call), :mod:`~fsstgpu.gpu.arrow_device` (the
Arrow C Device interface), :mod:`~fsstgpu.gpu.concat` (device columns joined),
:mod:`~fsstgpu.gpu.encode` (strings compressed on the GPU), :mod:`~fsstgpu.gpu.encoded` (their
compressed column made where the codes are) and :mod:`~fsstgpu.gpu.block_encode` (a host
column's blocks encoded there, for files). CuPy is imported on first use, so these modules
import without a GPU.
"""
