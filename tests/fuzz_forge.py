"""Forged Arrow arrays for the ``ipc_passthrough`` and ``cli`` fuzz targets (``fuzz_files.py``):
one node of a column (the array, a child, a dictionary or its indices) rebuilt with
``pa.Array.from_buffers`` around a forged buffer, null count or offset, or an offsets buffer
patched in a written file's bytes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from fuzz_cases import Rejected, mutate


def _children(arr: pa.Array) -> list[pa.Array]:
    t = arr.type
    if pa.types.is_struct(t):
        return [arr.field(i) for i in range(t.num_fields)]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
            or pa.types.is_map(t):
        return [arr.values]
    return []


def _forge_buffers(arr: pa.Array, rng) -> pa.Array:
    """``arr`` rebuilt with one of its own buffers, its null count or a middle offset forged;
    first and last offsets are left alone (pyarrow's writer slices by them)."""
    t = arr.type
    own = list(arr.buffers()[: t.num_buffers])
    n, null_count = len(arr), -1
    has_offsets = pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t) \
        or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
    choice = int(rng.integers(0, 5))
    if choice == 0 and has_offsets and n >= 2:
        wide = pa.types.is_large_list(t) or pa.types.is_large_string(t)
        offsets = np.frombuffer(own[1], np.int64 if wide else np.int32)[: n + 1].copy()
        i = int(rng.integers(1, n))
        offsets[i] = int(rng.choice([offsets[i] + 1, offsets[i] - 1, offsets[-1] + 1,
                                     offsets[-1] * 4 + 7, -1, 2**31 - 1, offsets[i - 1] - 1]))
        own[1] = pa.py_buffer(offsets.tobytes())
    elif choice == 1:  # all null claimed, bits set (the `cuts` child of finding 1)
        null_count = n
        own[0] = pa.py_buffer(b"\xff" * ((n + 7) // 8)) if rng.random() < 0.5 else own[0]
        if len(own) > 1 and rng.random() < 0.5:
            own[-1] = None  # and no values buffer
    elif choice == 2:
        own[0] = pa.py_buffer(mutate(b"\xff" * ((n + 7) // 8) if own[0] is None
                                     else own[0].to_pybytes(), rng)[: (n + 7) // 8])
    elif choice == 3 and len(own) > 1:
        k = int(rng.integers(1, len(own)))
        old = b"" if own[k] is None else own[k].to_pybytes()
        own[k] = pa.py_buffer(mutate(old, rng)[: len(old)].ljust(len(old), b"\0"))
    else:
        null_count = int(rng.integers(0, n + 2))
    return pa.Array.from_buffers(t, n, own, null_count, 0, _children(arr) or None)


def forge(arr: pa.Array, rng, depth: int = 0) -> pa.Array:
    """``arr`` with one node (itself, a child, a dictionary or its indices) forged."""
    t = arr.type
    if pa.types.is_dictionary(t):
        idx, dic = arr.indices, arr.dictionary
        if rng.random() < 0.5:
            idx = forge(idx, rng, depth + 1)
        else:
            dic = forge(dic, rng, depth + 1)
        return pa.DictionaryArray.from_buffers(t, len(idx), idx.buffers(), dic,
                                               idx.null_count if idx.offset == 0 else -1)
    kids = _children(arr)
    if kids and rng.random() < 0.5:
        k = int(rng.integers(0, len(kids)))
        kids[k] = forge(kids[k], rng, depth + 1)
        if pa.types.is_map(t) and (kids[0].null_count or kids[0].field(0).null_count):
            # pyarrow aborts the process (a failed Check) for a map with null entries or keys
            raise Rejected("map entries or keys with nulls")
        return pa.Array.from_buffers(t, len(arr), list(arr.buffers()[: t.num_buffers]),
                                     arr.null_count, 0, kids)
    return _forge_buffers(arr, rng)


def patch_offsets(data: bytes, batch: pa.RecordBatch, rng) -> bytes:
    """The file's bytes with one offset (any, first and last too) of a column's offsets buffer
    overwritten, found by its bytes (buffers are stored verbatim)."""
    cands = []
    for col in batch.columns:
        for buf in col.buffers():
            if buf is not None and buf.size >= 32:
                raw = buf.to_pybytes()
                pos = data.find(raw)
                if pos >= 0 and data.find(raw, pos + 1) < 0:
                    cands.append((pos, len(raw)))
    if not cands:
        raise Rejected("no unique buffer to patch")
    pos, size = cands[int(rng.integers(0, len(cands)))]
    b = bytearray(data)
    width = int(rng.choice([4, 8]))
    i = pos + width * int(rng.integers(0, size // width))
    value = int(rng.choice([0, 1, 2**31 - 1, 2**31, 2**32 - 1, 10**6, 2**63 - 1]))
    b[i : i + width] = (value % (1 << 8 * width)).to_bytes(width, "little")
    return bytes(b)
