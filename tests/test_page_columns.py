"""An fsst column decoded from its raw pages (formats/page_plan.py, formats/page_columns.py; the
device's read of issue #24 item 2): on the host (the twin) equal to pyarrow's read of the same
storage, array by array, on compress_file outputs of real text with nulls, long strings (cuts),
repeating lines (codes dictionary-encoded) and several row groups; layouts it does not take
refused as Unsupported; damaged pages refused, never a crash. On the GPU, the same arrays as
the twin's, byte for byte (the device pool poisoned first), also on damaged pages."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.datasets import machine_text_table
from fsstgpu.device import host_array
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow_read import _assembled, from_extension_array
from fsstgpu.formats.page_columns import PageColumn, decode_pages
from fsstgpu.formats.page_plan import plan_column, plannable
from fsstgpu.formats.raw_columns import Unsupported
from fsstgpu.formats.raw_pages import chunk_span
from fsstgpu.formats.rowgroups import Source

sys.path.insert(0, str(Path(__file__).parent))
from damaged_pages import flip_in_last_page  # noqa: E402
from gpu_poison import poison_pool  # noqa: E402
from long_strings import with_nulls_and_long  # noqa: E402


def _table(rng, rows: int = 24_000) -> pa.Table:
    """Real text with nulls, a column of long strings whose codes share prefixes (written
    DELTA_BYTE_ARRAY: not taken) and one whose do not (cut, the cuts leaf holding values)."""
    table = machine_text_table(rows)
    table = table.take(np.sort(rng.choice(len(table), rows // 2, replace=False)))
    table = with_nulls_and_long(table, rng, null_share=0.2, longest=9000, fill="y")
    first = table.column(0).to_pylist()
    tails = rng.integers(0, 9000, len(first))
    return table.append_column("tail", pa.array(
        [None if s is None or k % 7 == 0 else s + "z" * int(k) for s, k in
         zip(first, tails, strict=True)], pa.string()))


@pytest.fixture
def files(fresh_rng, tmp_path, zstd_and_plain):
    return zstd_and_plain(_table(fresh_rng), tmp_path)


def _compressed(col: PageColumn, ftype):
    """The CompressedStringArray of a host PageColumn, its split points planned as a read
    plans them."""
    code, place, rows = col.cuts
    validity = None if not col.null_count else np.packbits(col.valid, bitorder="little")
    return _assembled(ftype, col.tables, col.block_starts, col.codes, col.code_offsets,
                      np.asarray(col.lengths), validity, col.null_count,
                      (code, col.out_offsets[rows] + place, rows),
                      chunked=True, chunk_lengths=col.chunk_lengths)


def _decoded(path):
    """Each fsst column the page reader takes: (field, its host PageColumn); and the names of
    those it refused as Unsupported."""
    out, refused = [], []
    with Source(path) as source:
        for field in plannable(source):
            try:
                out.append((field, decode_pages(plan_column(source, field), np)))
            except Unsupported:
                refused.append(field.name)
    return out, refused


def test_the_host_twin_reads_what_pyarrow_reads(files):
    decoded, refused = _decoded(files["none"])
    assert "tail" in [f.name for f, _ in decoded], "the page reader did not take the long strings"
    assert any(len(col.cuts[0]) for _, col in decoded), "no cut string"
    assert any(col.null_count for _, col in decoded), "no null string"
    table = pq.read_table(files["none"])
    for field, col in decoded:
        want = from_extension_array(table.column(field.name))
        got = _compressed(col, field.type)
        for name in ("codes", "code_offsets", "lengths", "block_starts", "split_codes",
                     "split_out", "split_table", "chunk_lengths"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), (field.name, name)
        assert (got.validity is None) == (want.validity is None), field.name
        if got.validity is not None:
            assert np.array_equal(got.validity, want.validity), field.name
        assert got.tables == want.tables, field.name
    # (the prefixed column's codes are DELTA_BYTE_ARRAY: not taken, read another way)
    assert set(refused) <= {f.name for f in pq.read_schema(files["none"])}


def test_dbtext_lines_rebuilt_from_their_prefixes(fresh_rng, tmp_path):
    """dbtext's lines in order, their codes written DELTA_BYTE_ARRAY (as compress_file writes
    lines that share their starts; page_prefixes.py rebuilds them), in pages of a few KB."""
    import fsstgpu
    from fsstgpu.datasets import dbtext_dir, dbtext_table
    from fsstgpu.formats.arrow_storage import to_extension_array

    if dbtext_dir() is None:
        pytest.skip("dbtext corpus not found (set FSSTGPU_DBTEXT or run beside shared/)")
    table = dbtext_table()
    start = int(fresh_rng.integers(0, len(table) - 40_000))
    lines = table.column("line").slice(start, 40_000).combine_chunks()
    ext = to_extension_array(fsstgpu.compress(lines))
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"line": ext}), path, compression="none", use_dictionary=["line.table"],
                   data_page_size=int(fresh_rng.choice([4096, 1 << 20])),
                   column_encoding={"line.codes": "DELTA_BYTE_ARRAY", "line.lengths": "PLAIN",
                                    "line.cuts": "PLAIN"})
    [(field, col)], _ = _decoded(path)
    with Source(path) as source:
        assert set(plan_column(source, field).leaves[0].encoding) == {7}
    want = from_extension_array(pq.read_table(path).column("line"))
    got = _compressed(col, field.type)
    for name in ("codes", "code_offsets", "lengths", "split_codes", "split_out"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name


@pytest.mark.parametrize("window", [None, 1, 60_000])
def test_chunks_handed_to_a_sink_leave_the_host_what_it_reads(files, monkeypatch, window):
    """Planned with a sink (a device reader's upload, here a host array), the plan keeps only
    the cut values (and what the dictionaries say); decoding over the sunk bytes reads nothing
    else on the host and gives the same column; whatever the windows (a chunk each, a few, the
    column), every byte is sunk once, where it lies."""
    import fsstgpu.formats.page_plan as page_plan
    from fsstgpu.formats.page_plan import HostParts

    if window is not None:
        monkeypatch.setattr(page_plan, "WINDOW_BYTES", window)

    with Source(files["none"]) as source:
        for field in plannable(source):
            sunk = {}

            def sink(at, chunk, total, sunk=sunk):
                sunk.setdefault("data", np.zeros(total, np.uint8))[at : at + chunk.size] = chunk
                sunk.setdefault("calls", []).append((at, chunk.size))
                return lambda: None

            plan = plan_column(source, field, sink=sink)
            assert isinstance(plan.buffer, HostParts)
            kept = sum(part.size for part in plan.buffer.parts.values())
            assert kept < sunk["data"].size
            want = decode_pages(plan_column(source, field), np)
            assert _outcome(plan, np, sunk["data"]) == _outcome(
                plan_column(source, field), np) == _outcome_of(want), field.name
            ends = [0] + [at + size for at, size in sunk["calls"]]
            assert [at for at, _ in sunk["calls"]] == ends[:-1]  # (in order, each byte once)
            assert ends[-1] == sunk["data"].size
            if window == 1:
                assert len(sunk["calls"]) == 4 * source.num_units  # (a chunk a window)


def test_compressed_pages_are_not_planned(files):
    with Source(files["zstd"]) as source:
        assert plannable(source) == []
        field = next(f for f in source.schema if "fsst" in str(f.type))
        with pytest.raises(Unsupported, match="compressed"):
            plan_column(source, field)


def test_repeating_lines_read_from_their_dictionary(fresh_rng, tmp_path, zstd_and_plain):
    lines = [f"GET /a/{k} HTTP/1.1" for k in range(50)]
    table = pa.table({"s": [lines[k] for k in fresh_rng.integers(0, 50, 9000)]})
    path = zstd_and_plain(table, tmp_path)["none"]
    [(field, col)], _ = _decoded(path)
    with Source(path) as source:
        assert 8 in plan_column(source, field).leaves[0].encoding  # (RLE_DICTIONARY)
    want = from_extension_array(pq.read_table(path).column("s"))
    got = _compressed(col, field.type)
    assert np.array_equal(got.codes, want.codes)
    assert np.array_equal(got.code_offsets, want.code_offsets)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_plain_lengths_and_version_2_pages(fresh_rng, tmp_path, version):
    """A file pyarrow writes of an fsst array with other encodings than compress_file's:
    lengths PLAIN, the codes DELTA_LENGTH_BYTE_ARRAY, small pages, data pages of either
    version."""
    import fsstgpu
    from fsstgpu.formats.arrow_storage import to_extension_array

    text = _table(fresh_rng, 6000).column("tail").combine_chunks()
    ext = to_extension_array(fsstgpu.compress(text))
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"s": ext}), path, compression="none", data_page_version=version,
                   use_dictionary=["s.table"], data_page_size=4096,
                   column_encoding={"s.codes": "DELTA_LENGTH_BYTE_ARRAY", "s.lengths": "PLAIN",
                                    "s.cuts": "PLAIN"}, write_page_checksum=True)
    [(field, col)], _ = _decoded(path)
    with Source(path) as source:
        plan = plan_column(source, field)
    assert 0 in plan.leaves[1].encoding and len(plan.leaves[0].rows) > 1
    want = from_extension_array(pq.read_table(path).column("s"))
    got = _compressed(col, field.type)
    for name in ("codes", "code_offsets", "lengths", "split_codes", "split_out"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert len(col.cuts[0]) and col.null_count


def test_a_damaged_page_fails_its_crc_when_planned_or_after(files, tmp_path, fresh_rng):
    with Source(files["none"]) as source:
        column = source.leaf_columns["tail"][0]
        chunk = source.parquet_metadata.row_group(0).column(column)
    bad = tmp_path / "bad.parquet"
    flip_in_last_page(files["none"], chunk, bad, fresh_rng, 0x10)
    with Source(bad) as source:
        field = source.schema.field("tail")
        with pytest.raises(CorruptDataError, match="row group 0, column tail.codes.*CRC"):
            plan_column(source, field)
        plan = plan_column(source, field, check=False)  # (a reader checks them later)
    with pytest.raises(CorruptDataError, match="row group 0, column tail.codes.*CRC"):
        plan.check_crcs()


def _damaged(path, tmp_path, rng, count: int = 40):
    """Copies of the file with a bit flipped in a chunk of an fsst column the page reader
    takes (page headers, levels, values, dictionaries; the CRCs then fail, so the copies are
    planned without checking them): ``(column, its plan or what planning raised)`` each."""
    raw = Path(path).read_bytes()
    with Source(path) as source:
        names = sorted(f.name for f in plannable(source) if _takes(source, f))
        meta = source.parquet_metadata
        spans = {name: [chunk_span(meta.row_group(k).column(j), len(raw), "x")
                        for k in range(source.num_units) for j in source.leaf_columns[name]]
                 for name in names}
    out = []
    for i in range(count):
        name = names[int(rng.integers(0, len(names)))]
        start, size = spans[name][int(rng.integers(0, len(spans[name])))]
        bad = bytearray(raw)
        bad[start + int(rng.integers(0, size))] ^= 1 << int(rng.integers(0, 8))
        copy = tmp_path / f"damaged{i}.parquet"
        copy.write_bytes(bytes(bad))
        with Source(copy) as source:
            try:
                plan = plan_column(source, source.schema.field(name), check=False)
            except CorruptDataError:
                plan = "corrupt"
            except Unsupported:
                plan = "unsupported"
        out.append((name, plan))
    return out


def _takes(source, field) -> bool:
    try:
        plan_column(source, field, check=False)
        return True
    except Unsupported:
        return False


def _outcome(plan, xp, data=None):
    """What decoding ``plan`` gives (``data``: its buffer on the device): its arrays (host) or
    the error's kind (also planning's, ``plan`` a string)."""
    if isinstance(plan, str):
        return plan
    try:
        col = decode_pages(plan, xp, data)
    except CorruptDataError:
        return "corrupt"
    except Unsupported:
        return "unsupported"
    return _outcome_of(col)


def _outcome_of(col: PageColumn) -> tuple:
    arrays = (col.codes, col.code_offsets, col.lengths, col.out_offsets, col.valid)
    return (*(host_array(a).tobytes() for a in arrays), col.block_starts.tobytes(),
            tuple(t.to_bytes() for t in col.tables), tuple(c.tobytes() for c in col.cuts))


def test_damaged_pages_are_refused_or_read_never_a_crash(files, tmp_path, fresh_rng):
    seen = set()
    for _, plan in _damaged(files["none"], tmp_path, fresh_rng):
        got = _outcome(plan, np)
        seen.add(got if isinstance(got, str) else "read")
    assert "corrupt" in seen


@pytest.mark.gpu
def test_the_device_decodes_as_the_twin(files, fresh_rng, tmp_path):
    import cupy as cp

    poison_pool(cp)
    with Source(files["none"]) as source:
        fields = [f for f in plannable(source) if _takes(source, f)]
        plans = [plan_column(source, f) for f in fields]
    assert plans
    for plan in plans:
        want = _outcome(plan, np)
        assert want not in ("corrupt", "unsupported")
        assert _outcome(plan, cp, cp.asarray(plan.buffer)) == want, plan.where
    # damaged: refused exactly where the twin refuses, the same arrays where it reads
    for name, plan in _damaged(files["none"], tmp_path, fresh_rng, 25):
        want = _outcome(plan, np)
        got = want if isinstance(plan, str) else _outcome(plan, cp, cp.asarray(plan.buffer))
        assert got == want, (name, want if isinstance(want, str) else "read")


@pytest.mark.gpu
def test_read_table_device_decodes_uncompressed_pages_on_the_device(files, monkeypatch):
    """The user's path: ``read_table_device`` takes the page reader for the fsst columns of a
    file with uncompressed pages (not for a zstd one), every column equal to the CPU read and
    to the usual path's."""
    import cupy as cp

    from fsstgpu.formats import device_reader, read_table, read_table_device

    taken = []
    real = device_reader.page_columns
    monkeypatch.setattr(device_reader, "page_columns",
                        lambda source, **kw: taken.append(sorted(got := real(source, **kw)))
                        or got)
    monkeypatch.setattr(device_reader, "PAGE_READS", True)
    poison_pool(cp)
    results = {}
    for codec in ("none", "zstd"):
        got = results[codec] = read_table_device(files[codec])
        want = read_table(files[codec], device="cpu")
        assert list(got) == want.column_names
        for name, column in got.items():
            arr = column if isinstance(column, pa.ChunkedArray) else column.to_arrow()
            arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
            assert arr.equals(want.column(name).combine_chunks()), (codec, name)
    # (the zstd file's pages are compressed: the page reader is not started for it)
    assert len(taken) == 1 and "tail" in taken[0]
    monkeypatch.setattr(device_reader, "PAGE_READS", False)
    usual = read_table_device(files["none"])
    for name in taken[0]:
        assert usual[name].to_arrow().equals(results["none"][name].to_arrow()), name


