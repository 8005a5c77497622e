"""Decoding a compressed file's units: what :func:`~fsstgpu.formats.files.decompress_file` and
the reads of :mod:`fsstgpu.formats.file_reads` share.

:class:`Decoder` decodes the fsst columns of a file's units (and re-encodes the dictionary
columns that were compressed as their values); :func:`restored_schema` is the schema they decode
to; :func:`copied` checks a column that is copied through. :data:`CODECS_KEY` is the schema
metadata in which ``compress_file`` records the input's Parquet codecs.
"""

from __future__ import annotations

import pyarrow as pa

from fsstgpu.columns import joined_chunks
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_read import decode_column
from fsstgpu.formats.dictionaries import NestedRedictionary, Redictionary
from fsstgpu.formats.nested import (
    decode_nested,
    holds_fsst,
    holds_fsst_dictionary,
    plain_type_of,
)
from fsstgpu.formats.parquet_options import validated
from fsstgpu.formats.rowgroups import Source, reading
from fsstgpu.formats.unit_reads import cut_rows

__all__ = ["CODECS_KEY", "Decoder", "copied", "restored_schema"]

# Schema metadata of a compressed Parquet file: the input's codec of each compressed column
# (JSON), so that decompress_file writes the strings back as the input had them.
CODECS_KEY = b"fsstgpu.input_codecs"


def copied(source: Source, name: str, col, unit_index: int):
    """Column ``name`` of a Parquet unit, copied through, after a full validation (an IPC
    unit's columns are checked by the IPC reader)."""
    if source.format != "parquet":
        return col
    with reading(source.path, f"row group {unit_index}: "):
        return validated(col, f"column {name!r}")


def restored_schema(schema: pa.Schema) -> pa.Schema:
    """The schema a compressed file decodes to: each fsst field of its original type (nested
    ones with plain leaves), the record of the input's codecs dropped."""
    metadata = {k: v for k, v in (schema.metadata or {}).items() if k != CODECS_KEY}
    return pa.schema(
        [pa.field(f.name, f.type.original_type, f.nullable, f.metadata) if is_fsst_type(f.type)
         else f.with_type(plain_type_of(f.type)) if holds_fsst(f.type) else f for f in schema],
        metadata=metadata or None)


class Decoder:
    """Decodes the fsst columns of ``source``'s units: :meth:`decode` (no state: safe on any
    thread, in any order) then :meth:`finish` (in unit order: dictionary columns are re-encoded
    per unit for Parquet and IPC streams, one dictionary per row group / batch, and with one
    growing dictionary for an IPC file). A nested column's fsst leaves made from dictionaries
    are dictionary-encoded again chunk by chunk where they are decoded, and, for an IPC file,
    once more with one growing dictionary a leaf (:class:`NestedRedictionary`), as a top-level
    column's are. ``string_bytes`` counts the decoded string bytes; :meth:`convert` is both,
    for :func:`rewrite`.

    ``in_memory``: the units become a Table (a read), whose chunks may each have their own
    dictionary: where an IPC file's values outgrow one dictionary of the column's index type, a
    unit starts a new one (``Redictionary(restart=True)``); written to an IPC file, which holds
    one dictionary per column, they cannot be: the unit that outgrows it raises a ValueError
    naming the column (the output, atomic, is then discarded). A check before writing cost a
    second decode of those columns: 185 -> 385 ms for a 1 M-row file, so it is not made."""

    def __init__(self, source: Source, out_format: str, device: str, *, in_memory=False):
        self.path = source.path
        self.source = source
        self.out_format = out_format
        self.device = device
        self.fsst = {f.name for f in source.schema if is_fsst_type(f.type)}
        self.nested = {f.name for f in source.schema if holds_fsst(f.type)}  # nested.py
        self.redict = {f.name: Redictionary(f.type.original_type, running=out_format == "arrow",
                                            name=f.name, restart=in_memory)
                       for f in source.schema if f.name in self.fsst
                       and f.type.index_type is not None}
        self.redict.update({f.name: NestedRedictionary(f.type, running=True, name=f.name,
                                                       restart=in_memory)
                            for f in source.schema if out_format == "arrow"
                            and f.name in self.nested and holds_fsst_dictionary(f.type)})
        self.string_bytes = 0

    def decode(self, name: str, col, unit_index: int):
        """``(values, string bytes)`` of column ``name`` of one unit (plain columns as they are)."""
        col = self.source.restored(name, col)  # Parquet: the type it was written with
        if name in self.nested:
            with reading(self.path, f"row group {unit_index}, column {name!r}: "):
                return decode_nested(col, self.device)
        if name not in self.fsst:
            return copied(self.source, name, col, unit_index), 0
        with reading(self.path, f"row group {unit_index}, column {name!r}: "):
            return decode_column(col, self.device)

    def finish(self, name: str, decoded) -> pa.Array:
        values, nbytes = decoded
        self.string_bytes += nbytes
        return self.redict[name].encode(values) if name in self.redict else values

    def convert(self, field, col, unit_index):
        return self.finish(field.name, self.decode(field.name, col, unit_index))

    def convert_run(self, units: list, first: int) -> list[list]:
        """:meth:`convert` of every column of consecutive ``units`` (Tables: the source's
        units ``first``, ``first + 1``, ...), for :func:`~fsstgpu.formats.pipeline.rewrite`:
        each unit's columns. On the CPU a top-level fsst column of several units is decoded
        as one (their chunks joined: one check and one decode call, whose fixed costs are
        Python's, holding the GIL: 61 row groups of 2,000 lines took 28 ms unit by unit, 6 ms
        as one), then cut back at the units' bounds and finished unit by unit, in order; one
        that does not decode as one (it names no row group) is decoded unit by unit, which
        names the fault where it lies."""
        joined = {}
        if len(units) > 1 and self.device == "cpu":  # (a GPU's decodes: unit by unit, as ever)
            for name in self.fsst:
                try:
                    joined[name] = self.decode(name, joined_chunks(
                        [unit.column(name) for unit in units]), first)
                except CorruptDataError:
                    pass  # named below, unit by unit
        pieces = {name: cut_rows(values, [unit.num_rows for unit in units], own=self.out_format
                             != "parquet") for name, (values, _) in joined.items()}
        out = []
        for i, unit in enumerate(units):
            out.append([self.convert(field, unit.column(field.name), first + i)
                        if field.name not in joined
                        # (the run's string bytes counted once, with its first unit)
                        else self.finish(field.name, (pieces[field.name][i],
                                                      joined[field.name][1] if i == 0 else 0))
                        for field in self.source.schema])
        return out

