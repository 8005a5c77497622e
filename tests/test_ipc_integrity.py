"""Arrow IPC inputs and outputs (issue #20): validation before anything is copied, checksums
over dictionaries, truncation, IPC compression kept, dictionary columns, exact round trips."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import SymbolTable
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import (
    compress_file,
    decompress_file,
    inspect_file,
    open_reader,
    read_table,
)
from fsstgpu.formats.files import NotCompressedError
from fsstgpu.formats.ipc_compression import ipc_compression
from fsstgpu.formats.ipc_integrity import (
    CRC_KEY,
    CRC_V1_KEY,
    END_KEY,
    LENGTHS_KEY,
    POSITION_KEY,
    SCHEMA_KEY,
    Dictionaries,
    IpcChecks,
    IpcWriter,
    batch_crc,
    batch_metadata,
    data_batches,
    end_batch,
    marked_schema,
    validate_batch,
)
from fsstgpu.formats.rowgroups import open_file

SUFFIX = {"arrow": ".arrow", "arrows": ".arrows"}


# ----------------------------------------------------------------------- helpers
def write_ipc(table_or_batches, path, fmt=None, *, rows=None, compression=None, metadata=None):
    """Write with plain pyarrow (batches, or a table cut into ``rows``-row batches)."""
    fmt = fmt or ("arrows" if str(path).endswith(".arrows") else "arrow")
    batches = (table_or_batches.to_batches(max_chunksize=rows)
               if isinstance(table_or_batches, pa.Table) else list(table_or_batches))
    new = ipc.new_file if fmt == "arrow" else ipc.new_stream
    with new(str(path), batches[0].schema,
             options=ipc.IpcWriteOptions(compression=compression)) as w:
        for k, b in enumerate(batches):
            w.write_batch(b, custom_metadata=metadata[k] if metadata else None)
    return path


def read_plain(path, ours=False) -> pa.Table:
    """Plain pyarrow's read; ``ours``: an fsstgpu output, its schema's one extra key removed."""
    data = pa.py_buffer(Path(path).read_bytes())
    reader = ipc.open_file(data) if data.to_pybytes()[:6] == b"ARROW1" else ipc.open_stream(data)
    table = reader.read_all()
    metadata = dict(table.schema.metadata or {})
    assert not ours or metadata.pop(SCHEMA_KEY) == b"2"
    return table.replace_schema_metadata(metadata or None) if ours else table


def batches_with_metadata(path):
    data = pa.py_buffer(Path(path).read_bytes())
    if data.to_pybytes()[:6] == b"ARROW1":
        r = ipc.open_file(data)
        return r.schema, [r.get_batch_with_custom_metadata(i) for i in range(r.num_record_batches)]
    r = ipc.open_stream(data)
    out = []
    while True:
        try:
            out.append(r.read_next_batch_with_custom_metadata())
        except StopIteration:
            return r.schema, out


def _table_at(buf: bytes, pos: int):
    """Field positions of the flatbuffer table at ``pos`` (0: absent)."""
    vt = pos - struct.unpack_from("<i", buf, pos)[0]
    vsize = struct.unpack_from("<H", buf, vt)[0]

    def field(k):
        at = 4 + 2 * k
        off = struct.unpack_from("<H", buf, vt + at)[0] if at + 2 <= vsize else 0
        return pos + off if off else 0
    return field


def _deref(buf: bytes, at: int) -> int:
    return at + struct.unpack_from("<I", buf, at)[0]


def messages(data: bytes) -> list[tuple[int, int, int, int]]:
    """``(start, header type, body start, body end)`` of each message of an IPC stream (or of
    the messages after an IPC file's magic); header type 1 schema, 2 dictionary, 3 batch."""
    out, pos = [], 8 if data[:6] == b"ARROW1" else 0
    while pos + 8 <= len(data):
        cont, mlen = struct.unpack_from("<Ii", data, pos)
        if cont != 0xFFFFFFFF or mlen == 0:
            break
        meta = pos + 8
        field = _table_at(data, _deref(data, meta))
        body = struct.unpack_from("<q", data, field(3))[0] if field(3) else 0
        out.append((pos, data[field(1)], meta + mlen, meta + mlen + body))
        pos = meta + mlen + body
    return out


EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """The command line in a process of its own: a crash shows as a signal, not a failure."""
    code = "import sys; from fsstgpu.cli.app import main; sys.argv[0] = 'fsstgpu'; main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, check=False, timeout=300)


def mixed_table(n=600) -> pa.Table:
    return pa.table({
        "s": pa.array([f"http://x.example/{i % 97}/{i}" if i % 7 else None for i in range(n)]),
        "d": pa.array([f"k{i % 13}" for i in range(n)]).dictionary_encode(),
        "l": pa.array([[f"a{i}", None, "bc"] if i % 5 else None for i in range(n)]),
        "n": pa.array(range(n)),
    })


def forged_list_table() -> pa.Table:
    """A list<string> column whose string child has one forged middle offset."""
    vals = pa.array(["abc", "de", "fgh", "ij"] * 4)
    offsets = np.frombuffer(vals.buffers()[1], np.int32)[:len(vals) + 1].copy()
    offsets[5] = 1 << 30
    bad = pa.Array.from_buffers(pa.string(), len(vals),
                                [None, pa.py_buffer(offsets.tobytes()), vals.buffers()[2]])
    lst = pa.ListArray.from_arrays(pa.array([0, 4, 8, 12, 16], pa.int32()), bad)
    return pa.table({"s": pa.array(["http://a.example/x"] * 4), "l": lst})


# ------------------------------------------------- finding 1: validate before copying anything
@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
@pytest.mark.parametrize("out", [".parquet", ".arrows", ".arrow"])
def test_forged_pass_through_column_is_corrupt(tmp_path, fmt, out):
    # pyarrow writes the forged offsets as they are; its Parquet writer then crashed on them
    # (SIGBUS) and an IPC output copied them through with exit 0
    src = write_ipc(forged_list_table(), tmp_path / f"in{SUFFIX[fmt]}")
    with pytest.raises(CorruptDataError, match=r"in\.arrows?: record batch 0: column 'l': "
                                               "invalid"):
        compress_file(src, tmp_path / f"c{out}")
    assert not (tmp_path / f"c{out}").exists()
    with pytest.raises(CorruptDataError, match="column 'l'"):
        read_table(src, device="cpu")


def test_forged_columns_exit_4_on_the_command_line(tmp_path):
    src = write_ipc(forged_list_table(), tmp_path / "in.arrows")
    res = run_cli("compress", src, tmp_path / "c.parquet")
    assert res.returncode == 4, (res.returncode, res.stderr)
    assert "column 'l'" in res.stderr
    # a compressed file whose copied-through column is forged afterwards
    good = write_ipc(forged_list_table().set_column(
        1, "l", pa.array([["x"]] * 4)), tmp_path / "good.arrows")
    compress_file(good, tmp_path / "c.arrows", columns=["s"])  # "l" copied through
    schema, batches = batches_with_metadata(tmp_path / "c.arrows")
    forged = [pa.record_batch([b.column(0), forged_list_table().column("l").chunk(0)],
                              schema=schema) for b, _ in batches[:1]]
    write_ipc(forged, tmp_path / "forged.arrows", metadata=[batches[0][1]])
    for args in (["decompress", tmp_path / "forged.arrows", tmp_path / "o.parquet"],
                 ["inspect", tmp_path / "forged.arrows"],
                 ["roundtrip", tmp_path / "forged.arrows"]):
        res = run_cli(*args)
        assert res.returncode == 4, (args, res.returncode, res.stderr)
        assert "column 'l'" in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_forged_fsst_storage_is_invalid_before_its_checksum(tmp_path):
    # the fsst column's storage is validated (offsets of its codes), not only its type
    compress_file(write_ipc(mixed_table(), tmp_path / "in.arrows", rows=200),
                  tmp_path / "c.arrows")
    schema, batches = batches_with_metadata(tmp_path / "c.arrows")
    batch, metadata = batches[0]
    ext = batch.column(0)
    codes = ext.storage.field("codes")
    offsets = np.frombuffer(codes.buffers()[1], np.int64)[:len(codes) + 1].copy()
    offsets[3] = 1 << 40
    bad_codes = pa.Array.from_buffers(codes.type, len(codes), [codes.buffers()[0], pa.py_buffer(
        offsets.tobytes()), codes.buffers()[2]], offset=codes.offset)
    storage = pa.StructArray.from_arrays(
        [bad_codes, ext.storage.field("lengths"), ext.storage.field("cuts"),
         ext.storage.field("table")], fields=list(ext.storage.type), mask=ext.storage.is_null())
    forged = pa.record_batch([pa.ExtensionArray.from_storage(ext.type, storage),
                              *batch.columns[1:]], schema=schema)
    write_ipc([forged], tmp_path / "forged.arrows", metadata=[metadata])
    with pytest.raises(CorruptDataError, match="record batch 0: column 's': invalid"):
        decompress_file(tmp_path / "forged.arrows", tmp_path / "o.arrows", device="cpu")


_DAMAGE_SCRIPT = textwrap.dedent("""
    import random, sys
    from pathlib import Path
    from fsstgpu.errors import CorruptDataError
    from fsstgpu.formats import decompress_file, inspect_file
    src, out, seed, count = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    good = src.read_bytes()
    rng = random.Random(seed)
    outcomes = {"corrupt": 0, "same": 0}
    for k in range(count):
        data = bytearray(good)
        pos, n = rng.randrange(len(good)), rng.randint(1, 63)
        data[pos:pos + n] = bytes(len(data[pos:pos + n]))
        bad = out / f"bad{k}.arrows"
        bad.write_bytes(bytes(data))
        try:
            inspect_file(bad)
            decompress_file(bad, out / f"o{k}.parquet", device="cpu")
            outcomes["same"] += 1  # checked by the caller
        except CorruptDataError:
            outcomes["corrupt"] += 1
            bad.unlink()
    print(outcomes)
""")


def test_a_streams_schema_is_checked_before_it_is_used(tmp_path):
    """A flipped byte in a column name of an fsstgpu stream's schema message (covered only by
    the batches' CRC32) read as "no column named 'name'" (a usage error, exit 2) with
    ``columns=`` / ``--columns``, as a name used twice (ValueError), or as a file fsstgpu did
    not compress: a helper's fuzzing. The first batch's checksum now checks it first."""
    pq.write_table(pa.table({"id": [1, 2, 3], "name": ["alpha", "beta", None],
                             "nome": ["x", "y", "z"]}), tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.arrows")
    decompress_file(tmp_path / "c.arrows", tmp_path / "p.arrows", device="cpu")
    for src, flip in (("p.arrows", 0x20), ("c.arrows", 0x20), ("p.arrows", 0x0E)):
        data = bytearray((tmp_path / src).read_bytes())
        at = data.index(b"\x04\x00\x00\x00name") + 4
        data[at + (1 if flip == 0x0E else 0)] ^= flip  # 'Name', or 'nome': a name used twice
        bad = tmp_path / f"bad-{flip}-{src}"
        bad.write_bytes(bytes(data))
        for kwargs in ({}, {"columns": ["name"]}, {"filters": [("name", "==", "beta")]}):
            with pytest.raises(CorruptDataError, match="record batch 0: CRC32 mismatch"):
                read_table(bad, device="cpu", **kwargs)
        with pytest.raises(CorruptDataError, match="CRC32 mismatch"):
            inspect_file(bad)
        done = subprocess.run([sys.executable, "-m", "fsstgpu.cli.app", "compress", "--columns",
                               "name", str(bad), str(tmp_path / "o.parquet"), "--force"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 4, done.stderr


def test_zeroed_bytes_never_crash(tmp_path):
    # runs of 1-63 zero bytes over a compressed stream (the fuzz finding): before, pyarrow's
    # serialiser (for the CRC) or Parquet writer (for copied columns) crashed on some; now every
    # one is CorruptDataError, or left the data as it was (padding)
    src = write_ipc(mixed_table(), tmp_path / "in.arrows", rows=200)
    compress_file(src, tmp_path / "c.arrows")
    work = tmp_path / "w"
    work.mkdir()
    done = subprocess.run([sys.executable, "-c", _DAMAGE_SCRIPT, str(tmp_path / "c.arrows"),
                           str(work), "20261201", "300"], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    expected = mixed_table()
    for out in work.glob("o*.parquet"):
        assert pq.read_table(out).equals(expected), out


# --------------------------------------------------- finding 3: dictionaries under the checksum
@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
def test_flipped_dictionary_bytes_are_corrupt(tmp_path, fmt):
    src = write_ipc(mixed_table(120), tmp_path / f"in{SUFFIX[fmt]}", rows=40)
    comp = tmp_path / f"c{SUFFIX[fmt]}"
    compress_file(src, comp)  # "d" is kept: a dictionary message per column and file
    expected = read_plain(src)
    data = comp.read_bytes()
    dictionary = [(b, e) for _, kind, b, e in messages(data) if kind == 2]
    assert dictionary
    start, end = dictionary[0]
    changed = 0
    for pos in range(start, end):
        bad = bytearray(data)
        bad[pos] ^= 1 << (pos % 8)
        path = tmp_path / f"bad{SUFFIX[fmt]}"
        path.write_bytes(bytes(bad))
        try:
            table = read_table(path, device="cpu")
        except CorruptDataError:
            changed += 1
            continue
        assert table.equals(expected), pos  # a flip in padding changes nothing
    assert changed > (end - start) // 2


def test_version_1_and_2_checksums_are_still_checked(tmp_path):
    # earlier versions' fsstgpu.crc32 (schema, data), fsstgpu.crc32.v2 (and whole dictionaries)
    import zlib
    from contextlib import nullcontext
    crc, v2_key = fsstgpu.formats.ipc_integrity.batch_crc, b"fsstgpu.crc32.v2"
    batch = pa.record_batch({"s": ["a", "b"], "d": pa.array(["x", "y"]).dictionary_encode()})
    v1 = {CRC_V1_KEY: str(zlib.crc32(batch.serialize(), zlib.crc32(batch.schema.serialize())))}
    v2 = [{POSITION_KEY: "[0, 2]"}, {END_KEY: '{"batches": 1, "rows": 2}'}]
    for b, m in zip([batch, batch.slice(0, 0)], v2, strict=True):
        m[v2_key] = str(crc(b, next(iter(m.values())).encode()))
    for metadata in ([v1], v2):
        for k, fmt in enumerate(["arrows", "arrow"] * 2):  # then with an altered batch
            first = pa.record_batch({"s": ["a", "c"], "d": batch.column(1)}) if k > 1 else batch
            path = write_ipc([first, batch.slice(0, 0)][:len(metadata)], tmp_path / f"{k}.{fmt}",
                             metadata=metadata)
            with pytest.raises(CorruptDataError, match="CRC32") if k > 1 else nullcontext():
                assert read_table(path, device="cpu").column("s").to_pylist() == ["a", "b"]


# ----------------------------------------------------------- finding 4: truncation is an error
def _compressed_stream(tmp_path) -> tuple[Path, bytes]:
    src = write_ipc(mixed_table(3000), tmp_path / "in.arrows", rows=800)
    comp = tmp_path / "c.arrows"
    compress_file(src, comp)
    return comp, comp.read_bytes()


def test_stream_cut_at_any_message_boundary_is_truncated(tmp_path):
    comp, data = _compressed_stream(tmp_path)
    bounds = [start for start, *_ in messages(data)][1:] + [len(data) - len(EOS)]
    assert len(bounds) >= 6  # dictionaries, 4 batches, the end batch
    for k, cut in enumerate(bounds[:-1]):
        for tail in (b"", EOS):
            bad = tmp_path / f"cut{k}{len(tail)}.arrows"
            bad.write_bytes(data[:cut] + tail)
            with pytest.raises(CorruptDataError, match="truncated"):
                decompress_file(bad, tmp_path / "o.arrows", device="cpu")
            with pytest.raises(CorruptDataError, match="truncated"):
                read_table(bad, device="cpu")
            with pytest.raises(CorruptDataError, match="truncated"):
                inspect_file(bad)
            assert not (tmp_path / "o.arrows").exists()
    # the whole stream reads, and its end batch is not data
    assert read_table(comp, device="cpu").num_rows == 3000
    assert inspect_file(comp)["unit_rows"] == [800, 800, 800, 600]


def test_truncated_stream_exits_4(tmp_path):
    comp, data = _compressed_stream(tmp_path)
    cut = [start for start, kind, *_ in messages(data) if kind == 3][2]
    (tmp_path / "cut.arrows").write_bytes(data[:cut] + EOS)
    res = run_cli("decompress", tmp_path / "cut.arrows", tmp_path / "o.arrows")
    assert res.returncode == 4 and "truncated" in res.stderr, res.stderr


def test_lost_repeated_or_reordered_batches_are_corrupt(tmp_path):
    for fmt in ("arrow", "arrows"):
        src = write_ipc(mixed_table(3000), tmp_path / f"in{SUFFIX[fmt]}", rows=800)
        comp = tmp_path / f"c{SUFFIX[fmt]}"
        compress_file(src, comp)
        schema, batches = batches_with_metadata(comp)
        assert [b.num_rows for b, _ in batches] == [800, 800, 800, 600, 0]
        assert POSITION_KEY in batches[1][1] and END_KEY in batches[-1][1]
        assert SCHEMA_KEY in schema.metadata
        for name, order in (("lost", [0, 2, 3, 4]), ("repeated", [0, 1, 1, 2, 3, 4]),
                            ("reordered", [1, 0, 2, 3, 4]), ("no end", [0, 1, 2, 3]),
                            ("after end", [0, 1, 2, 3, 4, 0])):
            bad = tmp_path / f"{name}{SUFFIX[fmt]}"
            write_ipc([batches[k][0] for k in order], bad, fmt,
                      metadata=[batches[k][1] for k in order])
            with pytest.raises(CorruptDataError):
                read_table(bad, device="cpu")
            with pytest.raises(CorruptDataError):
                decompress_file(bad, tmp_path / f"o{SUFFIX[fmt]}", device="cpu", force=True)


def test_plain_readers_see_an_empty_end_batch(tmp_path):
    src = write_ipc(mixed_table(300), tmp_path / "in.arrows", rows=100)
    compress_file(src, tmp_path / "c.arrow")
    decompress_file(tmp_path / "c.arrow", tmp_path / "o.arrows", device="cpu")
    reader = ipc.open_stream(str(tmp_path / "o.arrows"))
    assert [b.num_rows for b in reader] == [100, 100, 100, 0]
    # the decompressed output's schema is the input's and the mark, nothing else
    assert read_plain(tmp_path / "o.arrows", ours=True).schema.metadata is None
    assert read_plain(tmp_path / "o.arrows").equals(read_plain(src))


def write_unmarked(table, path):
    """An output of fsstgpu without the schema mark (decompressed ones before they had it)."""
    from fsstgpu.formats.ipc_integrity import IpcWriter
    with pa.OSFile(str(path), "wb") as f:
        writer = IpcWriter(f, str(path).rsplit(".", 1)[1], table.schema, mark=False)
        for batch in table.to_batches(100):
            writer.write(batch)
        writer.close()
    return path


def test_checksum_key_without_the_schema_mark_still_needs_the_end(tmp_path):
    # an output without the schema mark cut short is still recognised by its batches' keys
    schema, batches = batches_with_metadata(write_unmarked(mixed_table(300), tmp_path / "o.arrows"))
    assert CRC_KEY in batches[0][1] and SCHEMA_KEY not in (schema.metadata or {})
    write_ipc([b for b, _ in batches[:2]], tmp_path / "cut.arrows",
              metadata=[m for _, m in batches[:2]])
    with pytest.raises(CorruptDataError, match="truncated"):
        compress_file(tmp_path / "cut.arrows", tmp_path / "again.arrows")


@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
def test_unmarked_output_whose_first_batch_lost_its_metadata_is_corrupt(tmp_path, fmt):
    # batch 0's keys removed and its data altered: only later batches tell it is fsstgpu's,
    # which read before returned the altered rows (and row_groups=[0] the batch alone)
    schema, batches = batches_with_metadata(
        write_unmarked(mixed_table(300), tmp_path / f"o{SUFFIX[fmt]}"))
    first = batches[0][0]
    altered = first.set_column(0, first.schema.field(0),
                               pa.array(["X"] * first.num_rows, first.column(0).type))
    bad = write_ipc([altered] + [b for b, _ in batches[1:]], tmp_path / f"bad{SUFFIX[fmt]}",
                    metadata=[{}] + [m for _, m in batches[1:]])
    with pytest.raises(CorruptDataError, match="record batch 0 has no|no fsstgpu.crc32"):
        read_table(bad, device="cpu")
    if fmt == "arrow":
        with pytest.raises(CorruptDataError, match="no fsstgpu.crc32"):
            read_table(bad, device="cpu", row_groups=[0])


# ------------------------------------------------------- finding 9: IPC compression is kept
@pytest.mark.parametrize("codec", ["lz4", "zstd", None])
@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
def test_ipc_compression_is_kept_or_zstd(tmp_path, codec, fmt):
    table = mixed_table(2000)
    src = write_ipc(table, tmp_path / f"in{SUFFIX[fmt]}", rows=500, compression=codec)
    # an uncompressed input's compressed output is zstd (uncompressed, the fsst storage can be
    # larger than the strings), and its decompressed output keeps that
    want = codec or "zstd"
    for out in ("c.arrow", "c.arrows"):
        compress_file(src, tmp_path / out)
        with open_file(tmp_path / out) as f:
            assert ipc_compression(f, out.rsplit(".", 1)[1]) == want, out
        decompress_file(tmp_path / out, tmp_path / f"o{SUFFIX[fmt]}", device="cpu", force=True)
        with open_file(tmp_path / f"o{SUFFIX[fmt]}") as f:
            assert ipc_compression(f, fmt) == want
        assert read_plain(tmp_path / f"o{SUFFIX[fmt]}").equals(table)


def test_parquet_input_gives_zstd_ipc(tmp_path):
    table = mixed_table(2000)
    pq.write_table(table, tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.arrow")
    with open_file(tmp_path / "c.arrow") as f:
        assert ipc_compression(f, "arrow") == "zstd"
    # an lz4 Feather stays lz4 (a 102.8 MiB one became an 888.3 MiB .arrow); an uncompressed
    # one gets zstd unless asked otherwise, and uncompressed is larger
    src = write_ipc(table, tmp_path / "none.arrow")
    compress_file(write_ipc(table, tmp_path / "lz4.arrow", compression="lz4"),
                  tmp_path / "c_lz4.arrow")
    compress_file(src, tmp_path / "c_none.arrow")
    compress_file(src, tmp_path / "c_raw.arrow", ipc_compression="uncompressed")
    for name, codec in (("c_lz4.arrow", "lz4"), ("c_none.arrow", "zstd"),
                        ("c_raw.arrow", "uncompressed")):
        with open_file(tmp_path / name) as f:
            assert ipc_compression(f, "arrow") == codec
    sizes = {n: (tmp_path / n).stat().st_size for n in ("c_lz4.arrow", "c_raw.arrow")}
    assert sizes["c_lz4.arrow"] < sizes["c_raw.arrow"]
    with pytest.raises(ValueError, match="ipc_compression"):
        compress_file(src, tmp_path / "c_bad.arrow", ipc_compression="gzip")


# ------------------------------------------- finding 10: per-batch dictionaries, compress_table
def _per_batch_dictionaries(values_per_batch=100, batches=4, index=pa.int8()):
    dtype = pa.dictionary(index, pa.string())
    return [pa.record_batch({"d": pa.array([f"v{b}_{i % values_per_batch}" if i % 11 else None
                                            for i in range(300)]).dictionary_encode().cast(dtype),
                             "n": pa.array(range(300))}) for b in range(batches)]


def test_replacement_dictionaries_round_trip_through_streams(tmp_path):
    src = write_ipc(_per_batch_dictionaries(), tmp_path / "in.arrows")
    original = read_plain(src)
    for comp in ("c.arrows", "c.arrow", "c.parquet"):
        compress_file(src, tmp_path / comp, columns="d")
        decompress_file(tmp_path / comp, tmp_path / "o.arrows", device="cpu", force=True)
        assert read_plain(tmp_path / "o.arrows").equals(original), comp
    # kept, the column's dictionaries pass through a stream unchanged
    compress_file(src, tmp_path / "k.arrows")
    assert read_plain(tmp_path / "k.arrows").equals(original)


def test_replacement_dictionaries_into_an_ipc_file(tmp_path):
    src = write_ipc(_per_batch_dictionaries(), tmp_path / "in.arrows")
    # kept: an IPC file holds one dictionary, and 400 values are more than int8 indices reach
    with pytest.raises(ValueError, match="column 'd'.*int8.*IPC stream"):
        compress_file(src, tmp_path / "k.arrow")
    assert not (tmp_path / "k.arrow").exists()
    compress_file(src, tmp_path / "c.arrows", columns="d")
    # 400 distinct values over the file: more than int8 indices reach (found at the 200th)
    with pytest.raises(ValueError, match=r"column 'd': \d+ distinct values.*int8"):
        decompress_file(tmp_path / "c.arrows", tmp_path / "o.arrow", device="cpu")
    res = run_cli("decompress", tmp_path / "c.arrows", tmp_path / "o.arrow")
    assert res.returncode == 1 and "IPC stream" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    # few enough values: one dictionary grows over the file, the values come back
    small = write_ipc(_per_batch_dictionaries(values_per_batch=20), tmp_path / "small.arrows")
    compress_file(small, tmp_path / "cs.arrows", columns="d")
    decompress_file(tmp_path / "cs.arrows", tmp_path / "os.arrow", device="cpu")
    back, original = read_plain(tmp_path / "os.arrow"), read_plain(small)
    assert back.schema == original.schema
    assert back.column("d").to_pylist() == original.column("d").to_pylist()



@pytest.mark.parametrize("src_name", ["in.arrows", "in.parquet"])
def test_an_ipc_file_whose_dictionaries_outgrow_one_reads_back(tmp_path, src_name):
    """An .arrow file compressed from per-batch (per-row-group) dictionaries of 100 values each,
    400 over the file: more than one int8 dictionary holds. Read, each unit gets a dictionary of
    its own where the growing one is full; an IPC file output is refused before it is written."""
    batches = _per_batch_dictionaries()
    if src_name == "in.arrows":
        src = write_ipc(batches, tmp_path / src_name)
        original = read_plain(src)
    else:
        src = tmp_path / src_name
        with pq.ParquetWriter(src, batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)
        original = pq.read_table(src)
    assert original.schema.field("d").type == pa.dictionary(pa.int8(), pa.string())
    comp = tmp_path / "c.arrow"
    compress_file(src, comp, columns="d")
    back = read_table(comp, device="cpu")
    assert back.schema == original.schema
    assert back.column("d").to_pylist() == original.column("d").to_pylist()
    assert back.equals(original)  # first-occurrence dictionaries, as dictionary_encode made
    assert all(len(c.dictionary) <= 128 for c in back.column("d").chunks)
    assert open_reader(comp, device="cpu").read_all().equals(original)
    some = read_table(comp, device="cpu", row_groups=[3, 1, 2], columns=["d"])
    want = pa.concat_tables([original.slice(k * 300, 300) for k in (3, 1, 2)]).select(["d"])
    assert some.column("d").to_pylist() == want.column("d").to_pylist()
    # a stream or Parquet output holds a dictionary per unit
    decompress_file(comp, tmp_path / "o.arrows", device="cpu")
    assert read_plain(tmp_path / "o.arrows").equals(original)
    decompress_file(comp, tmp_path / "o.parquet", device="cpu")
    assert pq.read_table(tmp_path / "o.parquet").column("d").to_pylist() == (
        original.column("d").to_pylist())
    # an IPC file cannot: refused when the unit that outgrows it comes, nothing left
    with pytest.raises(ValueError, match=r"column 'd': \d+ distinct values.*IPC stream"):
        decompress_file(comp, tmp_path / "o.arrow", device="cpu")
    assert not (tmp_path / "o.arrow").exists()
    res = run_cli("decompress", comp, tmp_path / "o.arrow")
    assert res.returncode == 1 and "column 'd'" in res.stderr and "IPC stream" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "o.arrow").exists()
    # what fits one dictionary still grows one over the file
    small = write_ipc(_per_batch_dictionaries(values_per_batch=20), tmp_path / "small.arrows")
    compress_file(small, tmp_path / "cs.arrow", columns="d")
    grown = read_table(tmp_path / "cs.arrow", device="cpu").column("d").chunks
    assert [len(c.dictionary) for c in grown] == [20, 40, 60, 80]
    decompress_file(tmp_path / "cs.arrow", tmp_path / "os.arrow", device="cpu")
    assert read_plain(tmp_path / "os.arrow").column("d").to_pylist() == (
        read_plain(small).column("d").to_pylist())

def test_compress_table_keeps_dictionary_columns(tmp_path):
    t = pa.table({"d": pa.array([f"x{i % 62}" for i in range(500)]).dictionary_encode(),
                  "s": pa.array([f"y{i}" for i in range(500)])})
    comp = fsstgpu.compress_table(t)
    assert comp.schema.field("d").type == t.schema.field("d").type
    assert fsstgpu.decompress_table(comp, device="cpu").equals(t)
    named = fsstgpu.compress_table(t, columns=["d"])
    assert fsstgpu.decompress_table(named, device="cpu").equals(t)  # first-occurrence order


# -------------------------------------------- finding 11: dictionary<int32, string_view> named
def test_dictionary_of_string_views_compresses(tmp_path):
    views = pa.array(["a", "bb", "ccc", None], pa.string_view())
    col = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, None, 2, 3] * 50, pa.int32()), views)
    src = write_ipc(pa.table({"d": col}), tmp_path / "in.arrows", rows=100)
    original = read_plain(src)
    res = run_cli("compress", src, tmp_path / "c.arrows", "--columns", "d")
    assert res.returncode == 0, res.stderr
    decompress_file(tmp_path / "c.arrows", tmp_path / "o.arrows", device="cpu")
    back = read_plain(tmp_path / "o.arrows")
    assert back.schema == original.schema
    assert back.column("d").to_pylist() == original.column("d").to_pylist()
    assert read_table(tmp_path / "c.arrows", device="cpu").column("d").to_pylist() == (
        original.column("d").to_pylist())


# ----------------------------------------------------- every type through .arrow and .arrows
def every_type_table(n=240) -> pa.Table:
    words = [f"w{i % 17}" if i % 9 else None for i in range(n)]
    return pa.table({
        "s": pa.array([f"text {i}" if i % 5 else None for i in range(n)]),
        "lst": pa.array([[f"a{i}", None] if i % 4 else None for i in range(n)]),
        "llst": pa.array([["x", f"{i}"] for i in range(n)], pa.large_list(pa.string())),
        "fsl": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32(), 2)),
        "map": pa.array([[("k", i)] if i % 3 else [] for i in range(n)],
                        pa.map_(pa.string(), pa.int64())),
        "nest": pa.array([{"a": {"b": f"n{i}"}, "c": [i]} for i in range(n)]),
        "d64": pa.array(np.arange(n, dtype=np.int64) * 86_400_000, pa.date64()),
        "ts": pa.array(np.arange(n, dtype=np.int64), pa.timestamp("s")),
        "t32": pa.array(np.arange(n, dtype=np.int32), pa.time32("s")),
        "dls": pa.array(words, pa.large_string()).dictionary_encode().cast(
            pa.dictionary(pa.int8(), pa.large_string())),
    })


