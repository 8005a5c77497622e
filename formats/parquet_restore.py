"""Columns read from Parquet cast back to the Arrow types they were written with.

Parquet changes some Arrow types (``date64`` is read back as ``date32``, a dictionary of
numbers as its values, list items named ``element``, ...); fsstgpu's readers cast each column of
a file whose stored schema they trust back to it (:mod:`fsstgpu.formats.parquet_options`,
``checked_schema``).
"""

from __future__ import annotations

import pyarrow as pa

from fsstgpu.formats.nested import child_fields, is_container, map_leaves

__all__ = ["restore"]


def restore(column, type_: pa.DataType):
    """``column`` (an Array or ChunkedArray read from Parquet) cast back to ``type_``.

    An extension type Parquet lost (its storage's types changed, e.g. by a ``version="1.0"``
    writer) is rebuilt around its storage cast back. A value the cast cannot keep exactly
    raises ``pyarrow.ArrowInvalid`` (read as corrupt data).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_restore import restore
    >>> restore(pa.array([1000], pa.timestamp("ms")), pa.timestamp("s")).type
    TimestampType(timestamp[s])
    """
    if column.type == type_:
        return column
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([restore(c, type_) for c in column.chunks], type=type_)
    if isinstance(type_, pa.BaseExtensionType):
        storage = column.storage if isinstance(column, pa.ExtensionArray) else column
        return pa.ExtensionArray.from_storage(type_, restore(storage, type_.storage_type))
    if pa.types.is_dictionary(type_) and not pa.types.is_dictionary(column.type):
        # Parquet keeps dictionaries of strings only: a dictionary of numbers comes back as
        # its values (pyarrow has no cast from values to a dictionary)
        return restore(column, type_.value_type).dictionary_encode().cast(type_)
    try:
        return column.cast(type_)
    except pa.ArrowNotImplementedError:
        if pa.types.is_list_view(type_) or pa.types.is_large_list_view(type_):
            # no cast reaches into a list view's values (list_view<dictionary<large_string>>
            # comes back as list_view<dictionary<string>>): its values restored, views kept
            cls = pa.ListViewArray if pa.types.is_list_view(type_) else pa.LargeListViewArray
            return cls.from_arrays(column.offsets, column.sizes,
                                   restore(column.values, type_.value_type), type=type_,
                                   mask=column.is_null() if column.null_count else None)
        if not is_container(type_):
            raise
    # a dictionary leaf of a nested type comes back as its values too (list<dictionary<
    # double>> as list<double>), which no cast turns back: each leaf restored in place
    return map_leaves(column, lambda key, leaf: restore(leaf, _child_type(type_, key)),
                      lambda leaf_type: True).cast(type_)


def _child_type(type_: pa.DataType, key: tuple) -> pa.DataType:
    """The type of the child of ``type_`` that ``key`` (child indices, as
    :func:`~fsstgpu.formats.nested.map_leaves` gives them) names."""
    for i in key:
        type_ = child_fields(type_)[i].type
    return type_
