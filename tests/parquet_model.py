"""Python models of fsstgpu.native.parquet, for tests/test_parquet_pages.py and the sanitizer fuzz
(tests/native_fuzz.py): a Thrift compact writer of page headers (random extra fields of every
Thrift type included), the page walk of ``page_headers`` and DELTA_BINARY_PACKED's encoder and
decoder. Plain Python and NumPy, nothing of fsstgpu: the fuzz runs beside a bare extension.

The models raise :class:`Corrupt` wherever the extension raises CorruptDataError, and return
what it returns otherwise (the messages are not modelled).
"""

from __future__ import annotations

MASK = 2**64 - 1
MAX_DEPTH = 16  # parquet_pages.cpp's kMaxDepth
# Thrift compact types
TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT, UUID = range(1, 14)


class Corrupt(Exception):
    """Where the extension raises CorruptDataError."""


def uleb(v: int) -> bytes:
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def zigzag(v: int) -> bytes:
    """A signed value of at most 64 bits as Thrift and Parquet write it."""
    return uleb(((v << 1) ^ (v >> 63)) & MASK)


def wrap64(v: int) -> int:
    """``v`` modulo 2**64 as a signed int64."""
    return ((v + 2**63) & MASK) - 2**63


# ---------------------------------------------------------------- Thrift compact writing

def struct(fields) -> bytes:
    """A struct of ``(id, type, value bytes)`` fields (a bool's value is its type: TRUE or
    FALSE, no bytes); short field headers where the id step allows, else the long form."""
    out, last = bytearray(), 0
    for fid, ttype, payload in fields:
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | ttype)
        else:
            out += bytes([ttype]) + zigzag(fid)
        out += payload
        last = fid
    return bytes(out + b"\0")


def i32(v: int) -> bytes:
    return zigzag(v)


def page_header(type_, usize, csize, *, crc=None, num_values=0, encoding=0, v2=None,
                extra=()) -> bytes:
    """A PageHeader: a data page's (type 0), a dictionary page's (2) or a v2 page's (3) header
    with the counts given; ``v2`` = (num_nulls, num_rows, def bytes, rep bytes, is_compressed
    or None); ``extra``: more (id, type, bytes) fields of the top struct."""
    fields = [(1, I32, i32(type_)), (2, I32, i32(usize)), (3, I32, i32(csize))]
    if crc is not None:
        fields.append((4, I32, i32(crc - (1 << 32) if crc >= 1 << 31 else crc)))
    if type_ == 0:
        fields.append((5, STRUCT, struct([(1, I32, i32(num_values)), (2, I32, i32(encoding)),
                                          (3, I32, i32(3)), (4, I32, i32(3))])))
    elif type_ == 2:
        fields.append((7, STRUCT, struct([(1, I32, i32(num_values)), (2, I32, i32(encoding)),
                                          (3, FALSE, b"")])))
    elif type_ == 3:
        nulls, rows, dbytes, rbytes, compressed = v2
        inner = [(1, I32, i32(num_values)), (2, I32, i32(nulls)), (3, I32, i32(rows)),
                 (4, I32, i32(encoding)), (5, I32, i32(dbytes)), (6, I32, i32(rbytes))]
        if compressed is not None:
            inner.append((7, TRUE if compressed else FALSE, b""))
        fields.append((8, STRUCT, struct(inner)))
    return struct(sorted(fields + list(extra), key=lambda f: f[0]))