def _plain_codes_file(tmp_path) -> Path:
    """A file whose fsst column's pages are stored uncompressed (plannable from the footer)
    but whose codes are PLAIN, which the page reader does not take, beside a plain column."""
    import fsstgpu
    from fsstgpu.formats.arrow_storage import to_extension_array

    text = machine_text_table(3000).column(0).combine_chunks()
    ext = to_extension_array(fsstgpu.compress(text))
    path = tmp_path / "plain_codes.parquet"
    pq.write_table(pa.table({"s": ext, "n": np.arange(len(ext))}), path, compression="none",
                   use_dictionary=["s.table"],
                   column_encoding={"s.codes": "PLAIN", "s.lengths": "PLAIN", "s.cuts": "PLAIN"})
    return path


def test_plain_codes_are_plannable_but_refused(tmp_path):
    with Source(_plain_codes_file(tmp_path)) as source:
        assert [f.name for f in plannable(source)] == ["s"]
        with pytest.raises(Unsupported, match="values of encoding 0"):
            plan_column(source, source.schema.field("s"))


@pytest.mark.gpu
def test_a_column_the_page_reader_refuses_is_read_the_usual_way(tmp_path, monkeypatch):
    """read_table_device runs the page reader beside the usual read of the other columns; a
    column it turns out not to take (its pages' encodings) is then read the usual way."""
    from fsstgpu.formats import device_reader, read_table, read_table_device

    path = _plain_codes_file(tmp_path)
    monkeypatch.setattr(device_reader, "PAGE_READS", True)
    got = read_table_device(path)
    want = read_table(path, device="cpu")
    assert list(got) == ["s", "n"]
    strings = got["s"].to_arrow()
    strings = strings.combine_chunks() if isinstance(strings, pa.ChunkedArray) else strings
    assert strings.equals(want.column("s").combine_chunks())
    assert got["n"].equals(want.column("n"))


