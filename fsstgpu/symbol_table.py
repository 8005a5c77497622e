"""FSST symbol tables: up to 255 symbols of 1-8 bytes, one code each; code 255 escapes a byte.

A compressed string is a sequence of one-byte codes. Code ``c < 255`` stands for symbol ``c``;
code 255 (:data:`ESCAPE`) is followed by one literal byte. Tables are kept in a canonical order
(symbols grouped by length, shortest first, then by their bytes) so that the same set of symbols
always gets the same codes and serialises to the same bytes.

Serialised form (:meth:`SymbolTable.to_bytes`), little-endian, at most 2057 bytes::

    magic   4 bytes  b"FSTT"
    version 1 byte   1
    counts  8 bytes  number of symbols of length 1, 2, ..., 8 (sum <= 255)
    symbols          the symbol bytes, concatenated in code order
    crc32   4 bytes  CRC32 of everything before it
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from fsstgpu.errors import CorruptDataError
from fsstgpu.limits import whole_number
from fsstgpu.native.checksums import crc32_many

ESCAPE = 255
MAX_SYMBOLS = 255
MAX_SYMBOL_LENGTH = 8
_MAGIC = b"FSTT"
_VERSION = 1
_HEADER = struct.Struct("<4sB8B")
#: a serialised table's header bytes (magic, version, eight counts): its symbols follow
HEADER_BYTES = _HEADER.size


_SLOT = np.arange(8)
_LENGTHS = np.arange(1, MAX_SYMBOL_LENGTH + 1, dtype=np.uint8)


def _packed(raw: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Symbols given as their bytes end to end (``raw``, uint8) and their ``lengths``, each in
    the low bytes of an 8-byte slot, zero after: :attr:`SymbolTable.packed`'s values (uint64)."""
    slots = np.zeros((lengths.size, 8), np.uint8)
    slots[_SLOT < lengths[:, None]] = raw  # the mask's cells, row by row: the bytes in order
    return slots.view("<u8").reshape(-1).astype(np.uint64, copy=False)


def _whole_argument(name: str, value, most: int | None = None) -> int:
    """A caller's ``offset`` / ``count`` as an int from 0 to ``most``: a bool was taken as 1 (an
    offset of True read at byte 1: "bad magic", the data blamed), a negative offset counted from
    the end (struct's rule), a negative count read nothing and a float failed inside struct."""
    try:
        number = whole_number(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}: "
                        f"{value!r}") from None
    if most is None and number < 0:
        raise ValueError(f"{name} must be >= 0, not {number}")
    if most is not None and not 0 <= number <= most:
        raise ValueError(f"{name} {number} is outside 0..{most} (the data's bytes)")
    return number


def _read_symbols(data: memoryview, pos: int, counts) -> tuple[np.ndarray, np.ndarray]:
    """The packed values and lengths of a serialised table's symbols (``counts[L - 1]`` of
    length L from ``pos``, shortest first), checked to be distinct and in canonical order.

    Every symbol's bytes are gathered into its zero-padded 8-byte slot in one pass: a Python
    loop a symbol and the constructor's checks cost ~150 us a table (a blob of a 1.4 M-string
    column has ~200 tables: 30 of its 45 ms read).
    """
    lengths = np.repeat(_LENGTHS, counts)
    packed = _packed(np.frombuffer(data, np.uint8, int(lengths.sum(dtype=np.int64)), pos),
                     lengths)
    # canonical: by length (so by construction), then by bytes, which for equal lengths is the
    # order of the zero-padded slots read big-endian
    key = packed.byteswap()
    same = lengths[1:] == lengths[:-1]
    if np.any(same & (key[1:] <= key[:-1])):
        order = np.lexsort((key, lengths))
        sorted_same = lengths[order][1:] == lengths[order][:-1]
        if np.any(sorted_same & (key[order][1:] == key[order][:-1])):
            raise CorruptDataError("symbol table: symbols must be distinct")
        raise CorruptDataError("symbol table: symbols are not in canonical order")
    return packed, lengths


def _symbol_bytes(symbol) -> bytes:
    """One symbol given to :class:`SymbolTable` as bytes (a copy of a bytes-like object)."""
    if not isinstance(symbol, (str, int, np.integer)):
        try:
            return bytes(memoryview(symbol))
        except TypeError:
            pass
    raise TypeError(f"symbols must be bytes-like, not {type(symbol).__name__}: {symbol!r}")