@pytest.mark.parametrize("src_fmt", ["arrow", "arrows", "parquet"])
@pytest.mark.parametrize("out_fmt", ["arrow", "arrows"])
@pytest.mark.parametrize("columns", [None, "s,dls"])
def test_every_type_round_trips_through_ipc(tmp_path, src_fmt, out_fmt, columns):
    # from Parquet, a map's entries field is named key_value, which pyarrow's IPC writer renames
    # to entries: the batch checksums must hash the schema as it is read back
    if src_fmt == "parquet":
        src = tmp_path / "in.parquet"
        pq.write_table(every_type_table(), src, row_group_size=70)
    else:
        src = write_ipc(every_type_table(), tmp_path / f"in{SUFFIX[src_fmt]}", rows=70)
    comp = tmp_path / f"c{SUFFIX[out_fmt]}"
    compress_file(src, comp, columns=columns)
    out = tmp_path / f"o{SUFFIX[out_fmt]}"
    decompress_file(comp, out, device="cpu")
    original = pq.read_table(src) if src_fmt == "parquet" else read_plain(src)
    back = read_plain(out, ours=True)
    if src_fmt == "parquet":  # Parquet's own metadata, and the map's field name, differ
        original = original.replace_schema_metadata(None)
        back = back.cast(original.schema)
    assert back.schema.equals(original.schema, check_metadata=True)
    if columns is None:  # dictionaries kept: exact
        assert back.equals(original)
    else:  # a named dictionary column's dictionaries are rebuilt from its values
        for name in original.column_names:
            assert back.column(name).to_pylist() == original.column(name).to_pylist(), name
    assert read_table(comp, device="cpu").column("nest").equals(original.column("nest"))
    assert inspect_file(comp)["unit_rows"] == [70, 70, 70, 30]