@pytest.mark.gpu
def test_a_damaged_page_read_on_the_device_is_named(files, tmp_path, fresh_rng, monkeypatch):
    from fsstgpu.formats import device_reader, read_table_device

    monkeypatch.setattr(device_reader, "PAGE_READS", True)
    with Source(files["none"]) as source:
        meta = source.parquet_metadata
        column = source.leaf_columns["tail"][0]
    bad = tmp_path / "bad.parquet"
    flip_in_last_page(files["none"], meta.row_group(0).column(column), bad, fresh_rng, 0x04)
    with pytest.raises(CorruptDataError, match="row group 0, column tail.codes"):
        read_table_device(bad)


def _null_child_file(rng, tmp_path, field: str) -> Path:
    """A file whose ``field`` leaf is null under a valid string (no writer makes it; a forged
    or damaged file can; a null ``cuts`` entry is what every string without cuts has)."""
    import pyarrow.compute as pc

    import fsstgpu
    from fsstgpu.formats.arrow_storage import to_extension_array

    ext = to_extension_array(fsstgpu.compress(pa.array(["abc", None, "abd", "x"] * 50)))
    children = ext.storage.flatten()
    k = ext.type.storage_type.get_field_index(field)
    mask = np.zeros(len(ext), bool)
    mask[int(rng.choice([0, 2, 3])) + 4 * int(rng.integers(0, 50))] = True
    children[k] = pc.if_else(pa.array(mask), pa.nulls(len(ext), children[k].type), children[k])
    storage = pa.StructArray.from_arrays(children, fields=list(ext.type.storage_type),
                                         mask=ext.storage.is_null())
    path = tmp_path / "forged.parquet"
    pq.write_table(pa.table({"s": pa.ExtensionArray.from_storage(ext.type, storage)}), path,
                   compression="none", use_dictionary=["s.table"],
                   column_encoding={"s.codes": "DELTA_LENGTH_BYTE_ARRAY", "s.lengths": "PLAIN",
                                    "s.cuts": "PLAIN"})
    return path


