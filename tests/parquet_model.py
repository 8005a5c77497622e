"""Model encoders of Parquet's value encodings (the RLE / bit-packed hybrid, DELTA_BINARY_PACKED),
written from the specification in plain Python, for tests of the decoders: the compiled host
ones (tests/native_fuzz.py) and the device's (tests/test_page_decode.py)."""

from __future__ import annotations


def uvarint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def bitpack(values, width):
    acc = 0
    for k, v in enumerate(values):
        acc |= int(v) << (k * width)
    return acc.to_bytes(len(values) * width // 8, "little")


def rle_encode(values, width, rng):
    """Parquet's RLE / bit-packed hybrid of values, runs of either kind at random."""
    out, k = bytearray(), 0
    while k < len(values):
        if rng.random() < 0.5:  # a repeated run of values[k]
            j = k + 1
            while j < len(values) and values[j] == values[k]:
                j += 1
            out += uvarint((j - k) << 1) + int(values[k]).to_bytes((width + 7) // 8, "little")
            k = j
        else:  # bit-packed groups (the last one padded)
            groups = int(rng.integers(1, 4))
            chunk = list(values[k : k + 8 * groups])
            groups = -(-len(chunk) // 8)
            out += uvarint(groups << 1 | 1) + bitpack(chunk + [0] * (8 * groups - len(chunk)),
                                                      width)
            k += len(chunk)
    return bytes(out)


def delta_encode(values, per=32, miniblocks=4):
    """DELTA_BINARY_PACKED of int64 values (deltas modulo 2**64)."""
    mask = (1 << 64) - 1
    out = bytearray(uvarint(per * miniblocks) + uvarint(miniblocks) + uvarint(len(values)))
    first = int(values[0]) if len(values) else 0
    out += uvarint(((first << 1) ^ (first >> 63)) & mask)
    deltas = [(int(b) - int(a)) & mask for a, b in zip(values[:-1], values[1:], strict=True)]
    signed = [d - (1 << 64) if d >> 63 else d for d in deltas]
    for b in range(0, len(deltas), per * miniblocks):
        block = signed[b : b + per * miniblocks]
        low = min(block)
        out += uvarint(((low << 1) ^ (low >> 63)) & mask)
        rel = [(d - low) & mask for d in block]
        parts = [rel[m * per : (m + 1) * per] for m in range(miniblocks)]
        widths = [max(v.bit_length() for v in part) if part else 0 for part in parts]
        out += bytes(widths)
        for part, w in zip(parts, widths, strict=True):
            if part:
                out += bitpack(part + [0] * (per - len(part)), w)
    return bytes(out)


def _zigzag(v):
    return uvarint((v << 1) ^ (v >> 63) if v < 0 else v << 1)


def page_header(rng, kind, size, values, crc=None, encoding=None):
    """A page header in Thrift's compact protocol (PageHeader: type, sizes, CRC (unsigned,
    stored as Thrift's i32) and the page's own header: its values' ``encoding``, random where
    None (0 for a version 2 page)), with fields a reader must walk past (statistics, a list, a
    long field id)."""
    def field(last, id_, type_):
        return bytes([((id_ - last) << 4) | type_]) if 0 < id_ - last <= 15 else \
            bytes([type_]) + _zigzag(id_)

    out = bytearray(field(0, 1, 5) + _zigzag(kind) + field(1, 2, 5) + _zigzag(size) +
                    field(2, 3, 5) + _zigzag(size))
    last = 3
    if crc is not None:
        out += field(3, 4, 5) + _zigzag(crc - (1 << 32) if crc >= 1 << 31 else crc)  # (i32)
        last = 4
    sub_id = {0: 5, 2: 7, 3: 8}[kind]
    out += field(last, sub_id, 12)
    sub = bytearray(field(0, 1, 5) + _zigzag(values) + field(1, 2, 5) + _zigzag(
        int(rng.integers(0, 9)) if encoding is None else encoding))
    if kind == 0:
        sub += field(2, 3, 5) + _zigzag(3) + field(3, 4, 5) + _zigzag(3)
        if rng.random() < 0.5:  # statistics: a struct of binaries
            sub += field(4, 5, 12) + field(0, 1, 8) + uvarint(2) + b"ab" + field(1, 2, 8) + \
                uvarint(0) + b"\x00"
    elif kind == 3:
        sub = bytearray(field(0, 1, 5) + _zigzag(values) + field(1, 2, 5) + _zigzag(0) +
                        field(2, 3, 5) + _zigzag(values) + field(3, 4, 5) +
                        _zigzag(encoding or 0) +
                        field(4, 5, 5) + _zigzag(0) + field(5, 6, 5) + _zigzag(0) +
                        field(6, 7, 2))
    out += sub + b"\x00"
    if rng.random() < 0.3:  # a field of a later version: a list of i32, a long id
        out += field(sub_id, 200, 9) + bytes([0x35]) + b"".join(_zigzag(k) for k in range(3))
    return bytes(out + b"\x00")
