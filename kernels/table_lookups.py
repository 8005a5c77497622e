"""The GPU encoder's lookups of symbol tables (``fsst_encode.cu`` reads them): one table's
(:func:`encode_lookups`, built on the host with NumPy, the oracle), or many tables' laid end to
end at fixed strides (:func:`encode_lookups_many`, a table a block of strings), built by the
compiled :func:`fsstgpu.native.table_lookups` spread over the tables, but for the byte pairs'
entries, which NumPy or, where the lookups go, CuPy on the device fills from 256 a table (a
column of 1024 tables has 135 MB of lookups, mostly those).

>>> from fsstgpu import SymbolTable
>>> from fsstgpu.kernels.table_lookups import TABLE_STRIDES, encode_lookups_many
>>> many = encode_lookups_many([SymbolTable([b"ab"]), SymbolTable([b"http"])])
>>> {name: a.shape for name, a in many.items()} == {
...     name: (2, stride) for name, stride in TABLE_STRIDES.items()}
True
"""

from __future__ import annotations

import numpy as np

from fsstgpu.native import table_lookups

__all__ = ["BUCKETS", "CANDIDATES", "TABLE_STRIDES", "bucket_of", "encode_lookups",
           "encode_lookups_many"]

#: buckets of 3-8 byte symbols (ENC_BUCKETS in the .cu file)
BUCKETS = 1024


def bucket_of(first3: int) -> int:
    """The bucket of a symbol (or position) whose first three bytes are ``first3``
    (little-endian; an int, or a uint64 NumPy array of them): the kernel's ``enc_bucket``."""
    return ((first3 & 0xFFFFFF) * 0x9E3779B1 & 0xFFFFFFFF) >> 22


def encode_lookups(table) -> dict:
    """The encode kernel's lookups of ``table`` as NumPy arrays: ``short_best`` (65536 + 256
    uint16): the best match of at most 2 bytes at a position whose next two bytes (little-endian)
    are the index, then, at 65536 + byte, of a string's last byte, as ``(length << 8) | code``
    (length 0: no symbol, an escape of the byte, which is the low half); ``bucket_range``
    (BUCKETS uint32): each bucket's first and end candidate (``first | end << 16``) among the
    3-8 byte symbols ordered by bucket, longest first; ``cand_vm`` (2 uint64 a candidate): its
    bytes and their mask side by side; ``cand_lc`` (uint16): its ``length | code << 8``."""
    packed = np.asarray(table.packed, np.uint64)
    lengths = np.asarray(table.lengths, np.int64)
    codes = np.arange(len(packed), dtype=np.int64)
    # a byte's best alone (its symbol, else its escape), then a pair's (its symbol, else its
    # first byte's best)
    one_best = np.arange(256, dtype=np.int64)
    one = lengths == 1
    one_best[packed[one].astype(np.int64)] = (1 << 8) | codes[one]
    pair_best = np.tile(one_best, 256)  # (the pair's first byte is its low byte)
    two = lengths == 2
    pair_best[packed[two].astype(np.int64)] = (2 << 8) | codes[two]
    long_ = np.flatnonzero(lengths >= 3)
    buckets = np.array([bucket_of(int(v) & 0xFFFFFF) for v in packed[long_]], np.int64)
    order = np.lexsort((-lengths[long_], buckets))  # by bucket, then longest first
    long_, buckets = long_[order], buckets[order]
    bounds = np.zeros(BUCKETS + 1, np.uint32)
    np.cumsum(np.bincount(buckets, minlength=BUCKETS), out=bounds[1:])
    cand_len = lengths[long_].astype(np.uint64)
    masks = np.where(cand_len == 8, np.uint64(2**64 - 1),
                     (np.uint64(1) << (np.uint64(8) * np.minimum(cand_len, 7))) - np.uint64(1))
    return {"short_best": np.concatenate((pair_best, one_best)).astype(np.uint16),
            "bucket_range": bounds[:-1] | (bounds[1:] << np.uint32(16)),
            "cand_vm": np.stack((packed[long_], masks), axis=1).reshape(-1),
            "cand_lc": (cand_len | (codes[long_].astype(np.uint64) << np.uint64(8))).astype(
                np.uint16)}


#: the most 3-8 byte symbols of a table (ENC_CAND_STRIDE in the .cu file)
CANDIDATES = 256

#: each table's entries in :func:`encode_lookups_many`'s arrays (ENC_SHORT_STRIDE, ENC_BUCKETS
#: and ENC_CAND_STRIDE in the .cu file)
TABLE_STRIDES = {"short_best": 65536 + 256, "bucket_range": BUCKETS,
                 "cand_vm": 2 * CANDIDATES, "cand_lc": CANDIDATES}


def encode_lookups_many(tables, xp=np) -> dict:
    """:func:`encode_lookups` of every table of ``tables``, table ``t``'s in row ``t`` of
    arrays of :data:`TABLE_STRIDES` columns (the candidates' rows padded with zeros past the
    table's own), made with the array module ``xp`` (NumPy, or CuPy: on the current device,
    the byte pairs' entries filled there).

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.kernels.table_lookups import encode_lookups, encode_lookups_many
    >>> tables = [SymbolTable([b"ab", b"http"]), SymbolTable([b"x"])]
    >>> many = encode_lookups_many(tables)
    >>> one = encode_lookups(tables[0])
    >>> bool((many["short_best"][0] == one["short_best"]).all())
    True
    >>> many["cand_lc"][0, : len(one["cand_lc"])].tolist() == one["cand_lc"].tolist()
    True
    """
    tables = list(tables)
    first = np.zeros(len(tables) + 1, np.int64)
    np.cumsum([len(t.lengths) for t in tables], out=first[1:])
    one_best, two_at, two_value, bucket_range, cand_vm, cand_lc = table_lookups(
        np.concatenate([np.asarray(t.packed, np.uint64) for t in tables] +
                       [np.zeros(0, np.uint64)]),
        np.concatenate([np.asarray(t.lengths, np.uint8) for t in tables] +
                       [np.zeros(0, np.uint8)]), first)
    # a table's pair entries as 257 rows of 256: a pair (its first byte | its second << 8) at
    # row [second][first], each row the bytes' best alone (a pair's best without a 2-byte
    # symbol is its first byte's), then the last bytes' row; the 2-byte symbols on top
    rows = xp.empty((len(tables), 257, 256), np.uint16)
    one_x = xp.asarray(one_best)
    rows[:, :256, :] = one_x[:, None, :]
    rows[:, 256, :] = one_x
    if two_at.size:
        rows.reshape(-1)[xp.asarray(two_at)] = xp.asarray(two_value)
    return {"short_best": rows.reshape(len(tables), TABLE_STRIDES["short_best"]),
            "bucket_range": xp.asarray(bucket_range), "cand_vm": xp.asarray(cand_vm),
            "cand_lc": xp.asarray(cand_lc)}