def test_per_batch_dictionaries_round_trip_exactly_through_streams(tmp_path):
    batches = _per_batch_dictionaries(values_per_batch=30)
    src = write_ipc(batches, tmp_path / "in.arrows")
    for columns in (None, "d"):
        compress_file(src, tmp_path / "c.arrows", columns=columns, force=True)
        decompress_file(tmp_path / "c.arrows", tmp_path / "o.arrows", device="cpu", force=True)
        back = ipc.open_stream(str(tmp_path / "o.arrows")).read_all()
        assert back.equals(read_plain(src)), columns
        assert [c.dictionary.to_pylist() for c in back.column("d").chunks][:4] == [
            b.column(0).dictionary.to_pylist() for b in batches]


def test_decompressed_ipc_file_is_read_without_its_end_batch(tmp_path):
    # a .arrow without the mark (an older decompressed one): its end batch found from the footer
    from fsstgpu.formats.rowgroups import Source

    src = write_ipc(mixed_table(300), tmp_path / "in.arrow", rows=100)
    write_unmarked(mixed_table(300), tmp_path / "o.arrow")
    assert inspect_file(tmp_path / "o.arrow")["unit_rows"] == [100, 100, 100]
    with Source(tmp_path / "o.arrow") as source:
        assert source.num_units == 3
        assert source.unit(2).num_rows == 100
        with pytest.raises(IndexError):
            source.unit(3)
    assert read_table(tmp_path / "o.arrow", device="cpu").equals(read_plain(src))
    compress_file(tmp_path / "o.arrow", tmp_path / "again.arrow")
    assert inspect_file(tmp_path / "again.arrow")["unit_rows"] == [100, 100, 100]
    # without its end batch it is truncated
    schema, batches = batches_with_metadata(tmp_path / "o.arrow")
    write_ipc([b for b, _ in batches[:-1]], tmp_path / "cut.arrow",
              metadata=[m for _, m in batches[:-1]])
    with pytest.raises(CorruptDataError, match="truncated"):
        read_table(tmp_path / "cut.arrow", device="cpu")


