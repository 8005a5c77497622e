"""What the installed pyarrow's Parquet reader cannot read back, checked before writing it.

pyarrow before 26 writes a ``fixed_size_list`` column holding a null (the list itself, or a struct
above it) to Parquet and then cannot read the file: "Expected all lists to be of size=2 but
index 1 had size=0", also for files pyarrow wrote itself; pyarrow 26.0.1 still cannot for a
fixed-size list field that is not nullable under a null struct. A file fsstgpu writes must be
readable with the user's own pyarrow, so the Parquet writer refuses such a table there
(:func:`check_readable_back`) and the readers add the reason to that message (:func:`hint`).

>>> import pyarrow as pa
>>> from fsstgpu.formats.parquet_compat import null_fixed_size_lists
>>> required = pa.struct([pa.field("f", pa.list_(pa.int8(), 2), nullable=False)])
>>> null_fixed_size_lists(pa.table({"p": pa.array([{"f": [1, 2]}, None], required)}))
['p']
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.formats.arrow import is_fsst_type

__all__ = ["READS_NULL_FIXED_SIZE_LISTS", "check_readable_back", "hint", "null_fixed_size_lists",
           "required_nulls", "value_checked"]

#: whether this pyarrow reads back a Parquet fixed_size_list holding nulls (fixed in 26)
READS_NULL_FIXED_SIZE_LISTS = int(pa.__version__.split(".")[0]) >= 26

_SYMPTOM = "Expected all lists to be of size="
_LIST_VIEWS = tuple(getattr(pa, name) for name in ("ListViewArray", "LargeListViewArray")
                    if hasattr(pa, name))
_LIST_ARRAYS = (pa.ListArray, pa.LargeListArray, *_LIST_VIEWS)


def null_fixed_size_lists(table: pa.Table) -> list[str]:
    """The columns of ``table`` holding a fixed-size list this pyarrow cannot read back from
    Parquet: before pyarrow 26 one that is null at its own level or under a null struct, from
    26 one of a required field under a null struct (null lists above it hold no entries, and
    read back).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_compat import null_fixed_size_lists
    >>> fl = pa.list_(pa.string(), 2)
    >>> null_fixed_size_lists(pa.table({"s": pa.array([{"f": ["a", "b"]}, None],
    ...                                              pa.struct([("f", fl, False)])),
    ...                                 "l": pa.array([[["a", "b"]], None], pa.list_(fl))}))
    ['s']
    """
    return [name for name, column in zip(table.column_names, table.columns, strict=True)
            if _has_fixed_size_list(column.type)  # (walk no other column's values)
            and any(_holds_null_fixed_size_list(chunk, False) for chunk in column.chunks)]


def _has_fixed_size_list(type_: pa.DataType) -> bool:
    if isinstance(type_, pa.BaseExtensionType):
        return _has_fixed_size_list(type_.storage_type)
    if pa.types.is_fixed_size_list(type_):
        return True
    return any(_has_fixed_size_list(type_.field(i).type) for i in range(type_.num_fields))


def _holds_null_fixed_size_list(array: pa.Array, parent_null: bool,
                                required: bool = False) -> bool:
    """Whether ``array`` holds a fixed-size list pyarrow cannot read back: before 26 any one
    that is null or under a null struct; from 26 (still) one of a required field (not
    nullable) under a null struct ("Expected all lists to be of size=2", pyarrow 26.0.1)."""
    type_ = array.type
    if isinstance(type_, pa.BaseExtensionType):
        return _holds_null_fixed_size_list(array.storage, parent_null, required)
    if pa.types.is_fixed_size_list(type_):
        if (parent_null and required) or (
                not READS_NULL_FIXED_SIZE_LISTS and (parent_null or array.null_count)):
            return True
        return _holds_null_fixed_size_list(_list_values(array), False)
    if pa.types.is_struct(type_):
        null = parent_null or array.null_count > 0
        return any(_holds_null_fixed_size_list(array.field(i), null, not f.nullable)
                   for i, f in enumerate(type_))
    if pa.types.is_map(type_):
        return (_holds_null_fixed_size_list(array.keys, False)
                or _holds_null_fixed_size_list(array.items, False))
    if isinstance(array, _LIST_ARRAYS):
        return _holds_null_fixed_size_list(_list_values(array), False)
    return False


def _list_values(array) -> pa.Array:
    """The values of ``array``'s lists; those of a list array whose lists are all null and
    whose values are fixed-size lists of an extension type (pyarrow 26's flatten() has no
    builder for it, "MakeBuilder") are its values in the offsets' range, and a fixed-size list
    array whose lists are all null over values nesting one (a struct of fsst leaves) has none
    (its flatten() fails the same way: a Parquet row group of such null lists)."""
    try:
        return array.flatten()
    except pa.ArrowNotImplementedError:
        if pa.types.is_fixed_size_list(array.type):
            if array.null_count < len(array):
                raise
            return array.values.slice(0, 0)
        offsets = array.offsets  # (with the array's offset applied)
        start = offsets[0].as_py() if len(offsets) else 0
        return array.values.slice(start, (offsets[-1].as_py() if len(offsets) else 0) - start)


def _required_null(array: pa.Array, nullable: bool, under: np.ndarray | None = None) -> bool:
    """Whether ``array`` holds a null although its field is not nullable, or holds such a field
    that does, where its parents are valid: ``under`` (bools, one per value of ``array``) marks
    the values under valid parents, None all of them. Masks, not filtered copies: a filter
    copied a whole nested column (its strings too) on every Parquet unit."""
    if not len(array) or (under is not None and not under.any()):
        return False  # (what is under a null parent is not written)
    if not nullable and array.null_count and (under is None or (under & ~_valid(array)).any()):
        return True
    type_ = array.type
    if isinstance(type_, pa.BaseExtensionType):
        # (an fsst column's storage is its strings' own business: its nulls are the strings')
        return (not is_fsst_type(type_)) and _required_null(array.storage, True, under)
    nested = (pa.types.is_struct(type_) or isinstance(array, _LIST_ARRAYS)
              or pa.types.is_fixed_size_list(type_))
    if nested and array.null_count:
        under = _valid(array) if under is None else under & _valid(array)
        if under.all():
            under = None
    if pa.types.is_struct(type_):
        return any(_required_null(array.field(i), f.nullable, under) for i, f in enumerate(type_))
    if not nested:
        return False
    values, under = _values_under(array, under)
    if pa.types.is_map(type_):  # (keys / items are the whole child: a slice's own entries)
        return (_required_null(values.field(0), False, under)
                or _required_null(values.field(1), type_.item_field.nullable, under))
    return _required_null(values, type_.value_field.nullable, under)


def _valid(array: pa.Array) -> np.ndarray:
    """``array``'s own validity bitmap as bools: what its ``null_count`` counts (``is_valid()``
    also reads a dictionary's values and a union's children)."""
    bitmap = array.buffers()[0]
    if bitmap is None:  # a null-type array (any other without a bitmap holds no nulls)
        return np.full(len(array), not array.null_count)
    first, stop = array.offset, array.offset + len(array)
    bits = np.frombuffer(bitmap, np.uint8)[first // 8:(stop + 7) // 8]
    return np.unpackbits(bits, bitorder="little")[first % 8:first % 8 + len(array)].view(bool)


def _values_under(array: pa.Array, under: np.ndarray | None) -> tuple:
    """The values of ``array``'s lists and which lie under valid parents (None: all do): with
    a mask, every list's range (a null list's too; the mask leaves its values out)."""
    if under is None:
        return _list_values(array), None
    if pa.types.is_fixed_size_list(array.type):
        size = array.type.list_size
        return (array.values.slice(array.offset * size, len(array) * size),
                np.repeat(under, size))
    if isinstance(array, _LIST_VIEWS):
        # (a list view's ranges may overlap or leave gaps: copy what is under valid parents)
        return _list_values(array.filter(pa.array(under))), None
    offsets = array.offsets.to_numpy()  # (with the array's offset applied)
    return (array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0])),
            np.repeat(under, np.diff(offsets)))


def required_nulls(table: pa.Table) -> list[str]:
    """The columns of ``table`` holding a null where a field is not nullable (under valid
    parents): pyarrow's Parquet writer refuses some (``string``), writes others as values
    (a null struct or list of a required field as ``{'a': ''}`` or ``[]``), and writes an fsst
    column's codes as nulls of a valid string, a file its own reader refuses.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_compat import required_nulls
    >>> schema = pa.schema([pa.field("s", pa.string(), nullable=False)])
    >>> required_nulls(pa.Table.from_arrays([pa.array(["a", None])], schema=schema))
    ['s']
    """
    return [f.name for f, column in zip(table.schema, table.columns, strict=True)
            if (not f.nullable or _holds_required(f.type))
            and any(_required_null(chunk, f.nullable) for chunk in column.chunks)]


def _holds_required(type_) -> bool:
    """Whether a non-nullable field lies inside ``type_`` (only then are its values and
    validity bitmaps looked at)."""
    if isinstance(type_, pa.BaseExtensionType):
        return not is_fsst_type(type_) and _holds_required(type_.storage_type)
    if pa.types.is_map(type_):
        return True  # (a map's keys are never null)
    if pa.types.is_struct(type_):
        return any(not f.nullable or _holds_required(f.type) for f in type_)
    field = getattr(type_, "value_field", None)  # the list types
    return field is not None and (not field.nullable or _holds_required(field.type))


def value_checked(schema: pa.Schema) -> list[int]:
    """The columns of ``schema`` whose values :func:`check_readable_back` must look at: those
    whose type holds a non-nullable field or a fixed-size list (in every other column, the
    type alone rules its refusals out). A writer of many tables of one schema asks once.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_compat import value_checked
    >>> value_checked(pa.schema([("s", pa.string()), ("p", pa.list_(pa.int8(), 2)),
    ...                          pa.field("n", pa.int64(), nullable=False)]))
    [1, 2]
    """
    return [i for i, f in enumerate(schema)
            if not f.nullable or _holds_required(f.type) or _has_fixed_size_list(f.type)]


def check_readable_back(table: pa.Table, rows: int | None = None, columns=None) -> None:
    """Refuse (ValueError) a table this pyarrow would write to Parquet and not read back
    (``rows``: the unit's rows, which a table without columns does not count; ``columns``:
    :func:`value_checked` of its schema where the caller has it, else found here: walking
    the types cost ~25 us a table of five columns, a file's every row group).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_compat import check_readable_back
    >>> check_readable_back(pa.table({"p": pa.array([[1, 2]], pa.list_(pa.int8(), 2))}))
    """
    if rows and not table.num_columns:  # pyarrow's writer keeps no rows without columns
        raise ValueError(f"{rows} rows without columns cannot be written to Parquet (its row "
                         "groups would hold none); write Arrow IPC (.arrow, .arrows) instead")
    if columns is None:
        columns = value_checked(table.schema)
    if not columns:
        return
    if len(columns) < table.num_columns:
        table = table.select(columns)  # (the same refusals, in the same order)
    names = required_nulls(table)
    if names:
        raise ValueError(
            f"column {names[0]!r} holds nulls where its field (or a field inside it) is "
            "declared non-nullable: Parquet cannot hold them (they would be lost or make the "
            "file unreadable); make the field nullable, or write Arrow IPC (.arrow, .arrows)")
    names = null_fixed_size_lists(table)
    if names and READS_NULL_FIXED_SIZE_LISTS:
        raise ValueError(
            f"column {names[0]!r} holds a fixed-size list field that is not nullable under a "
            f"null struct, which pyarrow {pa.__version__} writes to Parquet but cannot read "
            "back: make the field nullable, or write Arrow IPC (.arrow)")
    if names:
        raise ValueError(
            f"column {names[0]!r} holds null fixed-size lists, which pyarrow {pa.__version__} "
            "writes to Parquet but cannot read back (fixed in pyarrow 26): upgrade pyarrow, "
            "or write Arrow IPC (.arrow)")


def hint(message: str) -> str:
    """``message`` of a failed Parquet read, with the reason when it is this pyarrow's.

    Examples
    --------
    >>> from fsstgpu.formats.parquet_compat import hint
    >>> hint("bad page")
    'bad page'
    """
    if READS_NULL_FIXED_SIZE_LISTS or _SYMPTOM not in message:
        return message
    return (f"{message}; pyarrow {pa.__version__} cannot read null fixed-size lists from "
            "Parquet (fixed in pyarrow 26): upgrade pyarrow")
