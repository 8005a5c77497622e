"""Integrations with other libraries, above the file formats: :mod:`~fsstgpu.integrations.dask`
(files read and written by a Dask cluster), :mod:`~fsstgpu.integrations.numcodecs` (the ``fsst``
numcodecs codec) and :mod:`~fsstgpu.integrations.zarr` (the same codec for zarr v3). Each needs
its library (an extra of the package) and is imported on its own; ``import fsstgpu`` loads none.
"""
