"""Row-group pruning: which row groups of a Parquet file a ``filters=`` read must look at.

An fsst column's Parquet statistics would be of its codes, which order nothing, so the writer
turns them off and records, per row group, the least and greatest string of each fsst column in
the footer instead (:data:`STRING_STATS_KEY`: canonical JSON with a CRC, strings base64, cut to
:data:`BOUND_BYTES` bytes: a cut least string is still a lower bound, a cut greatest one is
raised to the next prefix). Plain columns prune on Parquet's own statistics, which carry no
checksum: fsstgpu's writer records a CRC32 of what this module reads of every leaf's statistics
in every row group (:data:`STATS_CRC_KEY`, under a CRC of its own and the pyarrow major version
that read them); where the statistics alone would skip a row group and that record does not
vouch for them (another writer's file, a changed byte, another pyarrow), that row group's
values of those columns are read and decide.

``filters`` are pyarrow's: a list of ``(column, op, value)`` tuples (all must hold) or a list of
such lists (any may hold), ops ``==``, ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``,
``not in``; or a ``pyarrow.compute.Expression``, which filters rows but prunes nothing (its
terms cannot be read back from pyarrow). Pruning only skips row groups no row of which can
match; the rows of the others are filtered exactly after decoding.

>>> from fsstgpu.formats.pruning import bounds_of, may_match
>>> import pyarrow as pa
>>> b = bounds_of(pa.array(["kiwi", "apple", None]))
>>> may_match([("s", "==", "banana")], {"s": b}), may_match([("s", ">", "lemon")], {"s": b})
(True, False)
"""

from __future__ import annotations

import base64
import decimal
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fsstgpu.arrow_layout import buffer_values
from fsstgpu.bitmaps import slice_bitmap
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.footer_records import sealed, unsealed
from fsstgpu.formats.parquet_options import input_leaf
from fsstgpu.limits import whole_number
from fsstgpu.native import string_bounds
from fsstgpu.types import is_view, large_type, narrow_offsets

__all__ = ["BOUND_BYTES", "STATS_CRC_KEY", "STRING_STATS_KEY", "bounds_of", "may_match",
           "normalized_filters", "recorded_bounds", "row_filter", "selected_units",
           "statistics_digests", "stats_crc_footer", "stats_footer", "string_buffers"]

#: Footer key of the per-row-group bounds of the fsst columns' strings.
STRING_STATS_KEY = b"fsstgpu.string_stats"
#: Bounds are cut to this many bytes (a long string's prefix bounds it as well).
BOUND_BYTES = 64
#: Footer key of the CRC32s of every row group's leaves' statistics (fsstgpu's outputs).
STATS_CRC_KEY = b"fsstgpu.stats_crc"
#: pyarrow's major version: the statistics' Python values (what the CRCs cover) are its own
_PYARROW_MAJOR = int(pa.__version__.split(".")[0])

_OPS = ("==", "=", "!=", "<", "<=", ">", ">=", "in", "not in")


def bounds_of(values) -> tuple[bytes, bytes | None] | None:
    """``(least, greatest)`` bounds of a string column's values as bytes (greatest None when no
    cut prefix bounds it: all 0xFF), or None when it has no value.

    One compiled pass over the strings (:func:`fsstgpu.native.string_bounds`), bytewise as Arrow
    orders binary and UTF-8 strings; pyarrow's ``min_max`` took a tenth of ``compress_file``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.pruning import bounds_of
    >>> bounds_of(pa.array(["b" * 70, "a"]))
    (b'a', b'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbc')
    """
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    found = [b for b in (_chunk_bounds(c) for c in chunks) if b is not None]
    if not found:
        return None
    least = min(b[0] for b in found)
    greatest = max(b[1] for b in found)
    return least[:BOUND_BYTES], _raised(greatest)


