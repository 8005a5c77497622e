"""Deterministic synthetic string columns for tests and benchmarks.

Every generator takes ``rows`` (how many values) and ``seed`` and returns a :class:`pyarrow.Array`
of ``pa.string()`` (``pa.binary()`` for :func:`binary`; the ``large_`` variant only when the data
would not fit 32-bit offsets). The values look enough like real data -- shared prefixes, a Zipf-like
vocabulary, fixed formats -- that FSST has structure to find, and they are built with NumPy and
Arrow compute kernels rather than Python loops, so a million rows take well under a few seconds.

Determinism: the same ``(name, rows, seed)`` gives the same bytes on every machine. Randomness
comes only from the raw 64-bit output of PCG64 (``numpy.random.Generator(PCG64(...))``'s bit
generator) seeded through a ``SeedSequence`` of ``(crc32(name), seed)``; NumPy guarantees that raw
stream across versions, whereas its distribution methods may change (NEP 19). All draws are turned
into integers with integer arithmetic only -- no floating-point ``exp``/``log`` whose last bit may
differ between CPUs -- and bytes are read little-endian whatever the machine.

>>> from fsstgpu.datasets.generators import generate
>>> generate("uuids", 2, seed=1).equals(generate("uuids", 2, seed=1))
True
>>> sorted(GENERATORS)[:3]
['binary', 'emails', 'hex_ids']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fsstgpu.datasets.randomness import Random
from fsstgpu.datasets.vocabulary import (
    ARABIC,
    ASCII_FIRST,
    ASCII_LAST,
    CITIES,
    CJK,
    CYRILLIC,
    DOMAINS,
    EMOJI,
    EXCEPTIONS,
    FIRST_NAMES,
    GREEK,
    LAST_NAMES,
    LATIN_ACCENTED,
    MAIL_PROVIDERS,
    RESOURCES,
    SERVICES,
    TABLES,
    TAGS,
    TLDS,
    WORDS,
)
from fsstgpu.limits import whole_number
from fsstgpu.types import INT32_MAX

__all__ = [
    "GENERATORS",
    "binary",
    "emails",
    "generate",
    "hex_ids",
    "json_records",
    "log_lines",
    "long_strings",
    "multilingual",
    "null_heavy",
    "person_names",
    "urls",
    "uuids",
]



def _from_buffers(lengths: np.ndarray, data, *, binary: bool = False) -> pa.Array:
    """A string (or binary) array from per-value lengths and the concatenated bytes."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    large = offsets[-1] > INT32_MAX
    if binary:
        type_ = pa.large_binary() if large else pa.binary()
    else:
        type_ = pa.large_string() if large else pa.string()
    if not large:
        offsets = offsets.astype(np.int32)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))]
    return pa.Array.from_buffers(type_, len(lengths), buffers)


def _fixed(n: int, *parts) -> np.ndarray:
    """Rows of equal width: ``parts`` are ``bytes`` constants or ``(n, w)`` uint8 matrices."""
    columns = [
        np.broadcast_to(np.frombuffer(p, dtype=np.uint8), (n, len(p))) if isinstance(p, bytes)
        else p
        for p in parts
    ]
    return np.ascontiguousarray(np.concatenate(columns, axis=1))


def _fixed_strings(matrix: np.ndarray) -> pa.Array:
    n, width = matrix.shape
    return _from_buffers(np.full(n, width, dtype=np.int64), matrix.reshape(-1))


def _ragged(matrix: np.ndarray, lengths: np.ndarray, *, binary: bool = False) -> pa.Array:
    """Row i is the first ``lengths[i]`` bytes of ``matrix[i]``."""
    keep = np.arange(matrix.shape[1]) < lengths[:, None]
    return _from_buffers(lengths, matrix[keep], binary=binary)