def random_value(rng, ttype: int, depth: int) -> bytes:
    """Random bytes of one value of ``ttype`` (a bool as a container element: one byte)."""
    small = int(rng.integers(0, 4))
    if ttype in (TRUE, FALSE):
        return bytes([int(rng.integers(1, 3))])
    if ttype == BYTE:
        return bytes([int(rng.integers(0, 256))])
    if ttype in (I16, I32, I64):
        return zigzag(int(rng.integers(-2**62, 2**62)) >> int(rng.integers(0, 62)))
    if ttype == DOUBLE:
        return bytes(rng.integers(0, 256, 8, dtype="uint8"))
    if ttype == BINARY:
        return uleb(small * 5) + bytes(rng.integers(0, 256, small * 5, dtype="uint8"))
    if ttype == UUID:
        return bytes(rng.integers(0, 256, 16, dtype="uint8"))
    inner = int(rng.integers(1, 14)) if depth < 4 else int(rng.choice([BYTE, I32, BINARY]))
    if ttype in (LIST, SET):
        head = bytes([min(small, 15) << 4 | inner])
        return head + b"".join(random_value(rng, inner, depth + 1) for _ in range(small))
    if ttype == MAP:
        if not small:
            return b"\0"
        value = int(rng.integers(1, 14)) if depth < 4 else BYTE
        return uleb(small) + bytes([inner << 4 | value]) + b"".join(
            random_value(rng, inner, depth + 1) + random_value(rng, value, depth + 1)
            for _ in range(small))
    return random_struct(rng, depth + 1)


def random_struct(rng, depth: int, ids=range(1, 40)) -> bytes:
    fields = []
    for fid in sorted(set(int(i) for i in rng.choice(list(ids), int(rng.integers(0, 4))))):
        ttype = int(rng.integers(1, 14))
        fields.append((fid, ttype, b"" if ttype in (TRUE, FALSE)
                       else random_value(rng, ttype, depth)))
    return struct(fields)


def random_extra(rng) -> list:
    """Fields a page header may carry beside the ones read: statistics-like structs, and fields
    of any type at ids the reader does not know."""
    extra = []
    for fid in sorted(set(int(i) for i in rng.choice([6, 9, 10, 11, 12, 20, 300],
                                                   int(rng.integers(0, 3))))):
        ttype = int(rng.integers(1, 14))
        extra.append((fid, ttype, b"" if ttype in (TRUE, FALSE)
                      else random_value(rng, ttype, 0)))
    return extra


def nested_list(depth: int) -> bytes:
    """A LIST value whose containers (lists, and structs between them) nest ``depth`` deep."""
    if depth <= 2:
        return b"\x03" if depth == 1 else b"\x1c\x00"  # no bytes; one empty struct
    return b"\x1c\x19" + nested_list(depth - 2) + b"\x00"  # one struct, its field 1 a list


def random_page(rng) -> bytes:
    """A page of a random type: its header (random extra fields) and payload; well-formed but
    for the odd nesting past the limit."""
    csize = int(rng.integers(0, 40))
    type_ = int(rng.choice([0, 1, 2, 3, 7]))
    usize = csize if rng.random() < 0.5 else int(rng.integers(csize, 200))
    v2 = None
    if type_ == 3:
        levels = int(rng.integers(0, csize + 1))
        dbytes = int(rng.integers(0, levels + 1))
        compressed = [None, True, False][int(rng.integers(0, 3))]
        if compressed is False:
            usize = csize
        v2 = (int(rng.integers(0, 9)), int(rng.integers(0, 9)), dbytes, levels - dbytes,
              compressed)
    crc = int(rng.integers(0, 2**32)) if rng.random() < 0.5 else None
    extra = random_extra(rng)
    if rng.random() < 0.1:  # nested around the depth limit
        extra = [(6, LIST, nested_list(int(rng.integers(MAX_DEPTH - 2, MAX_DEPTH + 3))))]
    header = page_header(type_, usize, csize, crc=crc, num_values=int(rng.integers(0, 300)),
                         encoding=int(rng.choice([0, 2, 3, 5, 6, 8])), v2=v2, extra=extra)
    return header + bytes(rng.integers(0, 256, csize, dtype="uint8"))


# ---------------------------------------------------------------- the page walk's model

