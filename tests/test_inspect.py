"""``fsstgpu inspect`` / ``inspect_file``: the codes figures of nested fsst leaves, and an Arrow
IPC file's body compression (both were missing: a nested column showed its stored bytes only,
and an IPC file's codec not at all, its plain columns' codec shown as "none" whatever it was)."""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fsstgpu.cli.app import app
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file, inspect_file

runner = CliRunner()
WORDS = ["alpha beta gamma", "delta epsilon", "zeta eta theta iota", None, "ümlaut ünïcode"]


def _cli(*args, code=0):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    return result


@pytest.fixture
def nested(tmp_path):
    n = 600
    table = pa.table({
        "s": [WORDS[i % 5] for i in range(n)],
        "l": [[WORDS[i % 5], WORDS[(i + 1) % 3]] if i % 7 else None for i in range(n)],
        "st": [{"a": WORDS[i % 5], "b": i} for i in range(n)],
        "m": pa.array([[(f"key{i % 4}", WORDS[i % 5])] for i in range(n)],
                      pa.map_(pa.string(), pa.string())),
        "ls": [[{"x": WORDS[i % 3], "y": [WORDS[(i + 2) % 5]]}] for i in range(n)],
        "n": list(range(n)),
    })
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=200)
    return tmp_path / "in.parquet", table


def _leaf_strings(table):
    """Each fsst leaf's strings, by its dotted path, from the uncompressed table."""
    st, m, ls = (table.column(c).combine_chunks() for c in ("st", "m", "ls"))
    items = ls.flatten()
    return {"l.element": table.column("l").combine_chunks().flatten(),
            "st.a": st.field("a"), "m.key": m.keys, "m.value": m.items,
            "ls.element.x": items.field("x"), "ls.element.y.element": items.field("y").flatten()}


def _utf8_bytes(arr) -> int:
    return int(pc.sum(pc.binary_length(arr)).as_py() or 0)


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "arrows"])
def test_nested_leaves_have_their_codes_figures(tmp_path, nested, fmt):
    """Each fsst leaf of a list / struct / map column has the figures a top-level fsst column
    has (string and codes bytes, ratios, tables), and the column their sums."""
    src, table = nested
    out = tmp_path / f"c.{fmt}"
    compress_file(src, out)
    info = inspect_file(out)
    cols = {c["name"]: c for c in info["columns"]}
    strings = _leaf_strings(table)
    stored = pq.read_table(out) if fmt == "parquet" else (
        ipc.open_file(out) if fmt == "arrow" else ipc.open_stream(out)).read_all()
    stored_leaves = {"l.element": stored.column("l").combine_chunks().flatten(),
                     "st.a": stored.column("st").combine_chunks().field("a"),
                     "m.key": stored.column("m").combine_chunks().keys,
                     "m.value": stored.column("m").combine_chunks().items}
    for name in ("l", "st", "m", "ls"):
        col = cols[name]
        assert col["codec"] == "fsst-nested"
        leaves = col["leaves"]
        assert [leaf["path"] for leaf in leaves] == [
            leaf["name"].split(".") for leaf in leaves]
        assert all(leaf["name"].startswith(f"{name}.") for leaf in leaves)
        for leaf in leaves:
            assert leaf["codec"] == "fsst" and leaf["type"] == "string"
            assert leaf["string_bytes"] == _utf8_bytes(strings[leaf["name"]]), leaf["name"]
            assert leaf["null_count"] == strings[leaf["name"]].null_count
            if leaf["name"] in stored_leaves:  # the codes, as the stored storage has them
                codes = stored_leaves[leaf["name"]].storage.field("codes")
                assert leaf["codes_bytes"] == _utf8_bytes(codes)
            assert len(leaf["tables"]) >= 1 and leaf["tables"][0]["symbols"] > 0
            table_bytes = sum(t["bytes"] for t in leaf["tables"])
            assert leaf["ratio"] == pytest.approx(
                leaf["string_bytes"] / (leaf["codes_bytes"] + table_bytes))
        assert col["string_bytes"] == sum(leaf["string_bytes"] for leaf in leaves)
        assert col["codes_bytes"] == sum(leaf["codes_bytes"] for leaf in leaves)
        assert col["ratio"] > 1 and len(col["tables"]) >= 1
    assert [leaf["name"] for leaf in cols["m"]["leaves"]] == ["m.key", "m.value"]
    assert [leaf["name"] for leaf in cols["ls"]["leaves"]] == ["ls.element.x",
                                                              "ls.element.y.element"]
    if fmt == "parquet":  # each leaf's own column chunks; the column's take the int64 b too
        meta = pq.ParquetFile(out).metadata
        sizes: dict[str, int] = {}
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            for j in range(rg.num_columns):
                path = rg.column(j).path_in_schema.rsplit(".", 1)[0]  # (less .codes, ...)
                sizes[path] = sizes.get(path, 0) + rg.column(j).total_compressed_size
        assert cols["st"]["leaves"][0]["stored_bytes"] == sizes["st.a"]
        assert cols["st"]["stored_bytes"] == sizes["st.a"] + sizes["st"]  # ("st.b" -> "st")
        assert [leaf["stored_bytes"] for leaf in cols["m"]["leaves"]] == [
            sizes["m.key_value.key"], sizes["m.key_value.value"]]
        for col in cols.values():
            if col["codec"] == "fsst-nested":
                assert col["file_ratio"] == col["string_bytes"] / col["stored_bytes"]
    else:
        assert all(leaf["stored_bytes"] is None for c in cols.values()
                   for leaf in c.get("leaves", ()))


