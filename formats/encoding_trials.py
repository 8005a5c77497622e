"""The Parquet encodings of fsst columns' leaves that are chosen by a trial on the data.

**Codes, prefix-coded.** An fsst column's codes are written back to back
(``DELTA_LENGTH_BYTE_ARRAY``) and zstd then finds the repeats across strings. That fails where
consecutive strings share long prefixes (sorted or sequential keys): each string's codes differ
from the last one's in a byte or two, below zstd's shortest match, so a column of
``ID-00000001``, ``ID-00000002``, ... came out 3.7x larger than pyarrow's zstd Parquet of the
strings. ``DELTA_BYTE_ARRAY`` stores each string's codes as the length of the prefix it shares
with the previous one plus the rest: that column became 60x smaller. On text without shared
prefixes it costs 0-5% and decodes slower, so it is kept only when its trial is at most
:data:`PREFIX_GAIN` of the back-to-back one. Columns whose codes are dictionary-encoded (they
repeat) are not tried.

**Lengths of repeating columns.** Their codes are dictionary-encoded; their string lengths were
always written plain, since zstd finds runs of repeated lines better than it compresses
dictionary indices. Categories in random order have no runs: ten words in a million rows had
plain lengths of 495 KB against 222 KB as a dictionary. The smaller of the two is kept.

A trial writes the first :data:`SAMPLE_ROWS` rows' leaf both ways with the file's codec and
level, the columns at once (pyarrow's writer releases the GIL). Measured in
``formats/files.md``.

Examples
--------
>>> import pyarrow as pa
>>> import fsstgpu
>>> from fsstgpu.formats.arrow_storage import to_extension_array
>>> from fsstgpu.formats.encoding_trials import tried_encodings
>>> ids = fsstgpu.compress(pa.array([f"ID-{i:08d}" for i in range(20000)]))
>>> words = fsstgpu.compress(pa.array([f"{i * 7919 % 10007} apples" for i in range(20000)]))
>>> table = pa.table({"id": to_extension_array(ids), "w": to_extension_array(words)})
>>> tried_encodings(table, ["id", "w"], repeating=(), codec="zstd", level=3)
(['id'], [])
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.parallel import usable_cores

__all__ = ["PREFIX_GAIN", "SAMPLE_ROWS", "tried_encodings"]

#: Rows of a column's first unit whose leaves are written both ways.
SAMPLE_ROWS = 1 << 16
#: Prefix-coded codes are kept when their trial is at most this share of the back-to-back one:
#: they decode slower (each string is rebuilt from the one before), so a few percent is not
#: worth it.
PREFIX_GAIN = 0.8


def _written_size(values: pa.Array, codec: str, level: int | None, *,
                  encoding: str | None = None) -> int:
    """Bytes of a Parquet file of ``values`` alone: dictionary-encoded when ``encoding`` is
    None, else in ``encoding``."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"v": values}), sink, compression=codec,
                   compression_level=level if codec == "zstd" else None,
                   use_dictionary=encoding is None, write_statistics=False,
                   column_encoding=None if encoding is None else {"v": encoding})
    return sink.getvalue().size


def _sample_leaf(column, leaf: str) -> pa.Array | None:
    """Leaf ``leaf`` of the first :data:`SAMPLE_ROWS` rows of fsst ``column`` (None when its
    storage has no such leaf)."""
    column = column.slice(0, SAMPLE_ROWS)
    if isinstance(column, pa.ChunkedArray):
        column = (column.combine_chunks() if column.num_chunks
                  else pa.array([], column.type))
    storage = column.storage if isinstance(column, pa.ExtensionArray) else column
    if not pa.types.is_struct(storage.type):  # version 1: the codes alone
        return storage if leaf == "codes" else None
    index = storage.type.get_field_index(leaf)
    if index < 0:
        return None
    return storage.flatten()[index]  # (the slice's offset applied, unlike .field())


def _prefix_pays(column, codec: str, level: int | None) -> bool:
    codes = _sample_leaf(column, "codes")
    if codes is None or len(codes) - codes.null_count < 2:
        return False
    back_to_back = _written_size(codes, codec, level, encoding="DELTA_LENGTH_BYTE_ARRAY")
    prefixed = _written_size(codes, codec, level, encoding="DELTA_BYTE_ARRAY")
    return prefixed <= PREFIX_GAIN * back_to_back


def _plain_lengths_pay(column, codec: str, level: int | None) -> bool:
    lengths = _sample_leaf(column, "lengths")
    if lengths is None or len(lengths) == 0:
        return True  # (nothing to tell: as before)
    return (_written_size(lengths, codec, level, encoding="PLAIN")
            <= _written_size(lengths, codec, level))


def tried_encodings(table: pa.Table, names, *, repeating, codec: str,
                    level: int | None) -> tuple[list[str], list[str]]:
    """The encodings of fsst columns ``names`` of ``table`` chosen by trial.

    Returns the columns whose codes are written ``DELTA_BYTE_ARRAY`` (of those not in
    ``repeating``) and those whose lengths are written plain (of the ``repeating`` ones; the
    others' lengths are dictionary-encoded); ``codec`` and ``level`` are the file's.
    """
    names = list(names)
    jobs = [(_plain_lengths_pay if name in repeating else _prefix_pays, table.column(name))
            for name in names]
    workers = min(len(jobs), usable_cores())
    if workers < 2:
        flags = [job(column, codec, level) for job, column in jobs]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fsstgpu-trial") as pool:
            flags = list(pool.map(lambda j: j[0](j[1], codec, level), jobs))
    prefixed = [n for n, flag in zip(names, flags, strict=True) if flag and n not in repeating]
    plain_lengths = [n for n, flag in zip(names, flags, strict=True) if flag and n in repeating]
    return prefixed, plain_lengths
