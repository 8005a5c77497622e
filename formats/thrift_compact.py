"""Thrift's compact protocol, read into a generic tree and written back byte for byte.

Parquet's footer (``FileMetaData``) is a Thrift struct in the compact protocol. Writing a file's
row groups in parallel (:mod:`fsstgpu.formats.parquet_parts`) means moving row groups that
pyarrow wrote into files of their own into one file, so their byte offsets in the footer change.
This module reads any compact-protocol struct into nested Python values without knowing its
schema, so fields can be changed by id, and writes it back: what it reads it writes again
unchanged, byte for byte, for the canonical encoding Thrift's own writers produce (the round
trip is tested on pyarrow's footers).

Values: a struct is a :class:`Struct` (a list of :class:`Field`, in order); a list or set is a
:class:`Seq`; a map is a :class:`Map`; integers are ``int``, binary / strings ``bytes``, doubles
the 8 raw bytes (``bytes``), booleans ``bool``.

Only footers this process wrote are parsed (pyarrow's output), but malformed input raises
ValueError (never loops or reads past the buffer) all the same.

Examples
--------
>>> from fsstgpu.formats.thrift_compact import I64, Field, Struct, dumps, loads
>>> raw = dumps(Struct([Field(1, I64, 300), Field(3, I64, -2)]))
>>> raw.hex()
'16d804260300'
>>> s = loads(raw)
>>> s.get(1), s.get(3), dumps(s) == raw
(300, -2, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BINARY", "I16", "I32", "I64", "LIST", "STRUCT", "Field", "Map", "Raw", "Seq",
           "Struct", "dumps", "loads", "loads_at", "varint"]

# the compact protocol's type ids
BOOL_TRUE, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)
_INTS = (BYTE, I16, I32, I64)
MAX_DEPTH = 64  # Parquet's footer nests ~6 deep; a limit so forged input cannot recurse away


@dataclass(slots=True)
class Field:
    """One field of a struct: its id, compact type (BOOL_TRUE for any bool) and value."""

    id: int
    type: int
    value: object


@dataclass(slots=True)
class Seq:
    """A list or set: ``kind`` LIST or SET, the elements' type and the elements."""

    kind: int
    elem: int
    items: list = field(default_factory=list)


@dataclass(slots=True)
class Map:
    """A map: key and value types and the (key, value) pairs."""

    key: int
    value: int
    items: list = field(default_factory=list)


@dataclass(slots=True)
class Struct:
    """A struct: its fields in the order they were read (or are to be written)."""

    fields: list = field(default_factory=list)

    def get(self, id_: int, default=None):
        """The value of field ``id_``, or ``default``."""
        for f in self.fields:
            if f.id == id_:
                return f.value
        return default

    def set(self, id_: int, value) -> None:
        """Change the value of field ``id_`` (which must be there)."""
        for f in self.fields:
            if f.id == id_:
                f.value = value
                return
        raise KeyError(id_)


@dataclass(slots=True)
class Raw:
    """A value kept as its encoded bytes (a field :func:`loads` was not asked to read): written
    back as they are."""

    data: bytes


