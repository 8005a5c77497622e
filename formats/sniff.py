"""Which file format a path holds or should hold: by name (suffix or ``format=``) or by magic bytes.

Three formats: ``"parquet"`` (``.parquet``, ``.pq``), ``"arrow"``, the Arrow IPC file format
(``.arrow``, ``.feather``, ``.ipc``), and ``"arrows"``, the Arrow IPC stream format
(``.arrows``). An output's format comes from ``format=`` or its suffix, and an unknown suffix is
refused rather than guessed; an input is recognised by its first bytes whatever its name.

>>> from fsstgpu.formats.sniff import format_from_name
>>> format_from_name("out.feather"), format_from_name("out.csv")
('arrow', None)
"""

from __future__ import annotations

import os
from pathlib import Path

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.locations import Url, file_size, local_text

__all__ = [
    "FORMATS",
    "SUFFIXES",
    "detect_format",
    "format_from_name",
    "output_format",
    "sniff_format",
    "suffix_for",
]

#: The formats, as ``format=`` and ``--format`` name them.
FORMATS = ("parquet", "arrow", "arrows")
#: File-name suffixes (lower case) and the format each one names.
SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".ipc": "arrow",
    ".arrows": "arrows",
}
_ALIASES = {"ipc": "arrow", "feather": "arrow", "stream": "arrows", "arrow-stream": "arrows",
            "ipc-stream": "arrows"}


def format_from_name(path, format: str | None = None) -> str | None:
    """The format named by ``format``, else by the file name's suffix, else None.

    Raises
    ------
    ValueError
        When ``format`` is given and names no format (the message lists them).

    Examples
    --------
    >>> from fsstgpu.formats.sniff import format_from_name
    >>> format_from_name("x.PQ"), format_from_name("x.bin", "feather"), format_from_name("x.bin")
    ('parquet', 'arrow', None)
    """
    if format is not None:
        # (a format that is not a str is not one: format.lower() failed as an AttributeError)
        fmt = _ALIASES.get(format.lower(), format.lower()) if isinstance(format, str) else None
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
        return fmt
    return SUFFIXES.get(Path(local_text(path)).suffix.lower())  # (a file:// URL's path)


def output_format(path, format: str | None = None) -> str:
    """The format to write ``path`` in: ``format`` if given, else the one its suffix names.

    Raises
    ------
    ValueError
        When neither says (an unknown suffix is refused, not guessed); the message lists the
        suffixes.

    Examples
    --------
    >>> from fsstgpu.formats.sniff import output_format
    >>> output_format("x.pq"), output_format("x.bin", "arrows")
    ('parquet', 'arrows')
    """
    fmt = format_from_name(path, format)
    if fmt is None:
        suffix = Path(path).suffix or "no suffix"
        known = ", ".join(SUFFIXES)
        raise ValueError(f"{path}: cannot tell the output format from {suffix!r}; name the file "
                         f"with one of {known}, or choose the format with --format / format= "
                         f"({', '.join(FORMATS)})")
    return fmt


def suffix_for(format: str) -> str:
    """The usual suffix of a format: ``.parquet``, ``.arrow`` or ``.arrows``.

    >>> from fsstgpu.formats.sniff import suffix_for
    >>> suffix_for("arrows"), suffix_for("ipc")
    ('.arrows', '.arrow')
    """
    return next(s for s, f in SUFFIXES.items() if f == format_from_name("", format))


def detect_format(path) -> str | None:
    """Recognise a Parquet file, Arrow IPC file or IPC stream by its first bytes (else None).

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.sniff import detect_format
    >>> p = os.path.join(tempfile.mkdtemp(), "x.txt")
    >>> _ = open(p, "w").write("hello")
    >>> detect_format(p) is None
    True
    """
    if isinstance(path, Url):
        with path.open() as f:
            head = f.read(8)
    else:
        with open(os.fspath(path), "rb") as f:
            head = f.read(8)
    if head[:4] == b"PAR1":
        return "parquet"
    if head[:6] == b"ARROW1":
        return "arrow"
    if head[:4] == b"\xff\xff\xff\xff":  # the IPC stream's continuation marker
        return "arrows"
    return None


def sniff_format(path) -> str:
    """Like :func:`detect_format`, but raise CorruptDataError naming the file when unknown.

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.sniff import sniff_format
    >>> p = os.path.join(tempfile.mkdtemp(), "x.parquet")
    >>> _ = open(p, "wb").write(b"not parquet")
    >>> try:
    ...     sniff_format(p)
    ... except ValueError as exc:  # CorruptDataError is a ValueError
    ...     print(str(exc) == p + ": not a Parquet or Arrow IPC file")
    True
    """
    fmt = detect_format(path)
    if fmt is None:
        size = file_size(path)
        what = "an empty file" if size == 0 else "not a Parquet or Arrow IPC file"
        raise CorruptDataError(f"{path}: {what}")
    return fmt
