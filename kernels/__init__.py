"""GPU kernels (CUDA sources, Python launchers) and their NumPy CPU twins, one module per family.

* :mod:`fsstgpu.kernels.transpose`: :func:`~fsstgpu.kernels.transpose.transpose` (out of place or
  in place) and ``transpose_cpu``; :mod:`fsstgpu.kernels.transpose_inplace` holds the two-pass
  in-place path for rectangular shapes with a large common factor;
* :mod:`fsstgpu.kernels.rotate`: in-place :func:`~fsstgpu.kernels.rotate.rotate` and
  ``rotate_cpu``;
* :mod:`fsstgpu.kernels.bitshuffle`: ``bitshuffle`` / ``bitunshuffle`` (the ``bitshuffle``
  package's layout), each with its ``*_cpu`` twin;
* :mod:`fsstgpu.kernels.bitplane`: the bit-plane integer codec ``bitplane_pack`` /
  ``bitplane_unpack`` / ``bitplane_unpack_offsets`` (lengths straight into Arrow offsets); their
  ``*_cpu`` twins live in :mod:`fsstgpu.kernels.bitplane_cpu`;
* :mod:`fsstgpu.kernels.fsst_decode`: the FSST decode kernel's launchers;
* :mod:`fsstgpu.kernels.fsst_encode`: the FSST encode kernel's lookups and launchers (its twin is
  the compiled CPU encoder, ``fsstgpu.native.encode_blocks``) and a UTF-8 check of device
  strings;
* :mod:`fsstgpu.kernels.loader`: compiles the ``.cu`` sources, once per device.

Every public function takes NumPy or CuPy input and runs the CPU twin or the GPU kernel
accordingly; both give the same bytes.  CuPy is imported only when a GPU path runs.

>>> import numpy as np
>>> from fsstgpu.kernels import rotate
>>> rotate.rotate(np.arange(4), 1).tolist()
[1, 2, 3, 0]
"""