def test_cli_shows_nested_leaves_like_columns(tmp_path, nested):
    src, _ = nested
    _cli("compress", src, tmp_path / "c.parquet", "--columns", "st,m")
    text = _cli("inspect", tmp_path / "c.parquet").stdout
    rows = {line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
            for line in text.splitlines() if line.startswith("│")}
    info = json.loads(_cli("inspect", tmp_path / "c.parquet", "--json").stdout)
    cols = {c["name"]: c for c in info["columns"]}
    for name in ("st.a", "m.key", "m.value"):
        assert rows[name][1] == "fsst", rows  # codec, then stored, strings, the ratios
        leaf = next(x for c in cols.values() for x in c.get("leaves", ()) if x["name"] == name)
        assert rows[name][4] == f"{leaf['ratio']:.3f}"
        assert rows[name][5] == f"{leaf['file_ratio']:.3f}"
        assert f"{name} table 0: {leaf['tables'][0]['symbols']} symbols" in text
    assert rows["m"][1] == "fsst-nested" and rows["m"][4] == f"{cols['m']['ratio']:.3f}"
    # no top-level fsst column here: the ratios' legend is still given
    assert "fsst ratio: string bytes / (codes + symbol table bytes" in " ".join(text.split())


@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
@pytest.mark.parametrize("codec", ["lz4", "zstd", "uncompressed"])
def test_ipc_body_compression_is_reported(tmp_path, nested, fmt, codec):
    src, table = nested
    out = tmp_path / f"c.{fmt}"
    compress_file(src, out, ipc_compression=codec)
    assert inspect_file(out)["ipc_compression"] == codec
    res = _cli("inspect", out)
    assert f"│ IPC body compression │ {codec}" in res.stdout
    # a plain column's codec is the bodies' (as a Parquet column's is its chunks')
    row = next(line for line in res.stdout.splitlines() if line.startswith("│ n "))
    assert row.split("│")[3].strip() == codec
    assert json.loads(_cli("inspect", out, "--json").stdout)["ipc_compression"] == codec
    # another writer's file too (no fsstgpu metadata)
    plain = tmp_path / f"plain.{fmt}"
    options = ipc.IpcWriteOptions(compression=None if codec == "uncompressed" else codec)
    with (ipc.new_file if fmt == "arrow" else ipc.new_stream)(plain, table.schema,
                                                               options=options) as w:
        w.write_table(table, max_chunksize=250)
    assert inspect_file(plain)["ipc_compression"] == codec