class SymbolTable:
    """An immutable FSST symbol table.

    Parameters
    ----------
    symbols : iterable of bytes
        Distinct symbols of 1 to 8 bytes, at most 255 of them. They are put in canonical order
        (by length, then bytes); code ``i`` is the ``i``-th symbol of :attr:`symbols`.

    Attributes
    ----------
    packed : numpy.ndarray of uint64, shape (n,)
        Each symbol's bytes as a little-endian integer, zero-padded: the decoder's view.
    lengths : numpy.ndarray of uint8, shape (n,)
        Each symbol's length in bytes.

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> t = SymbolTable([b"http://", b"www.", b"a"])
    >>> t.symbols
    (b'a', b'www.', b'http://')
    >>> SymbolTable.from_bytes(t.to_bytes()) == t
    True
    """

    __slots__ = ("_symbols", "packed", "lengths")

    def __init__(self, symbols):
        # C-level passes only (sorts, map, join): block planning makes thousands of tables a
        # column, and a per-symbol Python loop cost ~200 us a table
        if isinstance(symbols, (str, bytes, bytearray, memoryview)):
            # one string, not symbols: b"ab" iterates as the ints 97, 98
            raise TypeError(f"symbols must be an iterable of bytes, not one "
                            f"{type(symbols).__name__}")
        syms = list(symbols)
        if set(map(type, syms)) - {bytes}:  # bytes(s) of 255 bytes objects: ~30 us
            # bytes(3) is three NUL bytes and bytes(10**12) a terabyte; bytes("a") has no
            # encoding: a symbol is an object with the buffer protocol, not a number or str
            syms = list(map(_symbol_bytes, syms))
        if len(syms) > MAX_SYMBOLS:
            raise ValueError(f"a symbol table holds at most {MAX_SYMBOLS} symbols, not {len(syms)}")
        lengths = list(map(len, syms))
        if syms and not 1 <= min(lengths) <= max(lengths) <= MAX_SYMBOL_LENGTH:
            s = next(s for s in syms if not 1 <= len(s) <= MAX_SYMBOL_LENGTH)
            raise ValueError(
                f"symbols are 1-{MAX_SYMBOL_LENGTH} bytes long, not {len(s)}: {s!r}"
            )
        if len(set(syms)) != len(syms):
            raise ValueError("symbols must be distinct")
        lens = np.array(lengths, np.uint8)
        packed = _packed(np.frombuffer(b"".join(syms), np.uint8), lens)
        # canonical order: by length, then bytes (for equal lengths the big-endian reading of
        # the zero-padded slots orders as the bytes do); usually the order given already
        order = np.lexsort((packed.byteswap(), lens))
        if np.any(order != np.arange(len(syms))):
            syms = [syms[i] for i in order.tolist()]
            packed, lens = packed[order], lens[order]
        self._symbols = tuple(syms)
        self.lengths = lens
        self.packed = packed
        self.packed.flags.writeable = False
        self.lengths.flags.writeable = False

    @classmethod
    def from_canonical(cls, packed: np.ndarray, lengths: np.ndarray) -> SymbolTable:
        """A table of symbols already checked and in canonical order, without checking them
        again: the compiled planner's output (``packed``: uint64 as :attr:`packed`, ``lengths``:
        uint8). The block planner makes a table a block, thousands a large column, and the
        checks and sort of the constructor cost ~70 us a table.

        Examples
        --------
        >>> import numpy as np
        >>> from fsstgpu import SymbolTable
        >>> t = SymbolTable([b"ab", b"c"])
        >>> SymbolTable.from_canonical(t.packed.copy(), t.lengths.copy()) == t
        True
        """
        table = object.__new__(cls)
        table._symbols = None  # made on first use from the packed values
        if packed.flags.writeable or lengths.flags.writeable:
            packed, lengths = packed.view(), lengths.view()
            packed.flags.writeable = False
            lengths.flags.writeable = False
        # (else read-only already, as read_tables' slices are: taken as they are, ~1 us less
        # a table where a page reader makes ~1,000 of them a column)
        table.packed, table.lengths = packed, lengths
        return table

    @property
    def symbols(self) -> tuple:
        """The symbols in code order (tuple of bytes)."""
        if self._symbols is None:
            raw = self.packed.astype("<u8", copy=False).tobytes()
            self._symbols = tuple(raw[8 * i : 8 * i + n]
                                  for i, n in enumerate(self.lengths.tolist()))
        return self._symbols

    def __len__(self) -> int:
        return len(self.lengths)

    def __eq__(self, other) -> bool:
        return isinstance(other, SymbolTable) and self.symbols == other.symbols

    def __hash__(self) -> int:
        return hash(self.symbols)

    def __repr__(self) -> str:
        shown = ", ".join(repr(s) for s in self.symbols[:6])
        more = ", ..." if len(self.symbols) > 6 else ""
        return f"SymbolTable({len(self)} symbols: {shown}{more})"

    def nbytes_serialised(self) -> int:
        """Size of :meth:`to_bytes` in bytes.

        Examples
        --------
        >>> from fsstgpu import SymbolTable
        >>> t = SymbolTable([b"ab", b"xyz"])
        >>> t.nbytes_serialised() == len(t.to_bytes())
        True
        """
        return _HEADER.size + int(self.lengths.sum()) + 4

    def to_bytes(self) -> bytes:
        """Serialise the table (versioned, CRC-checked, at most 2057 bytes).

        Examples
        --------
        >>> from fsstgpu import SymbolTable
        >>> len(SymbolTable([b"ab"]).to_bytes())
        19
        """
        counts = np.bincount(self.lengths, minlength=MAX_SYMBOL_LENGTH + 1)[1:]
        body = _HEADER.pack(_MAGIC, _VERSION, *(int(c) for c in counts)) + b"".join(self.symbols)
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def from_bytes(cls, data) -> SymbolTable:
        """Read a table written by :meth:`to_bytes`; raise :class:`CorruptDataError` if it is bad.

        Examples
        --------
        >>> from fsstgpu import SymbolTable
        >>> SymbolTable.from_bytes(SymbolTable([b"x"]).to_bytes()).symbols
        (b'x',)
        """
        table, used = cls.read_from(data, 0)
        if used != len(data):
            raise CorruptDataError(
                f"symbol table: {len(data) - used} trailing bytes after a {used}-byte table"
            )
        return table

    @classmethod
    def read_from(cls, data, offset: int) -> tuple[SymbolTable, int]:
        """Read a serialised table starting at ``offset``; return it and the offset after it."""
        data = memoryview(data).cast("B")
        offset = _whole_argument("offset", offset, len(data))
        if len(data) - offset < _HEADER.size + 4:
            raise CorruptDataError(
                f"symbol table truncated: {len(data) - offset} bytes, need at least "
                f"{_HEADER.size + 4}"
            )
        magic, version, *counts = _HEADER.unpack_from(data, offset)
        if magic != _MAGIC:
            raise CorruptDataError(f"symbol table: bad magic {bytes(magic)!r}, expected {_MAGIC!r}")
        if version != _VERSION:
            raise CorruptDataError(f"symbol table: unsupported version {version}")
        if sum(counts) > MAX_SYMBOLS:
            raise CorruptDataError(f"symbol table: {sum(counts)} symbols, at most {MAX_SYMBOLS}")
        size = sum((i + 1) * c for i, c in enumerate(counts))
        end = offset + _HEADER.size + size
        if end + 4 > len(data):
            raise CorruptDataError(
                f"symbol table truncated: needs {end + 4 - offset} bytes, has {len(data) - offset}"
            )
        (crc,) = struct.unpack_from("<I", data, end)
        if zlib.crc32(data[offset:end]) != crc:
            raise CorruptDataError("symbol table: CRC32 mismatch")
        packed, lengths = _read_symbols(data, offset + _HEADER.size, counts)
        return cls.from_canonical(packed, lengths), end + 4

    @classmethod
    def read_many(cls, data, offset: int, count: int) -> tuple[list[SymbolTable], int]:
        """Read ``count`` serialised tables back to back from ``offset``.

        Parameters
        ----------
        data : bytes-like
        offset : int
            Where the first table starts.
        count : int
            How many tables to read.

        Returns
        -------
        tables : list of SymbolTable
        end : int
            The offset after the last table.

        Raises
        ------
        CorruptDataError
            When a table is bad; the message starts with ``table K:`` (K counts from 0).
        TypeError, ValueError
            When ``offset`` is not a whole number in 0..len(data) or ``count`` one >= 0.

        Examples
        --------
        >>> from fsstgpu import SymbolTable
        >>> raw = SymbolTable([b"a"]).to_bytes() + SymbolTable([b"bc"]).to_bytes()
        >>> tables, end = SymbolTable.read_many(raw, 0, 2)
        >>> [t.symbols for t in tables], end == len(raw)
        ([(b'a',), (b'bc',)], True)
        """
        count = _whole_argument("count", count)
        tables = []
        for k in range(count):
            try:
                table, offset = cls.read_from(data, offset)
            except CorruptDataError as exc:
                raise CorruptDataError(f"table {k}: {exc}") from None
            tables.append(table)
        return tables, offset