@pytest.mark.parametrize("field", ["codes", "lengths", "table"])
def test_a_null_child_under_a_valid_string_is_refused(fresh_rng, tmp_path, field):
    """Refused by the page reader, naming the leaf, as the usual read refuses it."""
    with Source(_null_child_file(fresh_rng, tmp_path, field)) as source, pytest.raises(
            CorruptDataError, match=f"a valid string has a null '{field}' entry"):
        decode_pages(plan_column(source, source.schema.field("s")), np)


@pytest.mark.gpu
@pytest.mark.parametrize("field", ["codes", "lengths", "table"])
def test_a_null_child_under_a_valid_string_is_refused_on_the_device(fresh_rng, tmp_path, field):
    import cupy as cp

    with Source(_null_child_file(fresh_rng, tmp_path, field)) as source:
        plan = plan_column(source, source.schema.field("s"))
    with pytest.raises(CorruptDataError, match=f"a valid string has a null '{field}' entry"):
        decode_pages(plan, cp, cp.asarray(plan.buffer))


def test_prefixed_codes_longer_than_their_strings_allow_are_refused_before_rebuilt(fresh_rng,
                                                                                   tmp_path):
    """A DELTA_BYTE_ARRAY page whose values' prefixes declare more code bytes than twice their
    strings' lengths (a forged file; a page of m values may declare ~m**2/2 bytes through its
    prefixes alone) is refused before the bytes are allocated, naming the page."""
    import pyarrow.compute as pc

    import fsstgpu
    from fsstgpu.formats.arrow_storage import to_extension_array

    n = int(fresh_rng.integers(20, 200))
    ext = to_extension_array(fsstgpu.compress(pa.array(["ab"] * n)))
    children = ext.storage.flatten()
    k = ext.type.storage_type.get_field_index("codes")
    head = bytes(fresh_rng.integers(0, 255, 300, dtype=np.uint8))
    children[k] = pa.array([head + bytes([v % 255]) for v in range(n)], children[k].type)
    assert pc.sum(pc.binary_length(children[k])).as_py() > 2 * 2 * n
    storage = pa.StructArray.from_arrays(children, fields=list(ext.type.storage_type))
    path = tmp_path / "bomb.parquet"
    pq.write_table(pa.table({"s": pa.ExtensionArray.from_storage(ext.type, storage)}), path,
                   compression="none", use_dictionary=["s.table"],
                   column_encoding={"s.codes": "DELTA_BYTE_ARRAY", "s.lengths": "PLAIN",
                                    "s.cuts": "PLAIN"})
    with Source(path) as source, pytest.raises(
            CorruptDataError, match=r"page \d+: its values' prefixes and suffixes make \d+ "
                                    r"bytes, more than the \d+ their strings' lengths allow"):
        decode_pages(plan_column(source, source.schema.field("s")), np)