def string_buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(data, offsets, validity)`` of one string / binary array as the compiled passes over
    strings take them: the data buffer, n + 1 int64 offsets (unchecked: those passes check
    them), the bitmap at bit offset 0 or None; views as their large type.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.pruning import string_buffers
    >>> data, offsets, validity = string_buffers(pa.array(["ab", None, "c"]).slice(1))
    >>> offsets.tolist(), validity.tolist()
    ([2, 2, 3], [2])
    """
    if is_view(values.type):
        values = values.cast(large_type(values.type))
    n = len(values)
    buffers = values.buffers()
    dtype = np.int32 if narrow_offsets(values.type) else np.int64
    offsets = buffer_values(buffers[1], dtype, values.offset, n + 1).astype(np.int64)
    data = np.zeros(0, np.uint8) if buffers[2] is None else np.frombuffer(buffers[2], np.uint8)
    validity = None
    if values.null_count:
        validity = slice_bitmap(np.frombuffer(buffers[0], np.uint8), values.offset, n)
    return data, offsets, validity


def _chunk_bounds(values: pa.Array) -> tuple[bytes, bytes] | None:
    """The least and greatest string of one Arrow array, whole (None: no value)."""
    if len(values) == values.null_count:
        return None
    data, offsets, validity = string_buffers(values)
    try:
        # one thread below 65,536 strings, as string_bounds itself cuts the work (the same
        # answer at any thread count): a row group's column need not ask for the cores
        lo, hi = string_bounds(data, offsets, validity,
                               threads=1 if len(values) < 65_536 else None)
    except ValueError as exc:  # offsets the array's own checks would refuse
        raise CorruptDataError(f"string column: {exc}") from None
    if lo < 0:
        return None
    return (data[offsets[lo] : offsets[lo + 1]].tobytes(),
            data[offsets[hi] : offsets[hi + 1]].tobytes())


def _raised(value: bytes) -> bytes | None:
    """The shortest string of at most BOUND_BYTES bytes that is >= ``value``."""
    if len(value) <= BOUND_BYTES:
        return value
    prefix = bytearray(value[:BOUND_BYTES])
    while prefix and prefix[-1] == 0xFF:
        prefix.pop()
    if not prefix:
        return None
    prefix[-1] += 1
    return bytes(prefix)


def stats_footer(per_column: dict) -> bytes:
    """The footer value for ``{column: [bounds of each row group]}`` (as :func:`bounds_of`)."""
    body = {name: [None if b is None else [_b64(b[0]), None if b[1] is None else _b64(b[1])]
                   for b in units] for name, units in per_column.items()}
    return sealed("columns", body)


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _digest(row_group, j: int) -> int:
    """CRC32 of what :func:`_parquet_bounds` reads of leaf ``j``'s statistics in
    ``row_group`` (a pyarrow ``RowGroupMetaData``)."""
    try:
        stats = row_group.column(j).statistics
        seen = (row_group.num_rows,) if stats is None else (
            row_group.num_rows, stats.has_min_max, stats.has_null_count, stats.null_count,
            *((stats.min, stats.max) if stats.has_min_max else ()))
        text = repr(seen)
    except (ValueError, TypeError, OverflowError, UnicodeDecodeError, pa.ArrowException) as exc:
        text = f"unreadable: {type(exc).__name__}"  # (the reader then finds the same, or not)
    return zlib.crc32(text.encode())


def statistics_digests(metadata: pq.FileMetaData) -> list[list[int]]:
    """Each row group's CRC32s of its leaves' statistics, as filtered reads look at them.

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.pruning import statistics_digests
    >>> out = io.BytesIO()
    >>> pq.write_table(pa.table({"n": [1, 2]}), out)
    >>> [len(d) for d in statistics_digests(pq.read_metadata(pa.BufferReader(out.getvalue())))]
    [1]
    """
    out = []
    for k in range(metadata.num_row_groups):
        rg = metadata.row_group(k)
        out.append([_digest(rg, j) for j in range(rg.num_columns)])
    return out


def stats_crc_footer(digests: list[list[int]]) -> bytes:
    """The footer value of :data:`STATS_CRC_KEY` for :func:`statistics_digests`' lists."""
    return sealed("body", {"pyarrow": _PYARROW_MAJOR,
                            "row_groups": [_b64(np.asarray(d, "<u4").tobytes())
                                           for d in digests]})


def _read_stats_crc(metadata: pq.FileMetaData) -> list[np.ndarray] | None:
    """Each row group's recorded CRC32s of its leaves' statistics, or None where the footer
    has no readable record of them for this pyarrow (then nothing is vouched for)."""
    raw = (metadata.metadata or {}).get(STATS_CRC_KEY)
    if raw is None:
        return None
    try:
        body = unsealed(raw, "body")
        if body is None or body["pyarrow"] != _PYARROW_MAJOR:
            return None
        units = body["row_groups"]
        if len(units) != metadata.num_row_groups:
            return None
        return [np.frombuffer(base64.b64decode(u, validate=True), "<u4") for u in units]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
        return None  # (the values decide, as for a file without the record)


