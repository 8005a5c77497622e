"""Decoded values dictionary-encoded again as their column's original dictionary type.

Kept apart from :mod:`fsstgpu.formats.dictionaries` (file dictionaries), which loads
``pyarrow.compute``: ``import fsstgpu`` reaches this module and must not load it.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["dictionary_encoded"]


def dictionary_encoded(col, dictionary_type: pa.DictionaryType, what: str):
    """``col`` (decoded plain values: an Array or ChunkedArray) dictionary-encoded as
    ``dictionary_type``, chunk by chunk; ValueError naming ``what`` where a chunk holds more
    distinct values than the type's indices reach (chunks compressed apart, then joined:
    pyarrow refuses to join such dictionaries, the compressed column has none to refuse).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_encoding import dictionary_encoded
    >>> dictionary_encoded(pa.array(["a", "b", "a"]), pa.dictionary(pa.int8(), pa.string()),
    ...                    "column 'k'").indices.to_pylist()
    [0, 1, 0]
    """
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([dictionary_encoded(c, dictionary_type, what)
                                 for c in col.chunks], type=dictionary_type)
    encoded = col.dictionary_encode()  # (pyarrow.compute loads on first use, not at import)
    try:
        return encoded.cast(dictionary_type)
    except pa.ArrowInvalid:
        raise ValueError(
            f"{what}: a chunk of {len(encoded.dictionary)} distinct values needs a dictionary "
            f"larger than {dictionary_type.index_type} indices reach; fsstgpu.decompress(column)"
            " gives its plain values") from None