def _digits(values: np.ndarray, width: int) -> np.ndarray:
    """Zero-padded decimal digits of non-negative integers, as an ``(n, width)`` matrix."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return ((np.asarray(values, dtype=np.int64)[:, None] // powers) % 10 + 48).astype(np.uint8)


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_HEX_PAIRS = np.stack([_HEX[np.arange(256) >> 4], _HEX[np.arange(256) & 15]], axis=1)


def _hex_matrix(rnd: Random, n: int, width: int) -> np.ndarray:
    """``(n, width)`` random lowercase hex digits (``width`` even)."""
    return _HEX_PAIRS[rnd.bytes(n * (width // 2))].reshape(n, width)


def _vocab(words: Sequence[str], *, binary: bool = False) -> pa.Array:
    return pa.array(words, type=pa.binary() if binary else pa.string())


def _pick(words: Sequence[str] | pa.Array, indices: np.ndarray) -> pa.Array:
    array = words if isinstance(words, pa.Array) else _vocab(words)
    return array.take(pa.array(indices, type=pa.int64()))


def _zipf_pick(rnd: Random, words: Sequence[str], n: int) -> pa.Array:
    return _pick(words, rnd.zipf(n, len(words)))


def _cat(*parts) -> pa.Array:
    """Row-wise concatenation of arrays and constants (``bytes`` constants for binary)."""
    binary = any(isinstance(p, bytes) or (isinstance(p, pa.Array) and pa.types.is_binary(p.type))
                 for p in parts)
    return pc.binary_join_element_wise(*parts, b"" if binary else "")


def _num(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(np.asarray(values, dtype=np.int64)), pa.string())


def _join_runs(items: pa.Array, counts: np.ndarray, separator) -> pa.Array:
    """Row i joins the next ``counts[i]`` entries of ``items`` with ``separator``."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), items), separator)


def _sentence(rnd: Random, words: Sequence[str], n: int, low: int, high: int, sep=" "):
    counts = rnd.between(n, low, high)
    return _join_runs(_zipf_pick(rnd, words, int(counts.sum())), counts, sep)


def _where(mask: np.ndarray, if_true, if_false) -> pa.Array:
    return pc.if_else(pa.array(mask, type=pa.bool_()), if_true, if_false)


def _scatter(kinds: np.ndarray, builders: Sequence[Callable[[int], pa.Array]]) -> pa.Array:
    """Row i comes from ``builders[kinds[i]]``; each builder makes all of its rows at once."""
    parts, order = [], []
    for k, build in enumerate(builders):
        rows = np.flatnonzero(kinds == k)
        parts.append(build(len(rows)))
        order.append(rows)
    positions = np.concatenate(order)
    inverse = np.empty_like(positions)
    inverse[positions] = np.arange(len(positions))
    return pa.concat_arrays(parts).take(pa.array(inverse, type=pa.int64()))


def _timestamps(rnd: Random, n: int) -> np.ndarray:
    """Increasing millisecond timestamps from 2024-03-01, as ``YYYY-MM-DDTHH:MM:SS.mmm`` bytes."""
    ms = 1_709_251_200_000 + np.cumsum(rnd.below(n, 2_000))
    days, in_day = np.divmod(ms, 86_400_000)
    # Civil date from days since 1970-01-01 (H. Hinnant's algorithm), integers only.
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + (month <= 2)
    hour, rest = np.divmod(in_day, 3_600_000)
    minute, rest = np.divmod(rest, 60_000)
    second, milli = np.divmod(rest, 1_000)
    return _fixed(
        n, _digits(year, 4), b"-", _digits(month, 2), b"-", _digits(day, 2), b"T",
        _digits(hour, 2), b":", _digits(minute, 2), b":", _digits(second, 2), b".",
        _digits(milli, 3),
    )


# --------------------------------------------------------------------------------------------
# The generators.


def urls(rows: int, seed: int = 0) -> pa.Array:
    """Web URLs: a few schemes and popular hosts, word paths, numeric ids and query strings.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import urls
    >>> col = urls(1000)
    >>> all(u.startswith("http") for u in col.to_pylist())
    True
    """
    rnd = Random("urls", seed)
    n = rows
    scheme = _where(rnd.percent(n, 85), "https://", "http://")
    www = _where(rnd.percent(n, 50), "www.", "")
    popular = _zipf_pick(rnd, DOMAINS, n)
    tail = _cat(_zipf_pick(rnd, WORDS[20:], n), _zipf_pick(rnd, WORDS[20:], n), ".",
                _zipf_pick(rnd, TLDS, n))
    host = _where(rnd.percent(n, 70), popular, tail)
    path = _sentence(rnd, WORDS[20:], n, 0, 4, "/")
    numeric = _where(rnd.percent(n, 30), _cat("/", _num(rnd.below(n, 1_000_000))), "")
    ext = _pick(["", "", "", ".html", ".php", ".pdf"], rnd.below(n, 6))
    query = _scatter(rnd.weighted(n, [60, 15, 15, 10]), [
        lambda m: pa.array([""] * m, pa.string()),
        lambda m: _cat("?id=", _num(rnd.below(m, 100_000))),
        lambda m: _cat("?q=", _zipf_pick(rnd, WORDS, m), "&page=", _num(rnd.between(m, 1, 20))),
        lambda m: _cat("?utm_source=", _pick(["newsletter", "twitter", "google"], rnd.below(m, 3)),
                       "&utm_medium=email&utm_campaign=", _zipf_pick(rnd, WORDS[20:], m)),
    ])
    return _cat(scheme, www, host, "/", path, numeric, ext, query)