# ----------------------------------------------------------------------------- reading
class _Reader:
    """One pass over ``buf`` (bytes); an index past its end raises IndexError, which
    :func:`loads` reports. Written for speed: a row group's footer entry holds ~1000 values."""

    def __init__(self, buf: bytes):
        self.buf, self.pos = buf, 0

    def varint(self) -> int:
        buf, pos = self.buf, self.pos
        b = buf[pos]
        pos += 1
        out, shift = b & 0x7F, 7
        while b & 0x80:
            b = buf[pos]
            pos += 1
            out |= (b & 0x7F) << shift
            shift += 7
            if shift > 70:
                raise ValueError("a Thrift varint longer than 10 bytes")
        self.pos = pos
        return out

    def value(self, type_: int, depth: int, shape=None):
        if type_ == I64 or type_ == I32 or type_ == I16:
            v = self.varint()
            return (v >> 1) ^ -(v & 1)
        if type_ == BINARY:
            n = self.varint()
            pos = self.pos
            if pos + n > len(self.buf):
                raise IndexError
            self.pos = pos + n
            return self.buf[pos : pos + n]
        if depth > MAX_DEPTH:
            raise ValueError("Thrift values nested too deep")
        if type_ == STRUCT:
            return self.struct(depth + 1, shape)
        if type_ == LIST or type_ == SET:
            size, elem = self.list_head()
            return Seq(type_, elem, [self.value(elem, depth + 1, shape) for _ in range(size)])
        if type_ == BOOL_TRUE or type_ == BOOL_FALSE or type_ == BYTE:  # one byte
            b = self.buf[self.pos]
            self.pos += 1
            return b if type_ == BYTE else b == BOOL_TRUE
        if type_ == DOUBLE:
            self.pos += 8
            if self.pos > len(self.buf):
                raise IndexError
            return self.buf[self.pos - 8 : self.pos]
        if type_ == MAP:
            size = self.varint()
            self._check_count(size)
            if size == 0:
                return Map(0, 0, [])
            kinds = self.buf[self.pos]
            self.pos += 1
            k, v = kinds >> 4, kinds & 0x0F
            return Map(k, v, [(self.value(k, depth + 1), self.value(v, depth + 1))
                              for _ in range(size)])
        raise ValueError(f"unknown Thrift type {type_}")

    def skip(self, type_: int, depth: int) -> None:
        """Past a value of ``type_`` without making it (checked as :meth:`value` checks)."""
        if type_ == I64 or type_ == I32 or type_ == I16:
            self.varint()
        elif type_ == BINARY:
            n = self.varint()
            if self.pos + n > len(self.buf):
                raise IndexError
            self.pos += n
        elif depth > MAX_DEPTH:
            raise ValueError("Thrift values nested too deep")
        elif type_ == STRUCT:
            buf = self.buf
            while True:
                head = buf[self.pos]
                self.pos += 1
                if head == 0:
                    return
                if not head >> 4:
                    self.varint()
                if head & 0x0F not in (BOOL_TRUE, BOOL_FALSE):  # (a field's bool is its type)
                    self.skip(head & 0x0F, depth + 1)
        elif type_ == LIST or type_ == SET:
            size, elem = self.list_head()
            for _ in range(size):
                self.skip(elem, depth + 1)
        elif type_ == BOOL_TRUE or type_ == BOOL_FALSE or type_ == BYTE:
            self.buf[self.pos]  # (IndexError past the end)
            self.pos += 1
        elif type_ == DOUBLE:
            self.pos += 8
            if self.pos > len(self.buf):
                raise IndexError
        elif type_ == MAP:
            size = self.varint()
            self._check_count(size)
            if size:
                kinds = self.buf[self.pos]
                self.pos += 1
                for _ in range(size):
                    self.skip(kinds >> 4, depth + 1)
                    self.skip(kinds & 0x0F, depth + 1)
        else:
            raise ValueError(f"unknown Thrift type {type_}")

    def list_head(self) -> tuple[int, int]:
        """A list's or set's (size, element type), the size checked against the bytes left."""
        head = self.buf[self.pos]
        self.pos += 1
        size, elem = head >> 4, head & 0x0F
        if size == 15:
            size = self.varint()
        self._check_count(size)
        return size, elem

    def _check_count(self, size: int) -> None:
        if size > len(self.buf) - self.pos:  # every element takes at least a byte
            raise ValueError(f"a Thrift container of {size} elements in "
                             f"{len(self.buf) - self.pos} bytes")

    def struct(self, depth: int = 0, shape=None) -> Struct:
        """A struct; with ``shape`` (:func:`loads`), the fields it does not name as
        :class:`Raw`."""
        fields, last, buf = [], 0, self.buf
        while True:
            head = buf[self.pos]
            self.pos += 1
            if head == 0:  # STOP
                return Struct(fields)
            delta, type_ = head >> 4, head & 0x0F
            if delta:
                id_ = last + delta
            else:
                v = self.varint()
                id_ = (v >> 1) ^ -(v & 1)
            if type_ == BOOL_TRUE or type_ == BOOL_FALSE:
                fields.append(Field(id_, BOOL_TRUE, type_ == BOOL_TRUE))
            elif shape is None:
                fields.append(Field(id_, type_, self.value(type_, depth)))
            elif id_ in shape:
                fields.append(Field(id_, type_, self.value(type_, depth, shape[id_])))
            else:
                start = self.pos
                self.skip(type_, depth)
                fields.append(Field(id_, type_, Raw(buf[start : self.pos])))
            last = id_


