"""The CPU kernels compile once each (a first run compiles seconds, not minutes), and say so."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import numba
import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.blocks import plan_blocks
from fsstgpu.decoder import decode_range
from fsstgpu.encoder import encode_strings
from fsstgpu.jit import COMPILE_NOTICE
from fsstgpu.scan import lengths_from_code_offsets
from fsstgpu.training import train_table

_MODULES = ["fsstgpu.arrow_layout", "fsstgpu.matcher", "fsstgpu.training", "fsstgpu.blocks",
            "fsstgpu.encoder", "fsstgpu.decoder", "fsstgpu.scan", "fsstgpu.checks"]


def _kernels():
    """Every numba kernel the package defines, by name."""
    found = {}
    for name in _MODULES:
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if (isinstance(obj, numba.core.registry.CPUDispatcher)
                    and obj.py_func.__module__ == name):
                found[f"{name}.{attr}"] = obj
    return found


def _exercise():
    """Every CPU path, with inputs of every array flavour: Arrow buffers (read-only), sliced
    arrays, writable numpy arrays, Python ints and numpy integers."""
    rng = np.random.default_rng(3)
    words = [b"alpha", b"beta", b"http://www.", b".com/", b"\x00\xff", b"the "]
    items = [b"".join(words[j] for j in rng.integers(0, len(words), rng.integers(0, 30)))
             for _ in range(20_000)]
    dna = [bytes(rng.choice(np.frombuffer(b"ACGT", np.uint8), 60)) for _ in range(4_000)]
    col = pa.array(items + dna + [None], pa.binary())
    for arr in (col, col.slice(7, 9000), pa.array([s.decode("latin-1") for s in items[:500]])):
        back = fsstgpu.decompress(fsstgpu.compress(arr), device="cpu")
        assert back.equals(arr)
    carr = fsstgpu.compress(col)
    loaded = fsstgpu.CompressedStringArray.from_bytes(carr.to_bytes())
    assert fsstgpu.decompress(loaded, device="cpu").equals(col)
    carr.validate(full=True)
    assert carr[3] == items[3] and carr.take([5, 1]).to_pylist() == [items[5], items[1]]
    data = np.frombuffer(b"".join(items), np.uint8).copy()  # writable
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum([len(s) for s in items], out=offsets[1:])
    table = train_table(data, offsets)
    train_table(data[:1000], offsets[offsets <= 1000])  # a sample that is the whole input
    plan_blocks(data, offsets, segment_bytes=8 << 10)
    codes, code_offsets = encode_strings(table, data, offsets)
    out = np.zeros(int(offsets[-1]), np.uint8)
    decode_range(table, codes, np.int64(0), int(code_offsets[-1]), out, 0, len(out))
    assert np.array_equal(out, data)
    lengths_from_code_offsets([table], np.array([0, len(items)]), codes, code_offsets)


def test_every_kernel_compiles_once():
    """One compiled signature per kernel, whatever arrays the caller has. The trainer's pair
    counters are 16 bits for samples under 64 KB and 32 bits above: the two kernels that take
    them compile for each width, but only when a sample of that size is used; so does the
    running sum that writes int32 or int64 Arrow offsets, and the decoder's string-end check
    that reads them."""
    _exercise()
    kernels = _kernels()
    assert "fsstgpu.encoder._encode_chunk" in kernels and len(kernels) >= 8
    per_width = {"fsstgpu.training._compress_count", "fsstgpu.training._next_table",
                 "fsstgpu.arrow_layout._running_sum",
                 *(f"fsstgpu.decoder.{k}" for k in ("_decode_splits", "_decode_checked",
                                                    "_check_ends", "_first_end_after",
                                                    "_decreases"))}
    for name, kernel in kernels.items():
        limit = 2 if name in per_width else 1
        assert len(kernel.signatures) <= limit, (name, kernel.signatures)


def test_compiling_prints_one_line_on_stderr(tmp_path):
    """A fresh numba cache compiles, and says so once on stderr (not a terminal here)."""
    code = ("import numpy as np, fsstgpu.arrow_layout as a; "
            "a.is_non_decreasing(np.arange(3)); a.is_non_decreasing(np.arange(5))")
    env = {"NUMBA_CACHE_DIR": str(tmp_path), "PATH": ""}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           check=True)
    assert first.stderr.splitlines() == [COMPILE_NOTICE] and first.stdout == ""
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, check=True)
    assert again.stderr == ""  # loaded from the disk cache: nothing compiles


@pytest.mark.parametrize("module", ["fsstgpu.jit", "fsstgpu.matcher", "fsstgpu.blocks",
                                    "fsstgpu.decoder", "fsstgpu.scan", "fsstgpu.parallel"])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_compile_notice_ignores_functions_without_a_module():
    # the process-wide listener saw every numba compile in the user's process: a function whose
    # __module__ is None crashed it (issue #22)
    import numba

    def f(x):
        return x + 1

    f.__module__ = None
    assert numba.njit(f)(1) == 2