class _Reader:
    """Thrift compact reading of ``buf[pos:end]`` as parquet_pages.cpp's Cursor reads it."""

    def __init__(self, buf: bytes, pos: int, end: int):
        self.buf, self.pos, self.end = buf, pos, end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise Corrupt("past the end")
        self.pos += 1
        return self.buf[self.pos - 1]

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            if shift == 63 and b > 1:
                raise Corrupt("over 64 bits")
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def zigzag(self) -> int:
        z = self.varint()
        return (z >> 1) ^ -(z & 1)

    def advance(self, n: int) -> None:
        if n > self.end - self.pos:
            raise Corrupt("past the end")
        self.pos += n

    def struct(self, spec, depth: int) -> dict:
        """``spec``: id -> "i32", "bool" or the spec of a struct field (None: skip it all)."""
        if depth > MAX_DEPTH:
            raise Corrupt("too deep")
        found, last = {}, 0
        while True:
            head = self.byte()
            ttype = head & 0x0F
            if ttype == 0:
                return found
            if head >> 4:
                last += head >> 4
            else:
                last = self.zigzag()
                if not -2**15 <= last < 2**15:
                    raise Corrupt("field id")
            want = spec.get(last) if spec is not None and 0 < last < 16 else None
            if want == "bool" and ttype in (TRUE, FALSE):
                found[last] = int(ttype == TRUE)
            elif want == "i32" and ttype == I32:
                found[last] = self.zigzag()
                if not -2**31 <= found[last] < 2**31:
                    raise Corrupt("i32")
            elif isinstance(want, dict) and ttype == STRUCT:
                found[last] = self.struct(want, depth + 1)
            elif ttype not in (TRUE, FALSE):
                self.skip(ttype, depth)

    def skip(self, ttype: int, depth: int) -> None:
        if ttype in (TRUE, FALSE, BYTE):
            self.advance(1)
        elif ttype in (I16, I32, I64):
            self.varint()
        elif ttype == DOUBLE:
            self.advance(8)
        elif ttype == BINARY:
            self.advance(self.varint())
        elif ttype == UUID:
            self.advance(16)
        elif ttype in (LIST, SET, MAP):
            self.container(ttype, depth + 1)
        elif ttype == STRUCT:
            self.struct(None, depth + 1)
        else:
            raise Corrupt("Thrift type")

    def container(self, ttype: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise Corrupt("too deep")
        if ttype == MAP:
            count = self.varint()
            if not count:
                return
            types = self.byte()
            kinds = (types >> 4, types & 0x0F)
        else:
            head = self.byte()
            count = head >> 4 if head >> 4 != 15 else self.varint()
            kinds = (head & 0x0F,)
        if count > (self.end - self.pos) // len(kinds):
            raise Corrupt("count")
        for _ in range(count):
            for kind in kinds:
                self.skip(kind, depth)


_DATA = {1: "i32", 2: "i32", 3: "i32", 4: "i32"}
_DICT = {1: "i32", 2: "i32"}
_V2 = {1: "i32", 2: "i32", 3: "i32", 4: "i32", 5: "i32", 6: "i32", 7: "bool"}
_TOP = {1: "i32", 2: "i32", 3: "i32", 4: "i32", 5: _DATA, 7: _DICT, 8: _V2}


def _require(found: dict, ids) -> None:
    if any(i not in found for i in ids):
        raise Corrupt("a required field")


def _row(r: _Reader, end: int) -> list[int]:
    """One page's row (the columns of fsstgpu.native.parquet.PAGE_FIELDS); r left past it."""
    header = r.pos
    top = r.struct(_TOP, 0)
    _require(top, (1, 2, 3))
    type_, usize, csize = top[1], top[2], top[3]
    payload = r.pos
    if csize < 0 or usize < 0 or csize > end - payload:
        raise Corrupt("sizes")
    values, encoding, dbytes, rbytes, compressed = 0, -1, 0, 0, 1
    if type_ in (0, 2, 3):
        detail = top.get({0: 5, 2: 7, 3: 8}[type_])
        if detail is None:
            raise Corrupt("no detail header")
        _require(detail, {0: (1, 2, 3, 4), 2: (1, 2), 3: (1, 2, 3, 4, 5, 6)}[type_])
        values, encoding = detail[1], detail[4 if type_ == 3 else 2]
        if values < 0 or encoding < 0:
            raise Corrupt("negative")
    if type_ == 3:
        dbytes, rbytes, compressed = detail[5], detail[6], detail.get(7, 1)
        if min(detail[2], detail[3], dbytes, rbytes) < 0 or dbytes + rbytes > min(csize, usize):
            raise Corrupt("levels")
        if not compressed and csize != usize:
            raise Corrupt("uncompressed size")
    r.pos = payload + csize
    crc = top.get(4)
    return [type_, header, payload, csize, usize, values, encoding, dbytes, rbytes, compressed,
            int(crc is not None), 0 if crc is None else crc & 0xFFFFFFFF]


def page_headers(buf: bytes, start: int, end: int) -> list[list[int]]:
    """native.page_headers' rows, or Corrupt."""
    if not 0 <= start <= end <= len(buf):
        raise Corrupt("range")
    r, rows = _Reader(buf, start, end), []
    while r.pos < end:
        rows.append(_row(r, end))
    return rows


# ---------------------------------------------------------------- DELTA_BINARY_PACKED

def dbp_encode(values, block=128, minis=4, rng=None) -> bytes:
    """DELTA_BINARY_PACKED of int64 ``values`` (deltas wrapped to int64 as a C++ writer's
    unsigned arithmetic makes them). With ``rng``, what readers must accept as anything is
    random: the bit widths of the last block's unused miniblocks and the last miniblock's
    padding bits."""
    values = [int(v) for v in values]
    out = bytearray(uleb(block) + uleb(minis) + uleb(len(values)))
    out += zigzag(values[0] if values else 0)
    deltas = [wrap64(b - a) for a, b in zip(values[:-1], values[1:], strict=True)]
    per = block // minis
    for k in range(0, len(deltas), block):
        chunk = deltas[k:k + block]
        low = min(chunk)
        out += zigzag(low)
        rel = [d - low for d in chunk]  # 0 .. 2**64 - 1
        widths, bodies = [], []
        for m in range(minis):
            part = rel[m * per:(m + 1) * per]
            if not part:  # the last block's unused miniblock: a width byte, no body
                widths.append(int(rng.integers(0, 256)) if rng is not None else 0)
                continue
            w = max(part).bit_length()
            bits = sum(v << (i * w) for i, v in enumerate(part))
            if rng is not None and w and len(part) < per:
                pad = (per - len(part)) * w
                bits |= int.from_bytes(bytes(rng.integers(0, 256, pad // 8 + 1,
                                                          dtype="uint8")), "little") % (
                    1 << pad) << (len(part) * w)
            widths.append(w)
            bodies.append(bits.to_bytes(per * w // 8, "little"))
        out += bytes(widths) + b"".join(bodies)
    return bytes(out)


def dbp_decode(buf: bytes, pos: int, end: int, max_values: int) -> tuple[list[int], int]:
    """native.delta_binary_packed's (values, position past them), or Corrupt."""
    if not 0 <= pos <= end <= len(buf):
        raise Corrupt("range")
    r = _Reader(buf, pos, end)
    block, minis, total = r.varint(), r.varint(), r.varint()
    value = r.zigzag() & MASK
    if block == 0 or block % 128 or block >= 2**32:
        raise Corrupt("block size")
    if minis == 0 or block % minis or (block // minis) % 32:
        raise Corrupt("miniblocks")
    if total > max_values:
        raise Corrupt("count")
    if total == 0:
        return [], r.pos
    per, out = block // minis, [wrap64(value)]
    while len(out) < total:
        low = r.zigzag() & MASK
        if r.end - r.pos < minis:
            raise Corrupt("widths")
        widths = buf[r.pos:r.pos + minis]
        r.pos += minis
        for w in widths:
            if len(out) == total:
                break
            if w > 64:
                raise Corrupt("width")
            nbytes = per * w // 8
            if r.end - r.pos < nbytes:
                raise Corrupt("miniblock")
            bits = int.from_bytes(buf[r.pos:r.pos + nbytes], "little")
            for j in range(min(per, total - len(out))):
                value = (value + low + ((bits >> (j * w)) & ((1 << w) - 1))) & MASK
                out.append(wrap64(value))
            r.pos += nbytes
    return out, r.pos