def emails(rows: int, seed: int = 0) -> pa.Array:
    """Email addresses: name-based local parts at big providers and company domains.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import emails
    >>> all(e.count("@") == 1 for e in emails(500).to_pylist())
    True
    """
    rnd = Random("emails", seed)
    n = rows

    def names(m: int) -> tuple[pa.Array, pa.Array]:
        first = pc.utf8_lower(_zipf_pick(rnd, ASCII_FIRST, m))
        return first, pc.utf8_lower(_zipf_pick(rnd, ASCII_LAST, m))

    def first_dot_last(m: int) -> pa.Array:
        first, last = names(m)
        return _cat(first, ".", last)

    def first_last(m: int) -> pa.Array:
        return _cat(*names(m))

    def initial_last(m: int) -> pa.Array:
        first, last = names(m)
        return _cat(pc.utf8_slice_codeunits(first, 0, 1), last)

    def first_last_digits(m: int) -> pa.Array:
        first, last = names(m)
        return _cat(first, "_", last, _num(rnd.between(m, 1, 99)))

    def first_digits(m: int) -> pa.Array:
        return _cat(names(m)[0], _num(rnd.between(m, 1, 9999)))

    local = _scatter(rnd.weighted(n, [40, 15, 20, 10, 15]),
                     [first_dot_last, first_last, initial_last, first_last_digits, first_digits])
    provider = _zipf_pick(rnd, MAIL_PROVIDERS, n)
    company = _cat(_zipf_pick(rnd, WORDS[20:], n), ".", _zipf_pick(rnd, TLDS, n))
    return _cat(local, "@", _where(rnd.percent(n, 65), provider, company))


def log_lines(rows: int, seed: int = 0) -> pa.Array:
    """Application log lines: ISO timestamp, level, service and one of a few message templates.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import log_lines
    >>> log_lines(3).to_pylist()[0][:11]
    '2024-03-01T'
    """
    rnd = Random("log_lines", seed)
    n = rows
    stamp = _fixed_strings(_fixed(n, _timestamps(rnd, n), b"Z"))

    def service(m: int) -> pa.Array:
        return _zipf_pick(rnd, SERVICES, m)

    def http(m: int) -> pa.Array:
        code = rnd.below(m, 10)
        status = _pick(["200", "200", "200", "201", "204", "301", "304", "400", "404", "500"], code)
        level = _where(code >= 7, "WARN  ", "INFO  ")
        method = _pick(["GET", "GET", "GET", "POST", "PUT", "DELETE"], rnd.below(m, 6))
        return _cat(level, "[", service(m), "] ", method, " /api/v", _num(rnd.between(m, 1, 2)),
                    "/", _zipf_pick(rnd, RESOURCES, m), "/", _num(rnd.below(m, 100_000)), " ",
                    status, " ", _num(rnd.log_lengths(m, 0, 10)), "ms")

    def query(m: int) -> pa.Array:
        return _cat("DEBUG [", service(m), "] db query table=", _zipf_pick(rnd, TABLES, m),
                    " rows=", _num(rnd.below(m, 500)), " took ", _num(rnd.log_lengths(m, 0, 8)),
                    "ms")

    def cache(m: int) -> pa.Array:
        return _cat("DEBUG [", service(m), "] cache ", _where(rnd.percent(m, 80), "hit", "miss"),
                    " key=", _zipf_pick(rnd, RESOURCES, m), ":", _num(rnd.below(m, 100_000)))

    def connection(m: int) -> pa.Array:
        state = _pick(["established", "closed", "timed out after 30000ms"], rnd.below(m, 3))
        return _cat("INFO  [", service(m), "] connection to 10.0.", _num(rnd.below(m, 16)), ".",
                    _num(rnd.between(m, 1, 254)), ":5432 ", state)

    def error(m: int) -> pa.Array:
        return _cat("ERROR [", service(m), "] Exception in thread \"worker-",
                    _num(rnd.below(m, 16)), "\" ", _zipf_pick(rnd, EXCEPTIONS, m),
                    " at com.example.service.OrderService.process(OrderService.java:",
                    _num(rnd.between(m, 20, 900)), ")")

    body = _scatter(rnd.weighted(n, [45, 20, 15, 10, 10]), [http, query, cache, connection, error])
    return _cat(stamp, " ", body)