def test_a_shared_dictionary_is_hashed_once(tmp_path, monkeypatch):
    # a kept dictionary column's batches share one dictionary: serialised for its checksum once
    # per reader and writer, not once per batch (it can be far larger than a batch's indices)
    words = pa.array([f"word {i}" for i in range(5000)])
    col = pa.DictionaryArray.from_arrays(pa.array(np.arange(20_000) % 5000, pa.int32()), words)
    src = write_ipc(pa.table({"d": col, "s": pa.array(["x"] * 20_000)}), tmp_path / "in.arrows",
                    rows=1000)
    hashed = []
    record_batch = pa.record_batch

    def counting(arrays, *args, names=None, **kwargs):
        if names == ["dictionary"]:
            hashed.append(len(arrays[0]))
        return record_batch(arrays, *args, names=names, **kwargs)

    monkeypatch.setattr(pa, "record_batch", counting)
    compress_file(src, tmp_path / "c.arrows")
    back = read_table(tmp_path / "c.arrows", device="cpu")
    assert back.column("d").equals(read_plain(src).column("d"))
    # the writer's, the stream's first batch at open (its schema's check), then read_table's
    # (21 batches each); the fsst column's tables are others
    assert [n for n in hashed if n == 5000] == [5000, 5000, 5000]


def test_a_stream_cut_after_its_dictionaries_is_truncated(tmp_path):
    # a decompressed stream has no schema mark; cut after its dictionaries it still tells
    src = write_ipc(mixed_table(300), tmp_path / "in.arrows", rows=100)
    compress_file(src, tmp_path / "c.arrows")
    decompress_file(tmp_path / "c.arrows", tmp_path / "o.arrows", device="cpu")
    data = (tmp_path / "o.arrows").read_bytes()
    first_batch = [start for start, kind, *_ in messages(data) if kind == 3][0]
    (tmp_path / "cut.arrows").write_bytes(data[:first_batch] + EOS)
    with pytest.raises(CorruptDataError, match="truncated: it ends after its dictionaries"):
        read_table(tmp_path / "cut.arrows", device="cpu")
    # an empty stream of any writer is no such thing: no dictionaries without a batch
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    with ipc.new_stream(str(tmp_path / "empty.arrows"), schema) as w:
        w.write_table(schema.empty_table())
    assert read_table(tmp_path / "empty.arrows", device="cpu").num_rows == 0


