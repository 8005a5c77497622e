"""Choosing the string columns of a file to work on, with errors that list the valid choices.

>>> import pyarrow as pa
>>> from fsstgpu.formats.selection import select_columns
>>> schema = pa.schema([("url", pa.string()), ("n", pa.int64()), ("raw", pa.binary())])
>>> select_columns(schema), select_columns(schema, "raw")
(['url', 'raw'], ['raw'])
"""

from __future__ import annotations

import pyarrow as pa

from fsstgpu.errors import FsstGpuError
from fsstgpu.formats.nested import holds_strings
from fsstgpu.types import is_string_like

__all__ = ["ORDERED_REASON", "ColumnSelectionError", "ColumnTypeError", "select_columns",
           "string_columns"]

#: why an ordered dictionary column is not compressed (it is copied as it is)
ORDERED_REASON = ("its order is its meaning, and a compressed column comes back with its values "
                  "in order of first occurrence; it is copied as it is (cast it to an unordered "
                  "dictionary to compress it)")


class ColumnSelectionError(FsstGpuError, ValueError):
    """Columns were named that the file does not have, or none were: a caller's mistake.

    The message names the file and lists the columns that could have been chosen. Under
    :class:`~fsstgpu.errors.FsstGpuError`, so that one ``except`` catches all that fsstgpu
    raises on purpose.
    """


class ColumnTypeError(ColumnSelectionError, TypeError):
    """A named column exists but is not a string / binary column (nor a dictionary of one)."""


def string_columns(schema: pa.Schema, *, nested: bool = False) -> list[str]:
    """The names of the string-like columns (see :func:`fsstgpu.types.is_string_like`; not an
    ordered dictionary: :data:`ORDERED_REASON`), and with ``nested`` the list / struct / map
    columns holding strings (:func:`fsstgpu.formats.nested.holds_strings`): those that can be
    chosen.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.selection import string_columns
    >>> string_columns(pa.schema([("n", pa.int8()), ("d", pa.dictionary(pa.int8(), pa.binary())),
    ...                           ("o", pa.dictionary(pa.int8(), pa.string(), ordered=True))]))
    ['d']
    """
    return [f.name for f in schema if _choosable(f.type, nested)]


def _choosable(type_: pa.DataType, nested: bool) -> bool:
    """Whether a column of ``type_`` can be chosen (:func:`string_columns`)."""
    return (is_string_like(type_) and not _ordered(type_)) or (nested and holds_strings(type_))


def _ordered(type_: pa.DataType) -> bool:
    return pa.types.is_dictionary(type_) and type_.ordered


def is_default_column(field: pa.Field, dictionaries: bool = True, nested: bool = False) -> bool:
    """Whether :func:`select_columns` with ``columns=None`` chooses ``field`` (never an
    ordered dictionary: :data:`ORDERED_REASON`)."""
    return (_choosable(field.type, nested)
            and (dictionaries or not pa.types.is_dictionary(field.type)))


def _choices(schema: pa.Schema, nested: bool = False) -> str:
    names = [_shown(n) for n in string_columns(schema, nested=nested)]
    return f"string columns: {', '.join(names)}" if names else "it has no string column"


def _shown(name: str) -> str:
    """``name`` as a list of names shows it: quoted when it holds a comma or blanks at an end
    (else ``a,b`` and `` c`` would read as other names)."""
    return repr(name) if "," in name or name != name.strip() or not name else name


def _split(text: str, names: list[str]) -> list[str]:
    """The column names in one comma-separated string: the whole string when a column has
    that name (names may hold commas), else each piece, as it is when a column has that name
    (blanks kept), else without the blanks around it."""
    if text in names:
        return [text]
    return [piece if piece in names else piece.strip()
            for piece in text.split(",") if piece in names or piece.strip()]


def select_columns(schema: pa.Schema, columns=None, *, source="the file",
                   dictionaries: bool = True, nested: bool = False) -> list[str]:
    """The string columns to work on: those named in ``columns``, or every one.

    Parameters
    ----------
    schema : pyarrow.Schema
    columns : str, sequence of str, or None
        Column names, or one comma-separated string of them (blanks around the commas are
        ignored, unless a column's name has them; a name holding a comma is given alone or in
        a list); None means every string-like column (but dictionary-encoded ones when
        ``dictionaries`` is false). Repeated names count once.
    source : str or os.PathLike
        What to call the file in messages.
    dictionaries : bool
        Whether ``columns=None`` includes dictionary-encoded string columns.
    nested : bool
        Whether list / struct / map columns that hold strings count as string columns (in
        ``columns=None`` and when named).

    Raises
    ------
    ColumnSelectionError
        When ``columns`` names no column at all (e.g. ``""``), a column the schema lacks, or a
        name the schema holds twice.
    ColumnTypeError
        When a named column is not string-like.
    """
    if columns is None:  # by field: a table may hold several columns of one name
        return [f.name for f in schema if is_default_column(f, dictionaries, nested)]
    if isinstance(columns, str):  # "a, b": names around commas, blanks ignored
        columns = _split(columns, schema.names)
    elif isinstance(columns, (bytes, bytearray)) or not hasattr(columns, "__iter__"):
        # (b"s" was the names 115; 5 "'int' object is not iterable")
        raise TypeError(f"columns must be a str or a sequence of str, not "
                        f"{type(columns).__name__}: {columns!r}")
    chosen = list(dict.fromkeys(columns))
    if not chosen:
        raise ColumnSelectionError(f"{source}: no column chosen (the list is empty); "
                                   f"{_choices(schema, nested)}")
    for name in chosen:
        if name not in schema.names:
            raise ColumnSelectionError(f"{source}: no column named {name!r}; "
                                       f"{_choices(schema, nested)}")
        if schema.names.count(name) > 1:
            raise ColumnSelectionError(f"{source}: column name {name!r} is ambiguous (the file "
                                       "has several columns of that name)")
        ftype = schema.field(name).type
        if _ordered(ftype):
            raise ColumnTypeError(f"{source}: column {name!r} is an ordered dictionary ({ftype}):"
                                  f" {ORDERED_REASON}; {_choices(schema, nested)}")
        if not _choosable(ftype, nested):
            raise ColumnTypeError(f"{source}: column {name!r} is {ftype}, not a string/binary "
                                  f"column; {_choices(schema, nested)}")
    return chosen