def test_parquet_and_empty_ipc_have_no_body_codec(tmp_path, nested):
    src, _ = nested
    assert inspect_file(src)["ipc_compression"] is None
    assert "IPC body compression" not in _cli("inspect", src).stdout
    with ipc.new_file(tmp_path / "empty.arrow", pa.schema([("n", pa.int8())])):
        pass
    assert inspect_file(tmp_path / "empty.arrow")["ipc_compression"] is None
    assert "│ IPC body compression │ (no record batches)" in _cli(
        "inspect", tmp_path / "empty.arrow").stdout


def _first_data_message(data: bytes, fmt: str) -> tuple[int, int]:
    """(start, length) of the flatbuffer of the first dictionary / record batch message."""
    f = pa.BufferReader(data)
    f.seek(8 if fmt == "arrow" else 0)
    reader = ipc.MessageReader.open_stream(f)
    while True:
        at = f.tell()
        if reader.read_next_message().type in ("dictionary", "record batch"):
            return at + 8, struct.unpack_from("<i", data, at + 4)[0]


@pytest.mark.parametrize("writer", ["fsstgpu", "pyarrow"])
@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
def test_damaged_message_header_gives_the_codec_or_an_error(tmp_path, nested, writer, fmt):
    """Every byte of the message that the codec is read from, altered: inspect reports the
    codec the file was written with, or refuses the file (CorruptDataError), nothing else."""
    src, table = nested
    good = tmp_path / f"good.{fmt}"
    if writer == "fsstgpu":
        compress_file(src, good, ipc_compression="zstd", columns=["s"])
    else:
        part = table.select(["s", "n"])
        with (ipc.new_file if fmt == "arrow" else ipc.new_stream)(
                good, part.schema, options=ipc.IpcWriteOptions(compression="zstd")) as w:
            w.write_table(part)
    data = good.read_bytes()
    start, length = _first_data_message(data, fmt)
    refused = []
    for pos in range(start, start + length):
        for value in (data[pos] ^ 0xFF, 0, 1):
            if value == data[pos]:
                continue
            bad = data[:pos] + bytes([value]) + data[pos + 1:]
            (tmp_path / f"bad.{fmt}").write_bytes(bad)
            try:
                info = inspect_file(tmp_path / f"bad.{fmt}")
            except CorruptDataError:
                refused.append(bad)
                continue
            assert info["ipc_compression"] == "zstd", (pos, value)
            assert info["rows"] == table.num_rows, (pos, value)
    assert refused
    # the command line: one line saying what is wrong, exit 4
    (tmp_path / f"bad.{fmt}").write_bytes(refused[0])
    res = _cli("inspect", tmp_path / f"bad.{fmt}", code=4)
    assert res.stdout == "" and res.stderr.startswith("fsstgpu: error: ")
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_leaf_named_as_a_top_level_column_keeps_its_own_tables(tmp_path):
    """The leaf ``a`` of struct ``st`` and the column named ``st.a`` share a dotted name, not
    their strings: each has its own figures and tables."""
    table = pa.table({"st": [{"a": f"alpha beta gamma {i}"} for i in range(300)],
                      "st.a": [f"zzz qqq xxx www {i % 7}" for i in range(300)]})
    pq.write_table(table, tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    cols = inspect_file(tmp_path / "c.parquet")["columns"]
    leaf, top = cols[0]["leaves"][0], cols[1]
    assert leaf["name"] == top["name"] == "st.a" and leaf["path"] == ["st", "a"]
    assert leaf["string_bytes"] == _utf8_bytes(table.column("st").combine_chunks().field("a"))
    assert top["string_bytes"] == _utf8_bytes(table.column("st.a"))
    assert len(leaf["tables"]) == len(top["tables"]) == 1
    assert leaf["tables"] != top["tables"]
    assert any("alpha" in s for s in leaf["tables"][0]["longest"])
    assert not any("alpha" in s for s in top["tables"][0]["longest"])