def json_records(rows: int, seed: int = 0) -> pa.Array:
    """One-line JSON objects with a fixed key order, nested tags and an optional address.

    Examples
    --------
    >>> import json
    >>> from fsstgpu.datasets.generators import json_records
    >>> sorted(json.loads(json_records(1).to_pylist()[0]))[:3]
    ['active', 'address', 'created']
    """
    rnd = Random("json_records", seed)
    n = rows
    user = pc.utf8_lower(_cat(_zipf_pick(rnd, ASCII_FIRST, n), _num(rnd.below(n, 1000))))
    score = _cat(_num(rnd.below(n, 100)), ".", _fixed_strings(_digits(rnd.below(n, 100), 2)))
    tag_counts = rnd.between(n, 0, 3)
    tags = _join_runs(_zipf_pick(rnd, TAGS, int(tag_counts.sum())), tag_counts, '","')
    tags = _where(tag_counts == 0, "[]", _cat('["', tags, '"]'))
    city = _zipf_pick(rnd, CITIES, n)
    address = _where(
        rnd.percent(n, 70),
        _cat('{"city":"', city, '","zip":"', _fixed_strings(_digits(rnd.below(n, 100_000), 5)),
             '"}'),
        "null",
    )
    created = _fixed_strings(_fixed(n, _timestamps(rnd, n)[:, :19], b"Z"))
    return _cat('{"id":', _num(np.arange(n) + 1 + rnd.below(1, 1_000_000)[0] * 1000),
                ',"user":"', user, '","active":', _where(rnd.percent(n, 80), "true", "false"),
                ',"score":', score, ',"tags":', tags, ',"address":', address,
                ',"created":"', created, '"}')


def uuids(rows: int, seed: int = 0) -> pa.Array:
    """Random (version 4) UUIDs in canonical lowercase 8-4-4-4-12 form.

    Examples
    --------
    >>> import uuid
    >>> from fsstgpu.datasets.generators import uuids
    >>> uuid.UUID(uuids(1).to_pylist()[0]).version
    4
    """
    rnd = Random("uuids", seed)
    h = _hex_matrix(rnd, rows, 32).copy()
    h[:, 12] = ord("4")
    h[:, 16] = _HEX[8 + (rnd.below(rows, 4))]
    return _fixed_strings(_fixed(rows, h[:, :8], b"-", h[:, 8:12], b"-", h[:, 12:16], b"-",
                                 h[:, 16:20], b"-", h[:, 20:]))


def hex_ids(rows: int, seed: int = 0) -> pa.Array:
    """Hexadecimal identifiers of mixed widths (8, 16, 32, 40 or 64 digits), some 0x-prefixed.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import hex_ids
    >>> sorted({len(s.removeprefix("0x")) for s in hex_ids(1000).to_pylist()})
    [8, 16, 32, 40, 64]
    """
    rnd = Random("hex_ids", seed)
    widths = np.array([8, 16, 32, 40, 64], dtype=np.int64)[rnd.weighted(rows, [10, 30, 20, 30, 10])]
    digits = _ragged(_hex_matrix(rnd, rows, 64), widths)
    return _cat(_where(rnd.percent(rows, 20), "0x", ""), digits)


def person_names(rows: int, seed: int = 0) -> pa.Array:
    """Full names from an international vocabulary (accents, apostrophes, initials, titles).

    Examples
    --------
    >>> from fsstgpu.datasets.generators import person_names
    >>> all(" " in name for name in person_names(200).to_pylist())
    True
    """
    rnd = Random("person_names", seed)
    n = rows
    title = _pick(["", "Dr. ", "Prof. ", "Mr. ", "Ms. "], rnd.weighted(n, [85, 5, 2, 4, 4]))
    letters = pa.array([chr(c) for c in range(ord("A"), ord("Z") + 1)])
    middle = _where(rnd.percent(n, 15), _cat(_pick(letters, rnd.below(n, 26)), ". "), "")
    last = _zipf_pick(rnd, LAST_NAMES, n)
    double = _cat(last, "-", _zipf_pick(rnd, LAST_NAMES, n))
    return _cat(title, _zipf_pick(rnd, FIRST_NAMES, n), " ", middle,
                _where(rnd.percent(n, 5), double, last))