def as_symbol_table(table) -> SymbolTable:
    """``table``, a SymbolTable or the bytes :meth:`SymbolTable.to_bytes` wrote, as a
    SymbolTable (TypeError for anything else, CorruptDataError for bytes that are no table).

    Examples
    --------
    >>> from fsstgpu.symbol_table import SymbolTable, as_symbol_table
    >>> t = SymbolTable([b"ab"])
    >>> as_symbol_table(t) is t, as_symbol_table(t.to_bytes()).symbols
    (True, (b'ab',))
    """
    if isinstance(table, (bytes, bytearray, memoryview)):
        table = SymbolTable.from_bytes(table)
    if not isinstance(table, SymbolTable):
        raise TypeError(f"table must be a SymbolTable or its bytes, not {type(table).__name__}")
    return table


def pack_tables(tables, *, into=None) -> tuple[np.ndarray, np.ndarray]:
    """The tables as two (ntables, 256) arrays: symbols (uint64) and lengths (uint8).

    Row ``t`` holds table ``t``; codes a table does not define, and the escape 255, have length
    0. The decoders (CPU and GPU) and the code walk all read tables in this layout. At least one
    row is returned, so that an empty list still gives arrays a kernel can index. ``into``: the
    two arrays to fill (of that shape; a batch's metadata sections), else new ones.

    Examples
    --------
    >>> from fsstgpu.symbol_table import SymbolTable, pack_tables
    >>> sym, ln = pack_tables([SymbolTable([b"ab", b"c"])])
    >>> sym.shape, ln[0, :3].tolist(), hex(int(sym[0, 1]))
    ((1, 256), [1, 2, 0], '0x6261')
    """
    rows = max(len(tables), 1)
    if into is None:
        sym, ln = np.zeros((rows, 256), dtype=np.uint64), np.zeros((rows, 256), dtype=np.uint8)
    else:
        sym, ln = into
        if sym.shape != (rows, 256) or ln.shape != (rows, 256):
            raise ValueError(f"pack_tables into arrays of shape {sym.shape} / {ln.shape}, "
                             f"not ({rows}, 256)")
        sym.fill(0)
        ln.fill(0)
    for t, table in enumerate(tables):
        sym[t, : len(table)] = table.packed
        ln[t, : len(table)] = table.lengths
    return sym, ln



