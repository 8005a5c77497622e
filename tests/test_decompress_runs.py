"""``decompress_file`` by runs of units (``formats/pipeline.py``'s ``runs``,
``Decoder.convert_run``): consecutive small row groups read, decoded and written together, each
still a row group of its own.

A run must give the file that unit-by-unit decoding gives (``RUN_ROWS = 1``), byte for byte,
and the input's values and row groups exactly: runs of differing sizes, empty units, nulls, a
dictionary column, a nested one, and a string column left plain beside the compressed ones. A
corrupt unit inside a run is still named by its own row group. Inputs are real text (this
machine's) cut at random (seed from os.urandom, named in failure messages).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import CorruptDataError
from fsstgpu.formats import compress_file, decompress_file, inspect_file, pipeline
from fsstgpu.formats.arrow_storage import to_extension_array
from fsstgpu.testing import poisoned_codes

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

SUFFIX = {"parquet": ".parquet", "arrow": ".arrow", "arrows": ".arrows"}


def _read(path, fmt) -> pa.Table:
    """The file read with pyarrow, its dictionary columns as their values (an IPC stream's
    output has a dictionary a batch, its input one for all), fsstgpu's mark left out."""
    if fmt == "parquet":
        table = pq.read_table(path)
    else:
        table = (ipc.open_file(path) if fmt == "arrow" else ipc.open_stream(path)).read_all()
    metadata = dict(table.schema.metadata or {})
    metadata.pop(b"fsstgpu.ipc_integrity", None)  # fsstgpu's mark on an IPC output
    assert pa.types.is_dictionary(table.schema.field("cat").type)
    table = table.set_column(table.schema.get_field_index("cat"), "cat",
                             table.column("cat").cast(pa.string()))
    return table.replace_schema_metadata(metadata or None).combine_chunks()


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "arrows"])
def test_runs_give_the_unit_by_unit_file_and_the_input(tmp_path, machine_lines, fmt,
                                                      monkeypatch, write_units,
                                                      random_units):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    units = random_units(rng, machine_lines, 14)
    src, comp = tmp_path / f"in{SUFFIX[fmt]}", tmp_path / f"c{SUFFIX[fmt]}"
    write_units(units, src, fmt)
    compress_file(src, comp, columns=["s", "big", "cat", "lst"])  # "plain" stays plain
    outputs = {}
    # one unit a run (what decoding unit by unit gives), runs of random rows, one run
    for rows in (1, int(rng.integers(2, 2000)), 1 << 40):
        monkeypatch.setattr(pipeline, "RUN_ROWS", rows)
        out = tmp_path / f"o{rows}{SUFFIX[fmt]}"
        calls = []
        info = decompress_file(comp, out, device="cpu",
                               progress=lambda calls=calls, **kw: calls.append(kw))
        outputs[rows] = out.read_bytes()
        assert info["units"] == len(units), seed
        assert [c["units_done"] for c in calls] == list(range(1, len(units) + 1)), seed
        assert [c["rows"] for c in calls] == np.cumsum([u.num_rows for u in units]).tolist()
        assert inspect_file(out)["unit_rows"] == [u.num_rows for u in units], seed
    assert len(set(outputs.values())) == 1, seed
    assert _read(out, fmt).equals(_read(src, fmt)), seed


def test_a_corrupt_unit_inside_a_run_is_named(tmp_path, machine_lines):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    columns = [pa.array([machine_lines[i] for i in rng.integers(0, len(machine_lines), n)])
               for n in rng.integers(1, 300, 8)]
    exts = [to_extension_array(fsstgpu.compress(c)) for c in columns]
    bad = int(rng.integers(0, len(exts)))
    exts[bad] = poisoned_codes(exts[bad])
    schema = pa.schema([("s", exts[0].type), ("n", pa.int64())])
    with pq.ParquetWriter(tmp_path / "bad.parquet", schema, store_schema=True,
                          write_statistics=False) as w:
        for ext in exts:
            w.write_table(pa.table([ext, pa.array(np.arange(len(ext)))], schema=schema))
    with pytest.raises(CorruptDataError, match=f"row group {bad}, column 's'"):
        decompress_file(tmp_path / "bad.parquet", tmp_path / "o.parquet", device="cpu")
    assert not (tmp_path / "o.parquet").exists(), seed


def test_runs_keep_to_their_rows_and_bytes():
    parts = [pa.table({"n": range(k)}) for k in (3, 3, 0, 7, 1, 1, 2)]
    assert [[t.num_rows for t in r] for r in pipeline.runs(parts, 6, 1 << 30)] == [
        [3, 3, 0], [7], [1, 1, 2]]
    one = parts[0].nbytes
    assert [[t.num_rows for t in r] for r in pipeline.runs(parts[:2], 1 << 30, one)] == [
        [3], [3]]


@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
@pytest.mark.parametrize("view", [pa.string_view(), pa.binary_view()])
def test_a_view_column_decoded_by_runs_holds_each_unit_s_strings_only(tmp_path, fmt, view,
                                                                      monkeypatch):
    """A string_view / binary_view column decoded by runs into an IPC output: each batch's
    views in a buffer of its own strings, as a unit decoded alone has (a batch carried the
    whole run's data buffer: the file grew with the square of the run; the validity bitmap
    of its own rows only)."""
    sizes = [304, 16, 8, 136, 0, 296, 7, 300]  # (most starting on a byte of the bitmap)
    values = [None if i % 7 == 3 else (f"a somewhat long line number {i} of unit {k}" * 3)
              .encode() for k, n in enumerate(sizes) for i in range(n)]
    table = pa.table({"s": pa.array(values, pa.binary()).cast(view)})
    src, comp = tmp_path / f"in{SUFFIX[fmt]}", tmp_path / f"c{SUFFIX[fmt]}"
    with (ipc.new_file if fmt == "arrow" else ipc.new_stream)(src, table.schema) as w:
        start = 0
        for n in sizes:
            w.write_table(table.slice(start, n))
            start += n
    compress_file(src, comp)
    outputs = {}
    for rows in (1, 1 << 40):  # unit by unit, one run
        monkeypatch.setattr(pipeline, "RUN_ROWS", rows)
        decompress_file(comp, tmp_path / f"o{rows}{SUFFIX[fmt]}", device="cpu")
        outputs[rows] = (tmp_path / f"o{rows}{SUFFIX[fmt]}").read_bytes()
    assert outputs[1] == outputs[1 << 40]
    read = (ipc.open_file if fmt == "arrow" else ipc.open_stream)(pa.py_buffer(outputs[1 << 40]))
    assert read.read_all().column("s").equals(table.column("s"))
    assert len(outputs[1 << 40]) < 2 * sum(len(v) for v in values if v is not None)
