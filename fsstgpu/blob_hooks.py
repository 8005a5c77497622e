"""Where the column API finds its byte format: ``formats/blob.py`` installs its writer, reader
and size function here when imported (``import fsstgpu`` does), since the column API lies below
the formats and never imports them (issue #22); :class:`fsstgpu.CompressedStringArray`'s
``to_bytes``, ``from_bytes`` and ``stats`` ask for them here.
"""

from __future__ import annotations

__all__ = ["install_blob_format", "installed_blob_format"]

#: the blob format's functions by name, once installed (``formats/blob.md``)
_BLOB_FORMAT = {}


def install_blob_format(*, dumps, loads, dumped_size) -> None:
    """Give :meth:`CompressedStringArray.to_bytes`, :meth:`~CompressedStringArray.from_bytes`
    and :meth:`~CompressedStringArray.stats` the blob format's functions (called once, by
    ``formats/blob.py``).

    Examples
    --------
    >>> import fsstgpu
    >>> from fsstgpu.blob_hooks import installed_blob_format
    >>> installed_blob_format("loads").__module__
    'fsstgpu.formats.blob'
    """
    _BLOB_FORMAT.update(dumps=dumps, loads=loads, dumped_size=dumped_size)


def installed_blob_format(name: str):
    """The blob format's ``dumps``, ``loads`` or ``dumped_size`` (see :func:`install_blob_format`).

    Examples
    --------
    >>> import fsstgpu
    >>> from fsstgpu.blob_hooks import installed_blob_format
    >>> installed_blob_format("dumps").__name__
    'dumps'
    """
    if name not in _BLOB_FORMAT:
        raise RuntimeError("the blob format is not installed: import fsstgpu first")
    return _BLOB_FORMAT[name]