def multilingual(rows: int, seed: int = 0) -> pa.Array:
    """Short phrases in Latin with accents, Cyrillic, Greek, CJK and Arabic, some with emoji.

    Every row is valid UTF-8 with characters of 1 to 4 bytes.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import multilingual
    >>> col = multilingual(2000)
    >>> max(len(s.encode()) - len(s) for s in col.to_pylist()) > 0
    True
    """
    rnd = Random("multilingual", seed)
    n = rows
    phrase = _scatter(rnd.weighted(n, [30, 20, 15, 20, 15]), [
        lambda m: _sentence(rnd, LATIN_ACCENTED, m, 2, 10),
        lambda m: _sentence(rnd, CYRILLIC, m, 2, 10),
        lambda m: _sentence(rnd, GREEK, m, 2, 10),
        lambda m: _sentence(rnd, CJK, m, 2, 12, ""),
        lambda m: _sentence(rnd, ARABIC, m, 2, 10),
    ])
    emoji = _cat(" ", _sentence(rnd, EMOJI, n, 1, 3, ""))
    return _cat(phrase, _where(rnd.percent(n, 25), emoji, ""))


def null_heavy(rows: int, seed: int = 0, *, null_fraction: float = 0.9) -> pa.Array:
    """Mostly nulls: exactly ``round(rows * null_fraction)`` nulls at random rows, short values.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import null_heavy
    >>> null_heavy(1000).null_count
    900
    """
    # (a bool is not a fraction: True made every row null; a str failed inside the comparison)
    if isinstance(null_fraction, (bool, np.bool_)) or not isinstance(
            null_fraction, (int, float, np.integer, np.floating)):
        raise ValueError(f"null_fraction must be a number, got {null_fraction!r}")
    if not 0.0 <= null_fraction <= 1.0:
        raise ValueError(f"null_fraction must be within [0, 1], got {null_fraction!r}")
    rnd = Random("null_heavy", seed)
    n = rows
    values = _scatter(rnd.weighted(n, [40, 30, 30]), [
        lambda m: _pick(["ok", "pending", "failed", "retry", "cancelled"], rnd.zipf(m, 5)),
        lambda m: _cat("E", _fixed_strings(_digits(rnd.below(m, 10_000), 4))),
        lambda m: _sentence(rnd, WORDS, m, 1, 6),
    ])
    nulls = int(round(n * null_fraction))
    # A random permutation from integer keys: argsort of raw draws, stable for ties.
    null_rows = np.argsort(rnd.raw(n), kind="stable")[:nulls]
    valid = np.ones(n, dtype=bool)
    valid[null_rows] = False
    return _where(valid, values, pa.scalar(None, pa.string()))