def serialised_counts(data: np.ndarray, offsets) -> tuple[np.ndarray, np.ndarray]:
    """The serialised tables ``data[offsets[k] : offsets[k + 1]]`` (uint8 ``data``) checked
    at once but for their symbols' order: whether each has the magic, version, at most 255
    symbols, the size its counts say and its CRC, and its counts of symbols of each length
    (uint8, a row a table; zero where it fails). :func:`fsstgpu.native.tables.read_tables`
    reads their symbols.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.symbol_table import SymbolTable, serialised_counts
    >>> raw = SymbolTable([b"a", b"xy"]).to_bytes() + b"junk"
    >>> ok, counts = serialised_counts(np.frombuffer(raw, np.uint8), [0, 20, 24])
    >>> ok.tolist(), counts[0, :2].tolist()
    ([True, False], [1, 1])
    """
    offsets = np.asarray(offsets, np.int64)
    starts, sizes = offsets[:-1], np.diff(offsets)
    n, head = len(starts), _HEADER.size
    ok = sizes >= head + 4
    if data.size:
        header = data[np.minimum(np.where(ok, starts, 0)[:, None] + np.arange(head),
                                 data.size - 1)]
    else:
        header = np.zeros((n, head), np.uint8)
    counts = header[:, 5:].copy()
    wide = counts.astype(np.int64)
    ok &= (header[:, :4] == np.frombuffer(_MAGIC, np.uint8)).all(axis=1)
    ok &= (header[:, 4] == _VERSION) & (wide.sum(axis=1) <= MAX_SYMBOLS)
    ok &= sizes == head + wide @ np.arange(1, MAX_SYMBOL_LENGTH + 1) + 4
    ok &= (starts >= 0) & (starts <= data.size - sizes)  # (each inside the data)
    held = np.flatnonzero(ok)
    if held.size:
        ends = starts[held] + sizes[held]
        stored = data[ends[:, None] - 4 + np.arange(4)].view("<u4").reshape(-1)  # (each last 4)
        ok[held] = crc32_many(data, starts[held], sizes[held] - 4) == stored
    counts[~ok] = 0
    return ok, counts