def recorded_bounds(metadata: pq.FileMetaData, names) -> dict:
    """``{column: [bounds per row group]}`` of the columns ``names`` that the footer's sound
    :data:`STRING_STATS_KEY` record holds (a damaged record holds none: a writer copying the
    columns computes them again, where a reader refuses it).

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.pruning import STRING_STATS_KEY, recorded_bounds, stats_footer
    >>> out = io.BytesIO()
    >>> footer = {STRING_STATS_KEY: stats_footer({"s": [(b"a", b"b")]})}
    >>> pq.write_table(pa.table({"n": [1]}).replace_schema_metadata(footer), out)
    >>> recorded_bounds(pq.read_metadata(pa.BufferReader(out.getvalue())), ["s", "t"])
    {'s': [(b'a', b'b')]}
    """
    try:
        return _read_stats(metadata, names)
    except CorruptDataError:
        return {}


def _read_stats(metadata: pq.FileMetaData, names) -> dict:
    """``{column: [bounds per row group]}`` from the footer (empty when it has none); a damaged
    record is CorruptDataError, since trusting it would skip row groups that match."""
    raw = (metadata.metadata or {}).get(STRING_STATS_KEY)
    if raw is None:
        return {}
    what = f"the footer's {STRING_STATS_KEY.decode()}"
    try:
        body = unsealed(raw, "columns")
        if body is None:
            raise CorruptDataError(f"{what}: CRC32 mismatch")
        out = {}
        for name in names:
            units = body.get(name)
            if units is None:
                continue
            if not isinstance(units, list) or len(units) != metadata.num_row_groups:
                raise CorruptDataError(f"{what}: column {name!r} has no bounds for every "
                                       "row group")
            out[name] = [None if b is None else
                         (base64.b64decode(b[0], validate=True),
                          None if b[1] is None else base64.b64decode(b[1], validate=True))
                         for b in units]
        return out
    except CorruptDataError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError,
            RecursionError) as exc:  # (json.loads recurses once per nesting level)
        raise CorruptDataError(f"{what}: unreadable ({type(exc).__name__})") from None


def normalized_filters(filters):
    """``filters`` as a list of conjunctions (lists of checked ``(column, op, value)``), or
    None for an Expression or no filters.

    Raises
    ------
    ValueError
        For a term that is not ``(column, op, value)`` with a known op.
    """
    if filters is None or isinstance(filters, pc.Expression):
        return None
    filters = list(filters)
    if not filters:
        raise ValueError("filters= is empty: give conjunctions of (column, op, value) terms")
    if all(isinstance(t, tuple) for t in filters):
        filters = [filters]
    out = []
    for conj in filters:
        terms = []
        for term in conj:
            if (not isinstance(term, tuple) or len(term) != 3 or not isinstance(term[0], str)
                    or term[1] not in _OPS):
                raise ValueError(f"filters: {term!r} is not a (column, op, value) term with op "
                                 f"one of {', '.join(_OPS)}")
            terms.append(term)
        out.append(terms)
    return out


def row_filter(filters) -> pc.Expression | None:
    """The row-level Expression of ``filters`` (an Expression as it is)."""
    if filters is None or isinstance(filters, pc.Expression):
        return filters
    return pq.filters_to_expression(normalized_filters(filters))


def may_match(conjunctions, bounds: dict) -> bool:
    """Tell whether a row group whose columns lie within ``bounds`` (``{column: (least,
    greatest) or None}``, None: no value) may hold a row that ``conjunctions`` select.

    Columns without bounds can match anything.
    """
    conjunctions = normalized_filters(conjunctions) if conjunctions else None
    return conjunctions is None or _may_match(conjunctions, bounds)


def _may_match(conjunctions, bounds: dict) -> bool:
    """:func:`may_match` of conjunctions already normalised (once per read, not per row group)."""
    return any(all(_term_may_hold(term, bounds) for term in conj) for conj in conjunctions)