@pytest.mark.parametrize(("values", "messages_", "type_"), [
    ([["x"], ["x", "y"]], 2, pa.string()), ([[], ["x"]], 1, pa.string()),
    ([["x"], []], 1, pa.string()), ([[], [], ["x", "y"], ["x"], ["x", "y", "z"]], 2, pa.string()),
    ([["a long value " * 2 + "1"], ["a long value " * 2 + "1", "a" * 32]], 2, pa.string_view())])
def test_growing_dictionaries_into_an_ipc_file(tmp_path, values, messages_, type_):
    # an IPC file reader applies all deltas at once: the checksum covers each batch's prefix
    batches = [pa.record_batch([pa.array(v, pa.string()), pa.DictionaryArray.from_arrays(
        pa.array(range(len(v)), pa.int32()), pa.array(v, type_))], names="sd") for v in values]
    src = write_ipc(batches, tmp_path / "in.arrows")
    for columns in ("d", None):  # the last, kept: "d"'s dictionary messages are in c.arrow
        compress_file(src, tmp_path / "c.arrow", columns=columns, force=True)
        decompress_file(tmp_path / "c.arrow", tmp_path / "o.arrow", device="cpu", force=True)
        for path in ("c.arrow", "o.arrow"):
            back = read_table(tmp_path / path, device="cpu")
            assert back.column("d").to_pylist() == sum(values, []), (path, columns)
    # a flip in any dictionary message is seen (bodies left uncompressed, to reach the bytes)
    # (one table for "s": its tables are one dictionary message more, flipped too)
    compress_file(src, tmp_path / "c.arrow", ipc_compression="uncompressed", force=True,
                  table=SymbolTable([b"x"]))
    data = (tmp_path / "c.arrow").read_bytes()
    dictionaries = [e for _, kind, _, e in messages(data) if kind == 2]
    assert len(dictionaries) == messages_ + 1  # "d"'s dictionary, a delta; "s"'s tables
    for end in dictionaries:
        bad = bytearray(data)
        bad[end - 8] ^= 1  # the first value byte (a message's last buffer, padded to 8)
        (tmp_path / "bad.arrow").write_bytes(bytes(bad))
        with pytest.raises(CorruptDataError, match="CRC32 mismatch"):
            read_table(tmp_path / "bad.arrow", device="cpu")


