"""Records that fsstgpu keeps in a Parquet footer's key-value metadata, sealed by a CRC32 of
their own: canonical JSON (sorted keys, no spaces) ``{key: body, "crc32": CRC32 of body}``.
Used by :mod:`fsstgpu.formats.pruning` (the strings' bounds, the statistics' CRCs) and
:mod:`fsstgpu.formats.chunk_record` (where the column chunks are).

>>> from fsstgpu.formats.footer_records import sealed, unsealed
>>> raw = sealed("body", {"n": [1, 2]})
>>> raw, unsealed(raw, "body"), unsealed(raw.replace(b"2]", b"3]"), "body")
(b'{"body":{"n":[1,2]},"crc32":3362722901}', {'n': [1, 2]}, None)
"""

from __future__ import annotations

import json
import zlib

__all__ = ["sealed", "unsealed"]


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def sealed(key: str, body) -> bytes:
    """A footer record: ``{key: body, "crc32": CRC32 of body}``, canonical JSON."""
    return _canonical({"crc32": zlib.crc32(_canonical(body)), key: body})


def unsealed(raw: bytes, key: str):
    """The body of a :func:`sealed` record, or None where its CRC32 does not match (JSON,
    key and type errors are the caller's to name)."""
    outer = json.loads(raw)
    body = outer[key]
    return body if outer["crc32"] == zlib.crc32(_canonical(body)) else None