def loads(buf, shape: dict | None = None) -> Struct:
    """The struct encoded in ``buf`` (bytes or any buffer; it must hold exactly the struct).

    ``shape`` names the fields to read into values, by id, each with the shape of its own
    struct (or of a list's structs), None for all of it; the others stay :class:`Raw`, their
    bytes, and :func:`dumps` writes them back as they were.

    Raises
    ------
    ValueError
        For malformed data or bytes left after the struct.
    """
    reader = _Reader(bytes(memoryview(buf).cast("B")))  # (a pa.Buffer's format is "b")
    try:
        out = reader.struct(0, shape)
    except IndexError:
        raise ValueError("Thrift data ends inside a value") from None
    if reader.pos != len(reader.buf):
        raise ValueError(f"{len(reader.buf) - reader.pos} bytes after the Thrift struct")
    return out


def loads_at(buf: bytes, pos: int, shape: dict | None = None) -> tuple[Struct, int]:
    """The struct encoded in ``buf`` (bytes: not copied) from ``pos`` on, and where it ends:
    one of several laid end to end (a column chunk's page headers, each before its page).

    Raises
    ------
    ValueError
        For malformed data, or data ending inside the struct.

    Examples
    --------
    >>> from fsstgpu.formats.thrift_compact import I64, Field, Struct, dumps, loads_at
    >>> raw = dumps(Struct([Field(1, I64, 300)]))
    >>> s, end = loads_at(b"xx" + raw + b"tail", 2)
    >>> s.get(1), end
    (300, 6)
    """
    if not 0 <= pos <= len(buf):
        raise ValueError(f"no Thrift struct at {pos} of {len(buf)} bytes")
    reader = _Reader(buf)
    reader.pos = pos
    try:
        return reader.struct(0, shape), reader.pos
    except IndexError:
        raise ValueError("Thrift data ends inside a value") from None


# ----------------------------------------------------------------------------- writing
def _varint(v: int, out: bytearray) -> None:
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def varint(v: int) -> bytes:
    """The compact protocol's unsigned varint of ``v`` >= 0 (a binary value's length prefix).

    Examples
    --------
    >>> from fsstgpu.formats.thrift_compact import varint
    >>> varint(5), varint(300)
    (b'\\x05', b'\\xac\\x02')
    """
    out = bytearray()
    _varint(v, out)
    return bytes(out)


def _zigzag(v: int, out: bytearray) -> None:
    _varint((v << 1) ^ (v >> 63), out)


def _value(type_: int, v, out: bytearray) -> None:
    if type(v) is Raw:
        out += v.data
    elif type_ in (BOOL_TRUE, BOOL_FALSE):
        out.append(BOOL_TRUE if v else BOOL_FALSE)
    elif type_ == BYTE:
        out.append(v & 0xFF)
    elif type_ in _INTS:
        _zigzag(v, out)
    elif type_ == DOUBLE:
        out += v
    elif type_ == BINARY:
        _varint(len(v), out)
        out += v
    elif type_ in (LIST, SET):
        if len(v.items) < 15:
            out.append(len(v.items) << 4 | v.elem)
        else:
            out.append(0xF0 | v.elem)
            _varint(len(v.items), out)
        for item in v.items:
            _value(v.elem, item, out)
    elif type_ == MAP:
        _varint(len(v.items), out)
        if v.items:
            out.append(v.key << 4 | v.value)
            for k, x in v.items:
                _value(v.key, k, out)
                _value(v.value, x, out)
    elif type_ == STRUCT:
        _struct(v, out)
    else:
        raise ValueError(f"unknown Thrift type {type_}")


def _struct(s: Struct, out: bytearray) -> None:
    last = 0
    for f in s.fields:
        type_ = (BOOL_TRUE if f.value else BOOL_FALSE) if f.type == BOOL_TRUE else f.type
        delta = f.id - last
        if 0 < delta <= 15:
            out.append(delta << 4 | type_)
        else:
            out.append(type_)
            _zigzag(f.id, out)
        if f.type != BOOL_TRUE:
            _value(f.type, f.value, out)
        last = f.id
    out.append(0)


def dumps(s: Struct) -> bytes:
    """``s`` in the compact protocol."""
    out = bytearray()
    _struct(s, out)
    return bytes(out)