def test_a_decompressed_stream_cut_after_its_schema_is_truncated(tmp_path):
    compress_file(write_ipc(mixed_table(120), tmp_path / "i.arrows", rows=40), tmp_path / "c.arrow")
    decompress_file(tmp_path / "c.arrow", tmp_path / "o.arrows", device="cpu")
    data, cut = (tmp_path / "o.arrows").read_bytes(), tmp_path / "cut.arrows"
    for end in [start for start, *_ in messages(data)][1:3]:  # after the schema, a dictionary
        for tail in (b"", EOS):
            cut.write_bytes(data[:end] + tail)
            for call in (lambda: read_table(cut, device="cpu"), lambda: compress_file(
                    cut, tmp_path / "x.arrow")):
                with pytest.raises(CorruptDataError, match="truncated"):
                    call()
            with pytest.raises(NotCompressedError):  # plain: refused before it is read
                decompress_file(cut, tmp_path / "x.pq")
            assert not (tmp_path / "x.pq").exists()


@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
@pytest.mark.parametrize("mark", [True, False])
def test_ipc_writer_takes_batches_of_the_callers_schema(tmp_path, fmt, mark):
    """IpcWriter given batches of the schema it was made with (the caller's, unmarked, with
    metadata of its own) writes a file its reader takes: the checksum was computed over the
    batch's own schema while the file holds the writer's (marked) one, so every read failed
    with "CRC32 mismatch"."""
    schema = pa.schema([pa.field("n", pa.int8(), metadata={b"f": b"1"}),
                        ("s", pa.string())], metadata={b"k": b"v"})
    batch = pa.record_batch([pa.array([1, 2], pa.int8()), pa.array(["a", None])],
                            schema=schema)
    path = tmp_path / f"x.{fmt}"
    with pa.OSFile(str(path), "wb") as f:
        writer = IpcWriter(f, fmt, schema, mark=mark)
        writer.write(batch)
        writer.write(batch.replace_schema_metadata(None))  # (any metadata: the writer's wins)
        writer.close()
    got = read_table(path, device="cpu")
    assert got.to_pydict() == {"n": [1, 2, 1, 2], "s": ["a", None, "a", None]}
    assert got.schema.metadata == {b"k": b"v"}
    assert got.schema.field("n").metadata == {b"f": b"1"}
    # a batch of rows and no columns, of another schema's metadata, keeps its rows
    empty = pa.schema([], metadata={b"k": b"v"})
    with pa.OSFile(str(path), "wb") as f:
        writer = IpcWriter(f, fmt, empty, mark=mark)
        writer.write(pa.record_batch({"r": pa.nulls(3)}).select([]))
        writer.close()
    assert read_table(path, device="cpu").num_rows == 3


