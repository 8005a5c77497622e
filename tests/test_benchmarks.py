"""The checkout's benchmarks (not installed): the CPU parts, and the GPU benchmark's inputs.

The GPU benchmark times columns built by :mod:`benchmarks.columns`; these tests check that they
are valid columns that decode to the strings they stand for. The CLI runs the CPU benchmark
(tests/test_cli.py). The comparison with the reference FSST (:mod:`benchmarks.reference_bench`)
is tested without the reference everywhere, and with it only where its source is on the machine
(``FSSTGPU_REFERENCE_FSST``, default ``.data/fsst-ref`` of the checkout: ``git clone
https://github.com/cwida/fsst`` there; it is never part of this repository) and a C++ compiler
is found: CI, with no network, skips those tests saying why.
"""

from __future__ import annotations

import doctest
import gzip
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.datasets import generate

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def load(monkeypatch):
    """Import ``benchmarks.<name>`` from the checkout."""
    monkeypatch.syspath_prepend(str(REPO))
    return lambda name: importlib.import_module(f"benchmarks.{name}")


def _strings(carr):
    return fsstgpu.decompress(carr, device="cpu").to_pylist()


def test_concat_is_a_valid_column(load, table_per_chunk):
    columns = load("columns")
    parts = [pa.array(["http://a.example/1", None, ""] * 50),
             generate("null_heavy", 300, 1),
             generate("long_strings", 20, 2, long_length=20_000),  # cuts inside strings
             pa.chunked_array([generate("emails", 200, 3), generate("urls", 100, 4)])]
    carrs = [fsstgpu.compress(p.cast(pa.large_string()), split_size=1024) for p in parts]
    order = [0, 1, 1, 2, 3, 0]
    joined = columns.concat([carrs[k] for k in order])
    assert not joined.has_code_offsets  # derived on first use (the GPU path needs none)
    joined.validate(full=True)  # every code walked, every split start checked
    expected = [s for k in order for s in parts[k].to_pylist()]
    assert _strings(joined) == expected
    assert joined.null_count == sum(carrs[k].null_count for k in order)
    # parts 1, 1 share their table: one block; part 3 (chunked) brings two
    assert len(joined.tables) == 1 + 1 + 1 + 2 + 1


def test_replicate_keeps_one_table(load):
    columns = load("columns")
    col = generate("log_lines", 500, 5)
    carr = fsstgpu.compress(col)
    big = columns.replicate(carr, 40)
    big.validate(full=True)
    assert len(big.tables) == 1 and big.block_starts.tolist() == [0, 40 * len(col)]
    assert big.uncompressed_bytes == 40 * carr.uncompressed_bytes
    assert len(big.split_table) == 40 * len(carr.split_table)
    assert _strings(big) == col.to_pylist() * 40


def test_concat_refuses_mixed_types_and_nothing(load):
    columns = load("columns")
    a = fsstgpu.compress(pa.array(["x"]))
    b = fsstgpu.compress(pa.array([b"x"], pa.binary()))
    with pytest.raises(TypeError, match="different types"):
        columns.concat([a, b])
    with pytest.raises(ValueError):
        columns.concat([])
    with pytest.raises(ValueError):
        columns.replicate(a, 0)


def test_cpu_bench_rows(load, tmp_path):
    cpu = load("cpu")
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"".join(b"line %d\r\n" % i for i in range(3000)))
    rows = cpu.run_cpu_bench([path], repeats=1)
    assert [r["name"] for r in rows] == ["crlf.txt", "TOTAL"]
    row = rows[0]
    assert row["strings"] == 3000 and row["bytes"] == path.stat().st_size - 3000  # \r kept
    assert row["ratio"] > 1 and np.isfinite(row["lz4_decompress_mbs"])
    assert cpu.format_cpu_bench(rows).row_count == 2


# ids name the module in full: a bare "gpu" id would make the item look GPU-marked
@pytest.mark.parametrize("name", ["columns", "cpu", "gpu", "gpu_sizes", "gpu_encode", "sweep_plot",
                                  "corpora", "reference_fsst", "reference_bench", "files"],
                         ids=lambda n: f"benchmarks.{n}")
