"""fsst column chunks read raw for the GPU (issue #24 item 2: ``formats/raw_chunks.py``,
``formats/raw_device.py``, ``kernels/dlba_pages.*``, ``fsstgpu/gpu/nvcomp.py``).

On the CPU the raw read runs with its twins (pyarrow's zstd, the pages kernels' Python twin) and
must give the CompressedStringArray that pyarrow's reading of the same chunk gives, on files
``compress_file`` writes (zstd and uncompressed pages, data pages v1 and v2, nulls, several
tables, long strings with cuts); damaged and forged pages raise CorruptDataError naming the
page. The GPU tests read the same files with ``read_to_device`` raw and through pyarrow, the
device memory poisoned first, and compare the decoded columns byte for byte.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu import CorruptDataError
from fsstgpu.datasets.generators import generate
from fsstgpu.formats import compress_file
from fsstgpu.formats.arrow_storage import from_extension_array
from fsstgpu.formats.parquet_options import writer_options
from fsstgpu.formats.raw_chunks import RawReader, raw_layout
from fsstgpu.formats.raw_device import raw_to_host
from fsstgpu.formats.rowgroups import Source
from fsstgpu.kernels.dlba_pages import dlba_pages_cpu


def _strings(rng, n: int, words: list[str]) -> list:
    """Text of 0-600 bytes (a few over 4096: cut), a null one time in ten."""
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            out.append(None)
        elif r < 0.12:
            out.append("")
        elif r < 0.125:
            out.append(" ".join(rng.choice(words, 900)))  # > 4096 bytes: cuts inside
        else:
            out.append(" ".join(rng.choice(words, int(rng.integers(1, 60)))))
    return out


def _table(seed: int, n: int = 6000) -> pa.Table:
    rng = np.random.default_rng(seed)
    urls = generate("urls", 400, seed).to_pylist()
    words = generate("log_lines", 400, seed + 1).to_pylist()
    half = n // 2  # the text changes halfway: a retrained table from there
    s = _strings(rng, half, urls) + _strings(rng, n - half, words)
    b = [None if x is None else x.encode()[::-1] for x in _strings(rng, n, words)]
    return pa.table({"s": pa.array(s, pa.string()), "b": pa.array(b, pa.large_binary()),
                     "rep": pa.array([urls[i % 7] for i in range(n)]),  # repeats: dictionary
                     "n": pa.array(np.arange(n))})


def _fsst_file(tmp_path, seed: int, codec: str, *, v2: bool = False) -> str:
    src, dst = str(tmp_path / f"in{seed}.parquet"), str(tmp_path / f"f{seed}{codec}.parquet")
    pq.write_table(_table(seed), src, row_group_size=2000)
    compress_file(src, dst, parquet_codec=codec)
    if v2:  # the same storage, written again with data pages v2
        t = pq.read_table(dst)
        again = str(tmp_path / f"v2{seed}{codec}.parquet")
        pq.write_table(t, again, data_page_version="2.0", write_page_checksum=True,
                       row_group_size=2000, **writer_options(t.schema, fsst_codec=codec))
        return again
    return dst


def _chunks(path):
    with Source(path) as source:
        reader = RawReader(path, source.parquet_metadata, source.schema, zstd=True)
        try:
            chunks = {key: reader(*key) for key in sorted(reader.layout)}
        finally:
            reader.close()
        expected = {key: from_extension_array(source.unit(key[0], [key[1]]).column(key[1]))
                    for key in chunks}
    return reader, chunks, expected


@pytest.mark.parametrize("codec,v2", [("zstd", False), ("none", False), ("zstd", True)])
@pytest.mark.parametrize("seed", range(2))
def test_raw_read_equals_pyarrow_read(tmp_path, seed, codec, v2):
    reader, chunks, expected = _chunks(_fsst_file(tmp_path, seed, codec, v2=v2))
    # every string column in every row group; the repeating one's codes are dictionary-coded
    # where compress_file wrote them (not in the v2 rewrite)
    assert {name for _, name in chunks} == {"s", "b", "rep"} and len(chunks) == 9
    assert any(c.dictionary is not None for c in chunks.values()) != v2
    assert all(c is not None for c in chunks.values())
    for key, chunk in chunks.items():
        got = raw_to_host([chunk], reader.upload)[0]
        assert got.equals(expected[key]), key
    together = raw_to_host(list(chunks.values()), reader.upload)
    assert all(g.equals(expected[key]) for g, key in zip(together, chunks, strict=True))
    assert any(len(e.tables) > 1 or e.null_count for e in expected.values())
    assert any(len(e.split_codes) > 1 for e in expected.values())


def test_layout_of_fsst_and_plain_files(tmp_path):
    path = _fsst_file(tmp_path, 3, "zstd")
    with Source(path) as source:
        layout = raw_layout(source.parquet_metadata, source.schema, zstd=True)
        assert {name for _, name in layout} == {"s", "b", "rep"}
        assert {key[1] for key, v in layout.items() if v[4]} == {"rep"}  # dictionary-coded
        # without nvCOMP only the dictionary-coded chunks (pyarrow undoes their zstd)
        assert {name for _, name in raw_layout(source.parquet_metadata, source.schema,
                                               zstd=False)} == {"rep"}
    plain = str(tmp_path / "plain.parquet")
    pq.write_table(_table(4, 100), plain)
    with Source(plain) as source:
        assert raw_layout(source.parquet_metadata, source.schema, zstd=True) == {}


def _flip(path, at: int) -> str:
    data = bytearray(open(path, "rb").read())
    data[at] ^= 0x40
    out = path + ".flipped.parquet"
    open(out, "wb").write(bytes(data))
    return out


@pytest.mark.parametrize("where", [0.3, 0.9])
def test_damaged_page_is_named(tmp_path, where):
    path = _fsst_file(tmp_path, 5, "zstd")
    with Source(path) as source:
        layout = raw_layout(source.parquet_metadata, source.schema, zstd=True)
    start, size, _, _, _ = layout[(1, "s")]
    bad = _flip(path, start + int(size * where))
    with Source(bad) as source:
        reader = RawReader(bad, source.parquet_metadata, source.schema, zstd=True)
        try:
            with pytest.raises(CorruptDataError, match=r"row group 1, column 's'"):
                reader(1, "s")
        finally:
            reader.close()


def _forge(chunk, page: int, offset: int, value: int) -> None:
    """Change byte ``offset`` of a page's DELTA_BINARY_PACKED lengths after its CRC was checked:
    what a forged page with a matching CRC would bring (v1: past the definition levels)."""
    at = int(chunk.pages[page, 2])
    at += 4 + int.from_bytes(chunk.buffer[at : at + 4].tobytes(), "little")
    chunk.buffer[at + offset] = value


# the block size (127: not a multiple of 128), the value count, a miniblock's bit width
@pytest.mark.parametrize("offset,value", [(0, 0x7F), (3, 0x01), (6, 0xFF)])
def test_forged_page_is_named(tmp_path, offset, value):
    reader, chunks, _ = _chunks(_fsst_file(tmp_path, 6, "none"))
    chunk = chunks[(0, "s")]
    _forge(chunk, 0, offset, value)
    with pytest.raises(CorruptDataError, match=r"row group 0, column 's': codes page 0"):
        raw_to_host([chunk], reader.upload)


def test_pages_twin_on_pyarrow_pages():
    """The pages kernels' twin on DELTA_LENGTH_BYTE_ARRAY pages pyarrow wrote (v1, nulls):
    every length and every byte."""
    import io

    from fsstgpu.native import parquet as pages_native
    rng = np.random.default_rng(7)
    vals = [None if rng.random() < 0.1 else rng.bytes(int(rng.choice([0, 1, 3, 40, 300])))
            for _ in range(5000)]
    sink = io.BytesIO()
    pq.write_table(pa.table({"b": pa.array(vals, pa.large_binary())}), sink, compression="none",
                   use_dictionary=False, column_encoding={"b": "DELTA_LENGTH_BYTE_ARRAY"},
                   data_page_size=8192, write_statistics=False)
    raw = np.frombuffer(sink.getvalue(), np.uint8)
    col = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata.row_group(0).column(0)
    table = pages_native.page_headers(raw, col.data_page_offset,
                                      col.data_page_offset + col.total_compressed_size)
    pages, expected, row = [], [], 0
    for at, size, count in table[:, [2, 3, 5]].tolist():
        pages.append(raw[at : at + size])
        expected.append(sum(v is not None for v in vals[row : row + count]))
        row += count
    values, _, _, err, codes = dlba_pages_cpu(pages, [True] * len(pages), expected)
    assert len(pages) > 3 and not err.any()
    assert values.tolist() == [len(v) for v in vals if v is not None]
    assert codes.tobytes() == b"".join(v for v in vals if v is not None)


def _poison_pool(cp, nbytes: int = 256 << 20) -> None:
    """Fill the memory the next allocations come from with 0xAB (then free it to the pool)."""
    junk = cp.full(nbytes, 0xAB, dtype=cp.uint8)
    cp.cuda.get_current_stream().synchronize()
    del junk


def _dlba_pages(rng, count: int):
    """DELTA_LENGTH_BYTE_ARRAY pages pyarrow writes (v1 with levels, nulls), uncompressed: the
    pages' bytes and the non-null values each holds."""
    import io

    from fsstgpu.native import parquet as pages_native
    sizes = rng.choice([0, 1, 2, 5, 31, 64, 300, 5000], count, p=[.1, .1, .1, .2, .2, .1, .15, .05])
    vals = [None if rng.random() < 0.08 else rng.bytes(int(k)) for k in sizes]
    sink = io.BytesIO()
    pq.write_table(pa.table({"b": pa.array(vals, pa.large_binary())}), sink, compression="none",
                   use_dictionary=False, column_encoding={"b": "DELTA_LENGTH_BYTE_ARRAY"},
                   data_page_size=int(rng.choice([1024, 8192, 65536])), write_statistics=False)
    raw = np.frombuffer(sink.getvalue(), np.uint8)
    col = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata.row_group(0).column(0)
    table = pages_native.page_headers(raw, col.data_page_offset,
                                      col.data_page_offset + col.total_compressed_size)
    pages, expected, row = [], [], 0
    for at, size, nvals in table[:, [2, 3, 5]].tolist():
        pages.append(raw[at : at + size].copy())
        expected.append(sum(v is not None for v in vals[row : row + nvals]))
        row += nvals
    return pages, expected


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(4))
def test_gpu_pages_kernels_match_twin(seed):
    """dlba_lengths and dlba_gather against their twin, value for value and byte for byte, on
    fresh pages (some forged: a header byte changed), outputs poisoned."""
    import cupy as cp

    from fsstgpu.kernels.dlba_pages import SLACK, dlba_gather, dlba_lengths
    rng = np.random.default_rng(1000 + seed)
    pages, expected = _dlba_pages(rng, int(rng.integers(2000, 20000)))
    for p in rng.choice(len(pages), max(1, len(pages) // 4), replace=False):
        at = 4 + int.from_bytes(pages[p][:4].tobytes(), "little") + int(rng.integers(0, 12))
        if at < len(pages[p]):
            pages[p][at] = rng.integers(256)
    want_values, want_start, want_count, want_err, want_codes = dlba_pages_cpu(
        pages, [True] * len(pages), expected)
    assert want_err.any() and not want_err.all()
    slots = np.cumsum([0] + [len(p) + SLACK for p in pages])
    host = np.zeros(slots[-1], np.uint8)
    for p, page in enumerate(pages):
        host[slots[p] : slots[p] + len(page)] = page
    _poison_pool(cp)
    dev = cp.asarray(host)
    ptr = cp.asarray((dev.data.ptr + slots[:-1]).astype(np.uint64))
    base = np.concatenate([[0], np.cumsum(expected)])
    values = cp.full(max(int(base[-1]), 1), -7, cp.int64)
    start, count, err = dlba_lengths(ptr, cp.asarray(np.array([len(p) for p in pages])),
                                     cp.ones(len(pages), cp.uint8),
                                     cp.asarray(np.array(expected, np.int64)),
                                     cp.asarray(base[:-1]), values)
    assert err.get().tolist() == want_err.tolist()
    good = want_err == 0
    assert start.get()[good].tolist() == want_start[good].tolist()
    assert count.get().tolist() == want_count.tolist()
    got = values.get()
    for p in np.flatnonzero(good):
        assert got[base[p] : base[p + 1]].tolist() == want_values[base[p] : base[p + 1]].tolist()
    codes = cp.full(len(want_codes) + 64, 0xAB, cp.uint8)
    code_base = cp.zeros(len(pages) + 1, cp.int64)
    cp.cumsum(count, out=code_base[1:])
    dlba_gather(ptr, start, count, code_base, err, codes)
    out = codes.get()
    assert out[: len(want_codes)].tobytes() == want_codes.tobytes()
    assert (out[len(want_codes) :] == 0xAB).all()


@pytest.mark.gpu
def test_gpu_nvcomp_zstd_and_crc32_match_the_host():
    """nvCOMP's batched zstd decompression and CRC32 against pyarrow's zstd and zlib, on zstd
    frames of real-looking text (a malformed frame never reaches nvCOMP: the frame walk's
    test)."""
    import zlib

    import cupy as cp

    from fsstgpu.gpu import nvcomp
    if nvcomp.library() is None:
        pytest.skip("nvCOMP is not installed (the [cuda12] / [cuda13] extras bring it)")
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    codec = pa.Codec("zstd", compression_level=3)
    plain = [" ".join(generate("log_lines", int(rng.integers(1, 400)), int(s)).to_pylist())
             .encode() for s in rng.integers(0, 10**6, 40)]
    frames = [codec.compress(p, asbytes=True) for p in plain]
    src_at = np.cumsum([0] + [-(-len(f) // 16) * 16 for f in frames])
    out_at = np.cumsum([0] + [-(-len(p) // 16) * 16 + 16 for p in plain])
    host = np.zeros(src_at[-1], np.uint8)
    for f, at in zip(frames, src_at, strict=False):
        host[at : at + len(f)] = np.frombuffer(f, np.uint8)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        src = cp.asarray(host)
        out = cp.full(int(out_at[-1]), 0xAB, cp.uint8)
        u64 = lambda a: cp.asarray(np.asarray(a, np.uint64))  # noqa: E731
        st, sz = nvcomp.zstd_decompress(
            cp, u64(src.data.ptr + src_at[:-1]), u64([len(f) for f in frames]),
            u64(out.data.ptr + out_at[:-1]), u64([len(p) for p in plain]),
            max_chunk=max(len(p) for p in plain), total=sum(len(p) for p in plain),
            stream=stream)
        crc = nvcomp.crc32(cp, u64(src.data.ptr + src_at[:-1]), u64([len(f) for f in frames]),
                           max_chunk=max(len(f) for f in frames), stream=stream)
        stream.synchronize()
    st, sz, got, crc = st.get(), sz.get(), out.get(), crc.get()
    for k, (p, f) in enumerate(zip(plain, frames, strict=True)):
        assert int(crc[k]) == zlib.crc32(f), k
        assert st[k] == 0 and sz[k] == len(p), k
        assert got[out_at[k] : out_at[k] + len(p)].tobytes() == p, k


@pytest.mark.gpu
@pytest.mark.parametrize("codec,v2", [("zstd", False), ("none", False), ("zstd", True)])
def test_gpu_raw_read_equals_pyarrow_path(tmp_path, codec, v2):
    """read_to_device with the codes' pages decoded on the GPU against the same read through
    pyarrow: every column equal; the raw path was taken."""
    import cupy as cp

    from fsstgpu.formats import device_reader
    from fsstgpu.gpu import nvcomp
    if codec == "zstd" and nvcomp.library() is None:
        pytest.skip("nvCOMP is not installed (the [cuda12] / [cuda13] extras bring it)")
    seed = int.from_bytes(os.urandom(2), "little")
    path = _fsst_file(tmp_path, seed, codec, v2=v2)
    taken = []
    real = device_reader.decode_raw

    def spy(*args, **kwargs):
        taken.append(len(args[1]))
        return real(*args, **kwargs)

    device_reader.decode_raw = spy
    try:
        with Source(path) as source:
            _poison_pool(cp)
            raw = device_reader.read_to_device(source, raw_pages=True)
        with Source(path) as source:
            plain = device_reader.read_to_device(source, raw_pages=False)
    finally:
        device_reader.decode_raw = real
    assert taken and taken[0] >= 6, seed
    for name in ("s", "b", "rep"):
        assert raw[name].to_arrow().equals(plain[name].to_arrow()), (seed, name)
    assert raw["n"].equals(plain["n"])


@pytest.mark.gpu
def test_gpu_forged_page_is_named(tmp_path):
    import cupy as cp

    from fsstgpu.formats.raw_device import raw_to_device
    reader, chunks, _ = _chunks(_fsst_file(tmp_path, 6, "none"))
    chunk = chunks[(0, "s")]
    _forge(chunk, 0, 0, 0x7F)
    upload = reader.upload
    with pytest.raises(CorruptDataError, match=r"row group 0, column 's': codes page 0"):
        raw_to_device(list(chunks.values()), upload, stream=cp.cuda.Stream())


def test_frame_walk_refuses_malformed_frames():
    """The host's walk of a zstd frame (what keeps malformed frames from nvCOMP): pyarrow's
    frames pass; truncated ones, a wrong content size, a reserved block type, trailing bytes
    and another magic are refused."""
    from fsstgpu.formats.raw_chunks import _frame_problem
    rng = np.random.default_rng(3)
    codec = pa.Codec("zstd", compression_level=3)
    for size in (0, 1, 300, 70_000, 400_000):
        plain = b" ".join(rng.choice([b"alpha", b"beta", b"gamma", rng.bytes(9)], size // 5 + 1))
        plain = plain[:size]
        frame = codec.compress(plain, asbytes=True)
        assert _frame_problem(memoryview(frame), len(plain)) is None
        assert _frame_problem(memoryview(frame), len(plain) + 1) is not None
        for cut in sorted({1, 5, len(frame) // 2, len(frame) - 1}):
            assert _frame_problem(memoryview(frame[:cut]), len(plain)) is not None, (size, cut)
        assert _frame_problem(memoryview(frame + b"\0"), len(plain)) is not None
        assert _frame_problem(memoryview(b"\0" + frame[1:]), len(plain)) is not None