def _term_may_hold(term, bounds) -> bool:
    name, op, value = term
    if name not in bounds:
        return True
    b = bounds[name]
    if b is None:  # nulls only: a comparison with null holds for no row, but pyarrow's `in`
        # and `not in` are is_in with nulls matching nulls: `not in` holds for a null unless
        # the values hold a null, `in` when they do
        if op not in ("in", "not in"):
            return False
        try:
            has_null = any(v is None for v in value)
        except TypeError:
            return True
        return has_null == (op == "in")
    least, greatest = b
    try:
        values = list(value) if op in ("in", "not in") else [value]
        values = [_comparable(v, least) for v in values]
    except (TypeError, ValueError):
        return True  # a value we cannot order against the bounds: no pruning
    numbers = [v for v in values if v is not None]
    if _numbers(least) and numbers and all(_numbers(v) for v in numbers):
        kinds = {type(least), *map(type, numbers)}
        if float in kinds:
            if decimal.Decimal in kinds and isinstance(least, float):
                return True  # a Decimal against a float column: pyarrow's cast unknown
            # pyarrow compares a number with a float as doubles (an int64 past 2**53 or a
            # decimal rounded), where Python compares them exactly: so must the bounds
            least, greatest = float(least), float(greatest)
            values = [v if v is None else float(v) for v in values]
    try:
        if op in ("==", "=", "in"):
            return any(least <= v and (greatest is None or v <= greatest) for v in values)
        if op == "<":
            return least < values[0]
        if op == "<=":
            return least <= values[0]
        if op == ">":
            return greatest is None or greatest > values[0]
        if op == ">=":
            return greatest is None or greatest >= values[0]
    except TypeError:
        return True
    return True  # != and not in: only a row group of one repeated value could be skipped


def _numbers(value) -> bool:
    """Tell whether ``value`` is an int, float or Decimal (not a bool)."""
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _comparable(value, like):
    """``value`` in the bounds' kind: strings as UTF-8 bytes beside byte bounds."""
    if isinstance(like, bytes) and isinstance(value, str):
        return value.encode()
    if isinstance(like, bytes) and not isinstance(value, (bytes, bytearray)):
        raise TypeError("not a string")
    return value


def _parquet_bounds(metadata: pq.FileMetaData, k: int, names, leaves) -> dict:
    """Parquet's own min/max of row group ``k``'s top-level primitive columns among ``names``
    (``leaves``: the file's :func:`~fsstgpu.formats.parquet_options.leaf_columns`: a leaf path
    alone does not tell a column ``"a.b"`` from the child ``b`` of a struct ``a``)."""
    out = {}
    rg = metadata.row_group(k)
    # only the named columns' chunks are looked at (the caller had pyarrow's reader check
    # their metadata: other chunks' could abort the process when read from Python)
    for path in sorted(names):
        js = None if leaves is None else leaves.get(path)
        if js is None or len(js) != 1 or not 0 <= js[0] < rg.num_columns:
            continue
        j = js[0]
        if input_leaf(rg, j) != path:
            continue
        chunk = rg.column(j)
        # a chunk whose footer entry names another physical type than the schema's: pyarrow's
        # reader may read it all the same, but its statistics throw C++ through Python (abort)
        if chunk.physical_type != metadata.schema.column(j).physical_type:
            raise CorruptDataError(f"row group {k}: column {path!r} is {chunk.physical_type} "
                                   f"in the footer, {metadata.schema.column(j).physical_type} "
                                   "in the schema: the footer was altered")
        stats = chunk.statistics
        if stats is None or not stats.has_min_max:
            if stats is not None and stats.null_count == rg.num_rows and rg.num_rows:
                out[path] = None
            continue
        try:
            out[path] = _bounds(stats.min, stats.max)
        except (UnicodeDecodeError, OverflowError, ValueError):
            # pyarrow decodes a string column's bounds as UTF-8, a timestamp's or date's as
            # datetime (years 1-9999): a bound Python cannot hold bounds nothing, so the row
            # group is read (a valid year-10000 timestamp, or a flipped byte there)
            continue
    return out


def _unit_indices(row_groups) -> list[int]:
    """``row_groups`` as a list of ints; TypeError naming it for anything else: ``int()`` took
    1.5 as row group 1, True as 1 and the str "12" as row groups 1 and 2."""
    try:
        if isinstance(row_groups, (str, bytes)):
            raise TypeError
        return [whole_number(k) for k in row_groups]
    except TypeError:
        raise TypeError(f"row_groups must be a sequence of integers, not {row_groups!r}") from None