def test_docstring_examples(load, name):
    if name in ("gpu", "gpu_sizes", "gpu_encode"):
        pytest.importorskip("benchmarks.timing", reason="benchmarks/timing.py not in this tree")
    module = load(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# ------------------------------------------------------------- the reference FSST comparison
REFERENCE_SRC = Path(os.environ.get("FSSTGPU_REFERENCE_FSST", REPO / ".data" / "fsst-ref"))


@pytest.fixture(scope="module")
def reference_lib(tmp_path_factory):
    """The reference FSST built from REFERENCE_SRC into a temporary folder, or a skip."""
    sys.path.insert(0, str(REPO))
    try:
        ref_fsst = importlib.import_module("benchmarks.reference_fsst")
    finally:
        sys.path.remove(str(REPO))
    if not ref_fsst.is_reference_source(REFERENCE_SRC):
        pytest.skip(f"no reference FSST source at {REFERENCE_SRC} (git clone "
                    "https://github.com/cwida/fsst there, or set FSSTGPU_REFERENCE_FSST)")
    if shutil.which(os.environ.get("CXX") or "g++") is None:
        pytest.skip("no C++ compiler to build the reference FSST (g++ or $CXX)")
    return ref_fsst.build(REFERENCE_SRC, tmp_path_factory.mktemp("fsst-ref"))


def _awkward_strings():
    """Empty strings, every byte value (the reference escapes with 255), long strings."""
    rng = np.random.default_rng(21)
    out = [b"", b"\xff" * 40, bytes(range(256)), b"", b"x"]
    out += [b"https://example.com/%d/item" % (i % 97) for i in range(3000)]
    out += [rng.integers(0, 256, int(n), dtype=np.uint8).tobytes()
            for n in rng.integers(0, 300, 200)]
    out += [b"long line " * 10_000, b"\x00" * 5000]
    return out


def test_strings_layout_reads_arrow_without_copies_and_lists(load):
    ref_fsst = load("reference_fsst")
    strings = ["ab", None, "", "c\u00e9d", "e"]
    for typ in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        arr = pa.array([s.encode() if s and "binary" in str(typ) else s for s in strings], typ)
        for sliced in (arr, arr.slice(1, 3), arr.slice(5)):
            data, offsets = ref_fsst.strings_layout(sliced)
            assert offsets.dtype == np.int64 and offsets[0] == 0
            want = [b"" if v is None else (v if isinstance(v, bytes) else v.encode())
                    for v in sliced.to_pylist()]
            got = [bytes(data[a:b]) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
            assert got == want
    data, _ = ref_fsst.strings_layout(pa.array(["abcdef"]))
    assert not data.flags.owndata  # a view of the Arrow buffer
    data, offsets = ref_fsst.strings_layout(pa.chunked_array([["a"], ["bc"]]))
    assert bytes(data) == b"abc" and offsets.tolist() == [0, 1, 3]
    with pytest.raises(TypeError, match="string or binary"):
        ref_fsst.strings_layout(pa.array([1, 2]))


def test_reference_driver_refuses_what_it_cannot_drive(load, tmp_path):
    ref_fsst = load("reference_fsst")
    with pytest.raises(FileNotFoundError, match="not the reference FSST's source"):
        ref_fsst.build(tmp_path, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="neither a library"):
        ref_fsst.load(tmp_path / "missing")
    libc = next((p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6")
                 if Path(p).is_file()), None)
    if libc:  # a real shared library without the shim's entry points
        with pytest.raises(OSError, match="no fsstref_"):
            ref_fsst.ReferenceFSST(libc)
    assert not ref_fsst.is_reference_source(REPO)  # the repository holds no copy of it


def test_compare_without_the_reference(load):
    bench = load("reference_bench")
    cols = [("a", pa.array([f"user{i % 300}@example.org" for i in range(5000)])),
            ("b", pa.array([b"\x00\xff" * (i % 7) for i in range(3000)], pa.binary())),
            ("empty", pa.array([], pa.string()))]
    before = os.environ.get("FSSTGPU_THREADS")
    rows = bench.compare([("mixed", cols), ("one", cols[:1])], threads=2, repeats=1)
    assert os.environ.get("FSSTGPU_THREADS") == before  # set for the run only
    assert [r["corpus"] for r in rows] == ["mixed", "one"]
    mixed, one = rows
    assert mixed["columns"] == 3 and mixed["strings"] == 8000
    assert mixed["threads"] == min(2, len(os.sched_getaffinity(0)))
    assert mixed["bytes"] == sum(len(s.encode()) for s in cols[0][1].to_pylist()) + sum(
        2 * (i % 7) for i in range(3000))
    for name in ("fsstgpu", "lz4", "zstd"):
        assert mixed[f"{name}_ratio"] > 1 and mixed[f"{name}_compress_MB_s"] > 0
        assert np.isfinite(mixed[f"{name}_decompress_MB_s"])
    assert not any(k.startswith("reference") or "vs_reference" in k for k in mixed)
    assert one["fsstgpu_ratio"] > 2
    text = bench.format_table(rows).splitlines()
    assert len(text) == 4 and text[2].startswith("| mixed |") and "reference" not in text[0]


def test_compare_runs_on_the_cores_there_are(load):
    """More threads than cores: the row says the cores used, and fsstgpu and pyarrow get the
    same number (it said 1000 while fsstgpu ran on the process's cores and pyarrow on 1000
    threads)."""
    bench = load("reference_bench")
    col = pa.array([f"user{i % 300}@example.org" for i in range(3000)])
    row, = bench.compare([("a", [("a", col)])], threads=1000, repeats=1)
    assert row["threads"] == len(os.sched_getaffinity(0))


def test_corpora_loaders(load, tmp_path):
    corpora = load("corpora")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.txt").write_bytes(b"one\ntwo\r\n")
    (tmp_path / "a.bin").write_bytes(b"\x00binary\n")
    (tmp_path / "c.txt").write_bytes(b"\xff not utf-8\n")
    (tmp_path / "e.gz").write_bytes(gzip.compress(b"packed\n"))
    (tmp_path / "link").symlink_to(tmp_path / "e.gz")
    files = list(corpora.text_files(str(tmp_path)))
    assert [Path(f).name for f in files] == ["a.bin", "c.txt", "e.gz", "b.txt"]  # link left out
    assert corpora.lines_of_files(files).to_pylist() == ["packed", "one", "two\r"]
    assert corpora.lines_of_files(files, cap_bytes=8).to_pylist() == ["packed"]
    assert corpora.lines_of_files(files, cap_bytes=9).to_pylist() == ["packed", "one"]
    paths = [p.decode() for p in corpora.tree_paths(str(tmp_path))]
    assert paths == [str(tmp_path / n) for n in ("a.bin", "c.txt", "d", "e.gz", "link",
                                                  "d/b.txt")]
    lines = corpora.load_corpus("stdlib-lines", cap_bytes=5000)[0][1]
    assert pa.types.is_string(lines.type) and 4900 < sum(len(s.encode()) for s in
                                                         lines.to_pylist()) <= 5000
    assert corpora.load_corpus("stdlib-lines", cap_bytes=5000)[0][1].equals(lines)
    with pytest.raises(ValueError, match="unknown corpus"):
        corpora.load_corpus("dbtext-columns")


def test_corpora_dbtext(load, dbtext_paths):
    corpora = load("corpora")
    files = corpora.load_corpus("dbtext")
    assert [n for n, _ in files] == [p.name for p in dbtext_paths]
    (name, column), = corpora.load_corpus("dbtext-column")
    assert name == "dbtext-column" and len(column) == sum(len(c) for _, c in files)
    capped = corpora.load_corpus("dbtext", cap_bytes=2_000_000)
    assert len(capped) == 2 and len(capped[0][1]) == len(files[0][1])


def test_reference_round_trip_and_comparison(load, reference_lib):
    ref_fsst, bench = load("reference_fsst"), load("reference_bench")
    ref = ref_fsst.load(reference_lib)
    strings = _awkward_strings()
    out = ref_fsst.roundtrip(ref, strings, repeats=1)
    assert out["equal"] and out["strings"] == len(strings) and out["ratio"] > 1
    data, offsets = ref_fsst.strings_layout(strings)
    comp = ref.compress(data, offsets, table_bytes=20_000)  # several tables
    assert len(comp.parts) > 3 and sum(len(o) - 1 for _, _, o in comp.parts) == len(strings)
    back, back_offsets = ref.decompress(comp)
    assert np.array_equal(back, data) and np.array_equal(back_offsets, offsets)
    empty = ref.decompress(ref.compress(*ref_fsst.strings_layout([])))
    assert len(empty[0]) == 0 and empty[1].tolist() == [0]
    assert ref_fsst.build(REFERENCE_SRC, reference_lib.parent.parent) == reference_lib  # reused
    rows = bench.compare([("urls", [("urls", pa.array(strings[5:3005], pa.binary()))])],
                         reference=ref, repeats=1, table_mb=0.01)
    row = rows[0]
    assert row["reference_ratio"] > 2 and row["reference_per_mb_ratio"] > 1
    assert row["compress_vs_reference"] == pytest.approx(
        row["fsstgpu_compress_MB_s"] / row["reference_compress_MB_s"])
    assert "fsstgpu / reference, compress" in bench.format_table(rows)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "fsstgpu.cli.app", "bench", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO)


def _sweep_rows() -> list[dict]:
    """Rows as benchmarks.gpu_sizes.run writes them (figures made up, shapes real)."""
    copy = {"copy GB/s": 4100.0}
    rows = [{"what": "plain pinned upload", "MiB": 256.0, "GB/s": 55.0, **copy}]
    for mib in (1, 4, 16, 64, 256, 1024):
        rows.append({"what": "fsstgpu", "MiB": float(mib), "GB/s": 19.0 * mib ** 0.6, **copy})
        for k, algo in enumerate(("ANS", "LZ4", "zstd")):
            rows.append({"what": f"nvCOMP {algo}", "MiB": float(mib),
                         "GB/s": 10.0 * mib ** 0.5 / (k + 1), "ratio": 1.5, **copy})
    rows += [{"what": "fsstgpu batch 64 x 4 MiB", "MiB": 256.0, "GB/s": 506.0, **copy},
             {"what": "nvCOMP ANS batch 64 x 4 MiB", "MiB": 256.0, "GB/s": 219.0, **copy},
             {"what": "fsstgpu host (pageable) -> device", "MiB": 4.0, "GB/s": 6.0,
              "vs_upload": 0.6, **copy},
             {"what": "nvCOMP GDeflate failed: RuntimeError: no"}]
    return rows


def test_sweep_plot_draws_a_line_per_codec(load, tmp_path):
    import xml.etree.ElementTree as ET

    plot = load("sweep_plot")
    out = plot.draw_sweep(_sweep_rows(), tmp_path / "sweep.svg")
    root = ET.fromstring(out.read_text())  # well-formed
    ns = "{http://www.w3.org/2000/svg}"
    lines = root.findall(f"{ns}polyline")
    assert len(lines) == 4  # fsstgpu, nvCOMP ANS / LZ4 / zstd; the failed codec is left out
    assert all(len(line.get("points").split()) == 6 for line in lines)
    text = " ".join(t.text for t in root.iter(f"{ns}text"))
    assert "fsstgpu batch 64 x 4 MiB (506 GB/s)" in text and "4100 GB/s" in text
    assert "GDeflate" not in text
    with pytest.raises(ValueError, match=".svg or .png"):
        plot.draw_sweep(_sweep_rows(), tmp_path / "sweep.pdf")
    other = plot.draw_sweep(_sweep_rows(), tmp_path / "plot.tmp", kind="svg")  # (a temporary)
    assert other.read_text() == out.read_text()
    with pytest.raises(ValueError, match="no measured rows"):
        plot.draw_sweep([{"what": "nvCOMP not measured: exit 1"}], tmp_path / "none.svg")
    assert not (tmp_path / "none.svg").exists()
    png = tmp_path / "sweep.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="needs matplotlib"):
            plot.draw_sweep(_sweep_rows(), png)
    else:
        plot.draw_sweep(_sweep_rows(), png)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_plot_redraws_a_saved_sweep(tmp_path):
    saved = tmp_path / "sweep.json"
    saved.write_text(json.dumps(_sweep_rows()))
    done = subprocess.run([sys.executable, "-m", "benchmarks.sweep_plot", saved,
                           tmp_path / "again.svg"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "again.svg").read_text().count("<polyline") == 4


def test_cli_bench_plot_errors(tmp_path):
    done = _cli("--plot", tmp_path / "s.svg")
    assert done.returncode == 2 and "--device gpu" in done.stderr, done.stderr
    done = _cli("--device", "gpu", "--plot", tmp_path / "s.pdf")
    assert done.returncode == 2 and ".svg or .png" in done.stderr, done.stderr
    assert not list(tmp_path.iterdir())


def test_cli_bench_reference_errors(tmp_path):
    done = _cli("--reference", tmp_path / "nothing", "stdlib-lines")
    assert done.returncode == 1 and "neither a library" in done.stderr, done.stderr
    done = _cli("--reference", tmp_path, "no-such-corpus")
    assert done.returncode == 2 and "nor a corpus" in done.stderr, done.stderr  # usage error
    done = _cli("--reference", tmp_path, "--device", "gpu")
    assert done.returncode == 2 and "--device cpu" in done.stderr, done.stderr


def test_cli_bench_reference(tmp_path, reference_lib):
    text = tmp_path / "lines.txt"
    text.write_bytes(b"".join(b"https://example.com/%d\n" % (i % 500) for i in range(4000)))
    done = _cli(text, "--reference", reference_lib, "--repeats", "1", "--json")
    assert done.returncode == 0, done.stderr
    row, = json.loads(done.stdout)
    assert row["corpus"] == str(text) and row["strings"] == 4000 and row["threads"] == 1
    assert row["reference_ratio"] > 2 and row["fsstgpu_ratio"] > 2


def test_mixed_column_is_runs_of_every_file_in_turn(load, tmp_path):
    mixed = load("mixed_column")
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(b"\n".join(b"a%d" % i for i in range(5000)))
    (src / "b").write_bytes(b"\n".join(b"b%d" % i for i in range(3000)))
    (src / "README.md").write_bytes(b"not data")
    size = mixed.make(src, tmp_path / "mixed.txt", 60_000)
    lines = (tmp_path / "mixed.txt").read_bytes().split(b"\n")[:-1]
    assert size == (tmp_path / "mixed.txt").stat().st_size >= 60_000
    assert lines[:4000] == [b"a%d" % i for i in range(4000)]
    assert lines[4000:8000] == [b"b%d" % (i % 3000) for i in range(4000)]  # b wraps around
    assert lines[8000:8001] == [b"a4000"]


def test_mixed_column_bench_prints_fresh_and_reused_decompress(load, tmp_path, capsys,
                                                               monkeypatch):
    """The bench's lines per thread count: per level ratio, blocks, compress, decompress into
    fresh and reused memory (the round trip checked), then pyarrow's LZ4 and zstd the same two
    ways."""
    mixed = load("mixed_column")
    text = tmp_path / "lines.txt"
    text.write_bytes(b"".join(b"row %d of some text, %d\n" % (i, i % 97) for i in range(20_000)))
    monkeypatch.setenv("FSSTGPU_THREADS", "1")
    mixed.bench(text, [1])
    lines = capsys.readouterr().out.splitlines()[-3:]
    for line, level in zip(lines[:2], ("default", "fast"), strict=True):
        assert line.startswith(f"threads 1, level {level}: fsstgpu ratio "), line
        assert "equal True" in line and line.count(" fresh, ") == 1, line
    assert lines[2].startswith("threads 1: LZ4 ratio ") and lines[2].count(" reused") == 2


def test_files_bench_counts_string_values_not_buffers(load, tmp_path):
    """`bench files` divides by string_MB: the values' bytes, not the data buffers' sizes (a
    slice of a bigger array, or bytes under nulls, counted 12% too much at the default rows and
    291x at --rows 1)."""
    files = load("files")
    big = pa.array(["x" * 1000] * 20 + ["ab", None, "cde"] * 2)
    table = pa.table({"s": big.slice(20), "n": pa.array(range(6))})
    assert table.column("s").chunks[0].buffers()[2].size > 20_000  # the whole buffer stays
    row = files.bench_table("t", table, tmp_path, gpu=False, repeat=1)
    assert row["string_MB"] == 10 / 1e6