def test_replaced_dictionaries_are_not_held_past_a_few_megabytes(tmp_path):
    """The checks' cache of validated dictionaries held the last 16 a stream sent: where each
    batch replaces a large dictionary, 16 times what a batch reads (24 batches of a 9 MB
    dictionary: 153 MB of pyarrow's memory while reading). Those no batch uses any more are
    now held up to 16 MiB."""
    def batch(k):
        words = pa.array([f"{k:04d}-{i:027d}" for i in range(1 << 17)])  # 4 MiB of values
        return pa.record_batch({"d": pa.DictionaryArray.from_arrays(
            pa.array([0, 1, 2], pa.int32()), words), "s": ["a", "b", "c"]})

    with ipc.new_stream(tmp_path / "in.arrows", batch(0).schema) as w:
        for k in range(24):
            w.write_batch(batch(k))
    compress_file(tmp_path / "in.arrows", tmp_path / "c.arrows")
    for src in ("in.arrows", "c.arrows"):
        before = pa.total_allocated_bytes()
        held, count = 0, 0
        for b in open_reader(tmp_path / src):
            count += 1
            assert b.column("d").to_pylist() == [f"{count - 1:04d}-{i:027d}" for i in range(3)]
            del b
            held = max(held, pa.total_allocated_bytes() - before)
        assert count == 24
        assert held < 40 << 20, (src, held >> 20)


# ------------------------------------- the checks themselves, each on the input it must refuse
@pytest.mark.parametrize("index", [-1, 3])
def test_a_dictionary_index_just_outside_its_dictionary_is_corrupt(index):
    """The range check of dictionary indices (validated once per dictionary, the indices per
    batch) had no test: no index out of range reached it, so it could have been dropped, or
    taken an index equal to the dictionary's length (or -1) as valid, a read past the values."""
    col = pa.DictionaryArray.from_arrays(pa.array([0, index, None], pa.int8()),
                                         pa.array(["a", "b", "c"]), safe=False)
    batch = pa.record_batch({"d": col})
    with pytest.raises(CorruptDataError, match="column 'd': invalid.*out of range"):
        validate_batch(batch, Dictionaries())
    with pytest.raises(CorruptDataError, match="column 'd': invalid"):
        validate_batch(batch)  # (without the cache: pyarrow's own full validation)
    ok = pa.DictionaryArray.from_arrays(pa.array([0, 2, None], pa.int8()), col.dictionary)
    validate_batch(pa.record_batch({"d": ok}), Dictionaries())  # the first and the last value
    validate_batch(pa.record_batch({"d": ok}))


def test_a_forged_dictionary_is_corrupt_however_its_indices_look():
    """A dictionary is validated in full once (then remembered): a forged one with valid indices
    must still be refused, the first time and every time after."""
    offsets = pa.py_buffer(np.array([0, 9, 2], np.int32).tobytes())
    forged = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"ab")])
    batch = pa.record_batch({"d": pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()),
                                                                 forged)})
    dictionaries = Dictionaries()
    for _ in range(2):
        with pytest.raises(CorruptDataError, match="column 'd': invalid"):
            validate_batch(batch, dictionaries)


@pytest.mark.parametrize("lengths", [[3], [-1], [True], ["1"], [1.0], [1, 1], [], (1,)])
def test_forged_dictionary_lengths_are_corrupt(lengths):
    """The dictionary lengths a batch's metadata gives (the prefix of each dictionary its
    checksum covers) are read from the file: a length past the dictionary, negative, not an
    int, or a count of them that is not the batch's dictionaries', is corrupt, not hashed as
    some other prefix (a slice past the end is the whole dictionary) or a TypeError."""
    batch = pa.record_batch({"d": pa.array(["x", "y"]).dictionary_encode()})
    for good in ([0], [1], [2]):
        batch_crc(batch, lengths=good)
    with pytest.raises(CorruptDataError, match="dictionaries were altered"):
        batch_crc(batch, lengths=lengths)


def _checked_batch_and_end():
    """A marked schema's batch of a dictionary column, checked, and its end batch."""
    schema = marked_schema(pa.schema([("d", pa.dictionary(pa.int8(), pa.string()))]))
    batch = pa.RecordBatch.from_arrays([pa.array(["x", "y"]).dictionary_encode()],
                                       schema=schema)
    checks = IpcChecks(schema)
    assert checks.check(batch, batch_metadata(batch, index=0, rows=2)).num_rows == 2
    return checks, batch, end_batch(schema, batch, batches=1, rows=2)