def long_strings(rows: int, seed: int = 0, *, long_length: int = 1 << 20,
                 max_long: int = 4) -> pa.Array:
    """English-like text of 8 B to 4 KiB per row, plus a few rows longer than ``long_length``.

    ``min(max_long, rows // 16)`` rows (at random positions) hold between ``long_length`` and
    ``long_length + 64 KiB`` bytes, so any 16 or more rows include a string over 1 MiB by default
    while a million rows stay near 650 MB. About 1% of the rows are empty.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import long_strings
    >>> col = long_strings(16)
    >>> max(len(s) for s in col.to_pylist()) > 1 << 20
    True
    """
    try:  # (a float was taken: long_length=3.5 cut to 3, max_long=2.5 failed late as a slice)
        long_length, max_long = whole_number(long_length), whole_number(max_long)
    except TypeError:
        raise ValueError(f"long_length and max_long must be integers, got {long_length!r} and "
                         f"{max_long!r}") from None
    if not 0 <= long_length <= 2**30 or max_long < 0:
        raise ValueError("long_length must be within [0, 2**30] and max_long non-negative")
    rnd = Random("long_strings", seed)
    n = rows
    lengths = rnd.log_lengths(n, 3, 12)
    lengths[rnd.percent(n, 1)] = 0
    n_long = min(max_long, n // 16)
    long_rows = np.argsort(rnd.raw(n), kind="stable")[:n_long]
    lengths[long_rows] = long_length + rnd.below(n_long, 1 << 16)
    # Every row is a slice of one ASCII text, so cutting it anywhere keeps valid UTF-8.
    text_size = int(max(lengths.max(initial=0), 1 << 16)) * 2
    words = _zipf_pick(rnd, WORDS, text_size // 4)
    text = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(words)], pa.int32()), words),
                          " ")[0].as_py().encode()
    text = (text * (text_size // max(len(text), 1) + 1))[:text_size]
    starts = rnd.below(n, np.maximum(text_size - lengths, 1).astype(np.uint64))
    data = b"".join([text[s:s + k] for s, k in zip(starts.tolist(), lengths.tolist(), strict=True)])
    return _from_buffers(lengths, np.frombuffer(data, dtype=np.uint8))


def binary(rows: int, seed: int = 0) -> pa.Array:
    """Arbitrary bytes (``pa.binary()``): random blobs, int32 records, magic headers, UTF-16.

    Random blobs use all 256 byte values; packed little-endian int32 records give many 0x00 and
    0xFF bytes; files start with PNG, gzip, PDF, ZIP or JPEG magic numbers; UTF-16-LE text
    interleaves 0x00 with ASCII. Mostly not valid UTF-8.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import binary
    >>> data = b"".join(binary(1000).to_pylist())
    >>> b"\\x00" in data and b"\\xff" in data
    True
    """
    rnd = Random("binary", seed)

    def random_blobs(m: int) -> pa.Array:
        lengths = rnd.between(m, 0, 64)
        return _from_buffers(lengths, rnd.bytes(int(lengths.sum())), binary=True)

    def int32_records(m: int) -> pa.Array:
        counts = rnd.between(m, 1, 8)
        total = int(counts.sum())
        values = np.where(rnd.percent(total, 10), -1, rnd.below(total, 1000)).astype("<i4")
        return _from_buffers(counts * 4, values.view(np.uint8), binary=True)

    def magic_files(m: int) -> pa.Array:
        magic = _pick(_vocab([b"\x89PNG\r\n\x1a\n", b"\x1f\x8b\x08\x00", b"%PDF-1.7\n",
                              b"PK\x03\x04", b"\xff\xd8\xff\xe0"], binary=True),
                      rnd.zipf(m, 5))
        return _cat(magic, random_blobs(m))

    def utf16_text(m: int) -> pa.Array:
        words = _vocab([w.encode("utf-16-le") for w in WORDS], binary=True)
        counts = rnd.between(m, 1, 6)
        return _join_runs(_pick(words, rnd.zipf(int(counts.sum()), len(WORDS))), counts,
                          " ".encode("utf-16-le"))

    return _scatter(rnd.weighted(rows, [30, 30, 20, 20]),
                    [random_blobs, int32_records, magic_files, utf16_text])


GENERATORS: dict[str, Callable[..., pa.Array]] = {
    "urls": urls,
    "emails": emails,
    "log_lines": log_lines,
    "json_records": json_records,
    "uuids": uuids,
    "hex_ids": hex_ids,
    "person_names": person_names,
    "multilingual": multilingual,
    "null_heavy": null_heavy,
    "long_strings": long_strings,
    "binary": binary,
}
"""Every generator by name; each is called as ``f(rows, seed=0, **options)``."""


def generate(name: str, rows: int, seed: int = 0, **options) -> pa.Array:
    """Generate ``rows`` values of the named synthetic dataset.

    Parameters
    ----------
    name : str
        A key of :data:`GENERATORS`.
    rows : int
        Number of values (>= 0).
    seed : int, default 0
        Non-negative seed; the same ``(name, rows, seed, options)`` always gives the same bytes.
    **options
        Passed to the generator (e.g. ``null_fraction`` for ``null_heavy``).

    Returns
    -------
    pyarrow.Array
        ``pa.string()`` (``pa.binary()`` for ``binary``), large variant past 2 GiB of data.

    Raises
    ------
    ValueError
        Unknown name, negative ``rows`` or ``seed``, or an option of the wrong type or range.

    Examples
    --------
    >>> from fsstgpu.datasets.generators import generate
    >>> col = generate("emails", 5, seed=3)
    >>> len(col), col.type
    (5, DataType(string))
    """
    try:
        generator = GENERATORS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown generator {name!r}; choose from {', '.join(sorted(GENERATORS))}"
        ) from None
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 0:
        raise ValueError(f"rows must be a non-negative integer, got {rows!r}")
    return generator(int(rows), seed, **options)