def selected_units(source, row_groups=None, filters=None) -> list[int] | None:
    """The units of ``source`` a read with ``row_groups=`` and ``filters=`` must read; None
    for all of them, read in order (so that an IPC input's end is checked: a file cut short
    is truncated, not shorter).

    Parameters
    ----------
    source : fsstgpu.formats.rowgroups.Source
    row_groups : sequence of int, optional
        Those units only (of a Parquet file or an Arrow IPC file), in the order given.
    filters : list or pyarrow.compute.Expression, optional
        See the module docstring; a Parquet file's row groups that cannot match are left out.

    Raises
    ------
    ValueError
        For ``row_groups=`` on an IPC stream, an index past the units, or a bad filter.
    CorruptDataError
        When the footer's bounds are damaged.
    """
    total = source.num_units
    if row_groups is None:
        chosen = None
    else:
        if total is None:
            raise ValueError("row_groups= needs a Parquet or Arrow IPC file, not a stream")
        chosen = _unit_indices(row_groups)
        bad = [k for k in chosen if not 0 <= k < total]
        if bad:
            raise ValueError(f"{source.path}: no row group {bad[0]} (it has {total})")
    conjunctions = normalized_filters(filters)
    if conjunctions is None or source.parquet_metadata is None:
        return chosen
    names = {t[0] for conj in conjunctions for t in conj}
    ours = _read_stats(source.parquet_metadata, names)
    kept = []
    plain = names - set(ours)
    vouched = _read_stats_crc(source.parquet_metadata) if plain else None
    for k in range(total) if chosen is None else chosen:
        trusted = {name: units[k] for name, units in ours.items()}  # (under the record's CRC)
        if not _may_match(conjunctions, trusted):
            continue
        if plain:
            source.check_chunk_metadata(k, plain)
            try:
                claimed = _parquet_bounds(source.parquet_metadata, k, plain,
                                          source.leaf_columns)
            except CorruptDataError as exc:
                raise CorruptDataError(f"{source.path}: {exc}") from None
            # Parquet's statistics carry no checksum: where they alone would skip the row
            # group and fsstgpu's record does not vouch for them, its values of those columns
            # decide (a flipped byte in a maximum skipped rows that match, without a word)
            if not _may_match(conjunctions, {**claimed, **trusted}) and (
                    _vouched(source, k, claimed, vouched)
                    or not _may_match(conjunctions,
                                      {**_values_bounds(source, k, claimed), **trusted})):
                continue
        kept.append(k)
    return None if chosen is None and len(kept) == total else kept


def _vouched(source, k: int, names, recorded) -> bool:
    """Whether ``recorded`` (:func:`_read_stats_crc`) vouches for row group ``k``'s statistics
    of the columns ``names`` (each a single leaf: :func:`_parquet_bounds` found them)."""
    if recorded is None:
        return False
    rg = source.parquet_metadata.row_group(k)
    for name in names:
        j = source.leaf_columns[name][0]
        if j >= len(recorded[k]) or int(recorded[k][j]) != _digest(rg, j):
            return False
    return True


def _values_bounds(source, k: int, names) -> dict:
    """Row group ``k``'s least and greatest values of the plain columns ``names``, read (as
    :func:`_parquet_bounds` gives them: strings as UTF-8 bytes, None for nulls only); a
    column whose values cannot be ordered here gets no bounds."""
    table = source.unit(k, sorted(names))
    out = {}
    for name in names:
        column = table.column(name)
        if len(column) and column.null_count == len(column):
            out[name] = None
            continue
        try:
            least, greatest = (v.as_py() for v in pc.min_max(column).values())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError, OverflowError,
                ValueError):  # (OverflowError: a timestamp past datetime's year 9999)
            continue
        if least is None:  # (no row, or only NaN)
            continue
        out[name] = _bounds(least, greatest)
    return out


def _bounds(least, greatest) -> tuple:
    """A column's bounds as the filters compare them: strings as UTF-8 bytes."""
    if isinstance(least, str):
        return least.encode(), greatest.encode()
    return least, greatest