def test_a_batch_after_the_end_batch_is_corrupt():
    """Nothing may follow the end batch: a batch there (its checksum and position right) was
    taken, the rows past the end handed out before the count at the end refused them."""
    checks, batch, (end, metadata) = _checked_batch_and_end()
    assert checks.check(end, metadata) is None
    with pytest.raises(CorruptDataError, match="follows the end batch"):
        checks.check(batch, batch_metadata(batch, index=1, rows=4))


def test_an_end_batch_naming_a_dictionary_prefix_is_corrupt():
    """The end batch holds the final dictionaries, so its dictionary lengths are theirs: one
    that names a shorter prefix (its checksum made over that prefix) was accepted, the values
    past it covered by no checksum."""
    checks, _, (end, metadata) = _checked_batch_and_end()
    assert json.loads(metadata[LENGTHS_KEY]) == [2]
    value = metadata[END_KEY]
    forged = {END_KEY: value, LENGTHS_KEY: b"[1]",
              CRC_KEY: str(batch_crc(end, value + b"[1]", Dictionaries(), [1])).encode()}
    with pytest.raises(CorruptDataError, match="dictionaries were altered"):
        checks.check(end, forged)
    assert checks.check(end, metadata) is None


def _sealed(batch, key: bytes, value: bytes) -> dict:
    """Metadata of ``key`` = ``value`` whose checksum matches (what a forger writes: a CRC32
    is no signature), for a batch without dictionaries."""
    return {key: value, LENGTHS_KEY: b"[]",
            CRC_KEY: str(batch_crc(batch, value + b"[]", Dictionaries(), [])).encode()}


def _marked_checks():
    schema = marked_schema(pa.schema([("s", pa.string())]))
    return IpcChecks(schema), pa.RecordBatch.from_arrays([pa.array(["a", "b"])], schema=schema)


@pytest.mark.parametrize("position, match", [
    (b"[1, 2]", "record batch 0 says it is batch 1"), (b"[0, 3]", "ends at row 3 but 2 rows"),
    (b"[0]", "unreadable"), (b"[0, 2, 2]", "unreadable"), (b'[0, "2"]', "unreadable"),
    (b'{"0": 2}', "unreadable"), (b'"02"', "unreadable"), (b"[0,", "unreadable"),
    (b"\xff", "unreadable")])
def test_a_batch_whose_sealed_position_is_wrong_is_corrupt(position, match):
    """Each position check on its own, the checksum matching: the tests of lost or reordered
    batches were refused by whichever check came first, so any one check could go unnoticed
    (a batch saying it is another, rows not counted, a position of three numbers)."""
    checks, batch = _marked_checks()
    with pytest.raises(CorruptDataError, match=match):
        checks.check(batch, _sealed(batch, POSITION_KEY, position))
    checks, batch = _marked_checks()
    assert checks.check(batch, _sealed(batch, POSITION_KEY, b"[0, 2]")).num_rows == 2


@pytest.mark.parametrize("end", [b'{"batches": 1}', b'{"batches": 1, "rows": 2, "x": 0}',
                                 b"[1, 2]", b'"end"', b"{", b"\xff"])
def test_an_unreadable_sealed_end_is_corrupt(end):
    checks, batch = _marked_checks()
    checks.check(batch, _sealed(batch, POSITION_KEY, b"[0, 2]"))
    with pytest.raises(CorruptDataError, match="unreadable fsstgpu.end"):
        checks.check(batch.slice(0, 0), _sealed(batch.slice(0, 0), END_KEY, end))


def test_an_end_batch_with_rows_or_miscounting_is_corrupt():
    """The end batch has no rows, and counts the batches and rows read before it."""
    checks, batch = _marked_checks()
    checks.check(batch, _sealed(batch, POSITION_KEY, b"[0, 2]"))
    end = b'{"batches": 1, "rows": 2}'
    with pytest.raises(CorruptDataError, match="unreadable fsstgpu.end"):
        checks.check(batch, _sealed(batch, END_KEY, end))
    for counts in (b'{"batches": 2, "rows": 2}', b'{"batches": 1, "rows": 4}'):
        checks, batch = _marked_checks()
        checks.check(batch, _sealed(batch, POSITION_KEY, b"[0, 2]"))
        assert checks.check(batch.slice(0, 0),
                            _sealed(batch.slice(0, 0), END_KEY, counts)) is None
        with pytest.raises(CorruptDataError, match="truncated: 1 record batches .2 rows. were"):
            checks.finish()
    checks, batch = _marked_checks()
    checks.check(batch, _sealed(batch, POSITION_KEY, b"[0, 2]"))
    checks.check(batch.slice(0, 0), _sealed(batch.slice(0, 0), END_KEY, end))
    checks.finish()


def test_an_ipc_files_batch_count_is_checked_by_its_end_batch():
    """An fsstgpu IPC file (its schema marked) without even its end batch, or whose end batch
    counts other batches than the file holds, is corrupt (sealed positions and end: the end
    batch's count alone tells)."""
    checks, batch = _marked_checks()
    sink = pa.BufferOutputStream()
    ipc.new_file(sink, batch.schema).close()
    with pytest.raises(CorruptDataError, match="no record batch, not even its end batch"):
        data_batches(ipc.open_file(sink.getvalue()))
    for counted, match in ((1, "holds 2 record batches, its end batch counts 1"), (2, None)):
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, batch.schema) as writer:
            for k in range(2):
                writer.write_batch(batch, custom_metadata=batch_metadata(
                    batch, index=k, rows=2 * k + 2))
            writer.write_batch(*end_batch(batch.schema, batch, batches=counted,
                                          rows=2 * counted))
        reader = ipc.open_file(sink.getvalue())
        if match is None:
            assert data_batches(reader) == 2
        else:
            with pytest.raises(CorruptDataError, match=match):
                data_batches(reader)
    sink = pa.BufferOutputStream()  # its last batch a data batch (at its place): cut short
    with ipc.new_file(sink, batch.schema) as writer:
        for k in range(2):
            writer.write_batch(batch, custom_metadata=batch_metadata(batch, index=k,
                                                                     rows=2 * k + 2))
    with pytest.raises(CorruptDataError, match=r"its last record batch \(1\) is not the end"):
        data_batches(ipc.open_file(sink.getvalue()))


@pytest.mark.parametrize("key, value", [(CRC_KEY, b"x"), (CRC_KEY, b"1.5"), (LENGTHS_KEY, b"["),
                                        (LENGTHS_KEY, b"\xff")])
def test_unreadable_metadata_is_named(key, value):
    """Metadata that is no number or JSON is named as unreadable (not taken for a checksum
    that does not match, nor for lengths left out)."""
    checks, batch = _marked_checks()
    metadata = {**_sealed(batch, POSITION_KEY, b"[0, 2]"), key: value}
    with pytest.raises(CorruptDataError, match=f"unreadable {key.decode()} metadata"):
        checks.check(batch, metadata)
