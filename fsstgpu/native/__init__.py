"""The compiled CPU codec (C++17, built by ``pip install``): encoder, decoder, trainer, checks.

This package is the documented face of the extension ``fsstgpu._native`` (sources in
``fsstgpu/csrc``), one module per job: :mod:`~fsstgpu.native.codec` (matchers, encoding, decoding,
the UTF-8 check), :mod:`~fsstgpu.native.train` (training) and :mod:`~fsstgpu.native.scan` (walks
over codes, column checks, Arrow layout loops); their names are all here.

Every entry point validates its arguments, releases the GIL and spreads the work over
``threads`` std::threads (default :func:`fsstgpu.parallel.usable_cores`, which honours
``FSSTGPU_THREADS``); results do not depend on the thread count.

The hot loops are compiled three times (scalar, AVX2, AVX-512) and picked at run time for the
CPU at hand (:func:`isa`); ``FSSTGPU_ISA=scalar`` (or ``avx2``) steps down to a lower copy.

* :func:`encode_blocks`: greedy longest-match FSST encoding (the codes of
  :func:`fsstgpu.testing.greedy_encode`);
* :func:`decode_codes` / :func:`decode_range` / :func:`decode_all`: FSST decoding (one run of
  codes, a whole column from its split points, with every corruption check; :mod:`fsstgpu.decoder`
  is their documented home);
* :func:`first_invalid_string`: :func:`fsstgpu.utf8.first_invalid_string`'s contract;
* :func:`train_symbols` / :func:`train_sample` / :func:`sample_of`: table training;
* :func:`plan_symbols`: block planning (where a column gets a new table) and its tables;
* :func:`rle_hybrid` / :func:`delta_binary_packed`: Parquet's value encodings, for pages read
  raw;
* :func:`crc32` / :func:`crc32_many`: zlib's CRC-32 at memory speed
  (:mod:`~fsstgpu.native.checksums`);
* :func:`walk_codes`, :func:`length_sums`, :func:`first_misfit`, ...: the code walk and the
  column checks.

>>> import numpy as np
>>> from fsstgpu import SymbolTable, native
>>> t = SymbolTable([b"ab"])
>>> codes, offs = native.encode_blocks([t], np.frombuffer(b"abxab", np.uint8),
...                                    np.array([0, 3, 5]), np.array([0, 2]))
>>> codes.tolist(), offs.tolist()
([0, 255, 120, 0], [0, 3, 4])
>>> native.isa() in ("scalar", "avx2", "avx512")
True
"""

from fsstgpu.native import checksums, codec, pages, plan, scan, train
from fsstgpu.native.checksums import *  # noqa: F403
from fsstgpu.native.codec import *  # noqa: F403
from fsstgpu.native.pages import *  # noqa: F403
from fsstgpu.native.plan import *  # noqa: F403
from fsstgpu.native.scan import *  # noqa: F403
from fsstgpu.native.train import *  # noqa: F403

__all__ = [*checksums.__all__, *codec.__all__, *train.__all__, *scan.__all__, *plan.__all__,
           *pages.__all__]
