"""The fsstgpu command line, through typer's CliRunner (stdout and stderr checked separately)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import fsstgpu
from fsstgpu import SymbolTable
from fsstgpu.cli.app import FileFormat, ParquetCodec, app
from fsstgpu.datasets import load_lines
from fsstgpu.datasets.generators import generate
from fsstgpu.formats import compress_file, sniff
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.rowgroups import PARQUET_CODECS

runner = CliRunner()
NO_GPU = not fsstgpu.gpu_available()


def run(*args, code=0):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    return result


def usage_error(result, *needles):
    """A usage error from the option parser: exit 2, the problem and its choices on stderr."""
    assert result.exit_code == 2 and result.stdout == ""
    text = " ".join(result.stderr.replace("│", " ").split())
    assert "Usage:" in text
    packed = "".join(text.split())  # the panel wraps long paths mid-word
    for needle in needles:
        assert "".join(needle.split()) in packed, (needle, text)


def one_line_error(result, *needles):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("fsstgpu: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert result.stdout == ""


@pytest.fixture
def sample(tmp_path):
    table = pa.table({"url": generate("urls", 900, 1), "mail": generate("emails", 900, 2),
                      "n": pa.array(range(900))}).replace_schema_metadata({"who": "test"})
    path = tmp_path / "in.parquet"
    pq.write_table(table, path, row_group_size=300)
    return path, table


def test_help_lists_commands_and_exit_codes():
    res = run("--help")
    for word in ("compress", "decompress", "inspect", "bench", "roundtrip", "datasets", "train",
                 "info", "Exit codes", "3 GPU requested"):
        assert word in res.stdout
    res = runner.invoke(app, [])
    assert res.exit_code in (0, 2) and "compress" in res.stdout + res.stderr


def test_every_option_has_help():
    for cmd in ("compress", "decompress", "inspect", "roundtrip", "bench", "train", "info"):
        out = run(cmd, "--help").stdout
        assert "Usage" in out
    out = run("datasets", "generate", "--help").stdout
    assert "--rows" in out and "--seed" in out


def test_compress_decompress_inspect(tmp_path, sample):
    src, table = sample
    res = run("compress", src, tmp_path / "c.parquet", "--json")
    info = json.loads(res.stdout)
    assert info["columns"] == ["url", "mail"] and info["units"] == 3
    assert res.stderr == ""
    schema = pq.read_schema(tmp_path / "c.parquet")
    assert is_fsst_type(schema.field("url").type)

    res = run("inspect", tmp_path / "c.parquet")
    assert "fsst" in res.stdout and "url" in res.stdout and "300" in res.stdout
    info = json.loads(run("inspect", tmp_path / "c.parquet", "--json").stdout)
    assert [c["codec"] for c in info["columns"]] == ["fsst", "fsst", "none"]
    assert info["unit_rows"] == [300, 300, 300]

    res = run("decompress", tmp_path / "c.parquet", tmp_path / "d.parquet", "--device", "cpu")
    assert "decompressed" in res.stdout
    back = pq.read_table(tmp_path / "d.parquet")
    assert back.equals(table) and back.schema.metadata == {b"who": b"test"}


def test_inspect_says_what_its_ratios_divide(tmp_path, sample):
    """`inspect`'s "fsst ratio" counts the symbol tables, `compress`'s "string / codes ratio"
    does not: the same file showed 3.220 and 3.464 with nothing to say why."""
    src, _ = sample
    run("compress", src, tmp_path / "c.parquet")
    text = " ".join(run("inspect", tmp_path / "c.parquet").stdout.split())
    assert "fsst ratio: string bytes / (codes + symbol table bytes" in text
    assert "file ratio: string bytes / stored bytes" in text


def test_compress_options(tmp_path, sample):
    src, table = sample
    run("compress", src, tmp_path / "c.out", "--columns", "mail", "--format", "arrows",
        "--sample-bytes", "4096")
    res = run("decompress", tmp_path / "c.out", tmp_path / "d.arrow", "--json")
    info = json.loads(res.stdout)
    assert info["columns"] == ["mail"] and info["format"] == "arrow"
    assert fsstgpu.formats.read_table(tmp_path / "d.arrow", device="cpu").equals(table)


def test_train_then_compress_with_table(tmp_path, sample):
    src, table = sample
    res = run("train", src, "--out", tmp_path / "t.fsst", "--column", "url", "--json")
    info = json.loads(res.stdout)
    t = SymbolTable.from_bytes((tmp_path / "t.fsst").read_bytes())
    assert info["symbols"] == len(t) > 0
    run("compress", src, tmp_path / "c.parquet", "--table", tmp_path / "t.fsst")
    stored = pq.read_table(tmp_path / "c.parquet").column("mail")
    assert fsstgpu.formats.arrow_storage.from_extension_array(stored).tables == (t,)
    text = tmp_path / "lines.txt"
    text.write_text("alpha beta\ngamma beta\n" * 50)
    run("train", text, "-o", tmp_path / "t2.fsst")
    run("train", "urls", "-o", tmp_path / "t3.fsst")
    res = run("train", text, "-o", tmp_path / "t2.fsst", code=1)
    one_line_error(res, "t2.fsst", "already exists")


def test_bad_table_file_exits_4(tmp_path, sample):
    src, _ = sample
    (tmp_path / "bad.fsst").write_bytes(b"nonsense")
    res = run("compress", src, tmp_path / "c.parquet", "--table", tmp_path / "bad.fsst", code=4)
    one_line_error(res, "bad.fsst")
    assert not (tmp_path / "c.parquet").exists()


def test_roundtrip_file_text_and_dataset(tmp_path, sample):
    src, _ = sample
    info = json.loads(run("roundtrip", src, "--json").stdout)
    assert info["equal"] is True and info["row_groups"] == 3 and info["ratio"] > 1
    text = tmp_path / "lines.txt"
    text.write_text("".join(f"http://example.com/page/{i}\n" for i in range(500)))
    info = json.loads(run("roundtrip", text, "--bench", "--runs", "2", "--json").stdout)
    assert info["equal"] is True and info["strings"] == 500 and info["runs"] == 2
    assert info["compress_MB_s"] > 0 and info["decompress_MB_s"] > 0
    res = run("roundtrip", "emails")
    assert "equal" in res.stdout and "True" in res.stdout


def test_roundtrip_level(tmp_path, sample):
    """`roundtrip --level fast` compresses at that level: a column's tables are a block per MiB
    (3.3 MiB of strings: 4 blocks; the default plans fewer), a file round-trips equal."""
    src, _ = sample
    info = json.loads(run("roundtrip", src, "--level", "fast", "--json").stdout)
    assert info["equal"] is True and info["level"] == "fast"
    text = tmp_path / "urls.txt"
    words = ("alpha", "beta", "gamma")
    text.write_text("".join(f"http://example.com/{words[i % 3]}/{i % 97}/x\n"
                            for i in range(120_000)))
    for level in ("fast", "default"):
        info = json.loads(run("roundtrip", text, "--level", level, "--json").stdout)
        assert info["equal"] is True and info["level"] == level
        want = fsstgpu.compress(load_lines(text), level=level).stats()["table_bytes"]
        assert info["table_bytes"] == want, level


def test_info(monkeypatch):
    data = json.loads(run("info", "--json").stdout)
    assert data["version"] == fsstgpu.__version__
    assert data["auto_choice"] in ("cpu", "gpu")
    res = run("info")
    assert "auto" in res.stdout


def test_datasets_list_and_generate(tmp_path):
    entries = json.loads(run("datasets", "list", "--json").stdout)
    assert {"urls", "emails"} <= {e["name"] for e in entries}
    assert "urls" in run("datasets", "list").stdout
    out = tmp_path / "u.parquet"
    run("datasets", "generate", "urls", "--rows", "500", "--out", out, "--seed", "3",
        "--row-group-rows", "200")
    t = pq.read_table(out)
    assert t.column("urls").combine_chunks().equals(generate("urls", 500, 3))
    assert pq.ParquetFile(out).num_row_groups == 3
    before = out.read_bytes()
    res = run("datasets", "generate", "urls", "--rows", "5", "--out", out, code=1)
    one_line_error(res, "already exists")
    assert out.read_bytes() == before
    run("datasets", "generate", "urls", "--rows", "5", "--out", out, "--force")
    assert pq.read_table(out).num_rows == 5
    run("datasets", "generate", "uuids", "--rows", "50", "--out", tmp_path / "x.arrows")
    res = run("datasets", "generate", "nope", "--rows", "5", "--out", tmp_path / "y.parquet",
              code=2)
    usage_error(res, "unknown generator", "urls", "uuids")
    res = run("datasets", "generate", "urls", "--rows", "5", "--out", tmp_path / "y.txt", code=2)
    one_line_error(res, "y.txt", ".parquet", ".arrows")
    run("datasets", "generate", "urls", "--rows", "5", "--out", tmp_path / "y.txt", "--format",
        "arrows")
    assert sniff.detect_format(tmp_path / "y.txt") == "arrows"



def test_generate_to_a_url_reports_the_written_object(tmp_path):
    """`datasets generate --out URL` uploaded the file, then measured it as a local path
    (Path.stat of memory:/...): exit 1 and "No such file or directory", the object written."""
    import fsspec

    fs = fsspec.filesystem("memory")
    url = "memory://fsstgpu-test-generate/g.parquet"
    try:
        info = json.loads(run("datasets", "generate", "urls", "--rows", "20", "--out", url,
                              "--json").stdout)
        assert info["bytes"] == fs.info("/fsstgpu-test-generate/g.parquet")["size"] > 0
        local = tmp_path / "g.parquet"
        info = json.loads(run("datasets", "generate", "urls", "--rows", "20", "--out",
                              local.as_uri(), "--json").stdout)
        assert info["bytes"] == local.stat().st_size > 0
    finally:
        fs.rm("/fsstgpu-test-generate", recursive=True)


# ----------------------------------------------------------------------- failures
def test_existing_output_left_untouched(tmp_path, sample):
    src, _ = sample
    dst = tmp_path / "c.parquet"
    dst.write_bytes(b"keep me")
    res = run("compress", src, dst, code=1)
    one_line_error(res, "c.parquet", "already exists", "--force")
    assert dst.read_bytes() == b"keep me"
    res = run("decompress", src, dst, code=1)
    assert dst.read_bytes() == b"keep me"
    run("compress", src, dst, "--force")
    assert dst.read_bytes()[:4] == b"PAR1"


def test_same_in_and_out_refused(tmp_path, sample):
    src, _ = sample
    before = src.read_bytes()
    res = run("compress", src, src, "--force", code=1)
    one_line_error(res, "the output is the input")
    (tmp_path / "link.parquet").symlink_to(src)
    res = run("decompress", src, tmp_path / "link.parquet", "--force", code=1)
    one_line_error(res, "the output is the input")
    # fsspec's local URLs name the same file: local:// was compared as a string, and
    # `compress in local://.../in --force` overwrote the input
    for url in (f"local://{src}", f"file://{src}"):
        res = run("compress", src, url, "--force", code=1)
        one_line_error(res, "the output is the input")
        res = run("compress", url, src, "--force", code=1)
        one_line_error(res, "the output is the input")
    with pytest.raises(ValueError, match="the output is the input"):
        compress_file(src, f"local://{src}", force=True)
    assert src.read_bytes() == before


@pytest.mark.parametrize("cmd", ["compress", "decompress", "inspect", "roundtrip"])
def test_corrupt_input_exits_4(tmp_path, cmd):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not really parquet PAR1")
    args = {"compress": [bad, tmp_path / "o.parquet"],
            "decompress": [bad, tmp_path / "o.parquet"],
            "inspect": [bad], "roundtrip": [bad]}[cmd]
    res = run(cmd, *args, code=4)
    one_line_error(res, "bad.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.parquet"]


def test_truncated_compressed_file_exits_4(tmp_path, sample):
    src, _ = sample
    run("compress", src, tmp_path / "c.parquet")
    data = (tmp_path / "c.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    res = run("decompress", tmp_path / "cut.parquet", tmp_path / "o.parquet", code=4)
    one_line_error(res, "cut.parquet")
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("cmd", ["compress", "decompress", "inspect", "roundtrip", "train"])
def test_missing_input_is_a_usage_error(tmp_path, cmd):
    missing = tmp_path / "none.parquet"
    args = {"compress": [missing, tmp_path / "o.parquet"],
            "decompress": [missing, tmp_path / "o.parquet"], "inspect": [missing],
            "roundtrip": [missing], "train": [missing, "-o", tmp_path / "t.fsst"]}[cmd]
    res = run(cmd, *args, code=2)
    usage_error(res, "none.parquet")
    assert list(tmp_path.iterdir()) == []


def test_missing_table_file_is_a_usage_error(tmp_path, sample):
    src, _ = sample
    res = run("compress", src, tmp_path / "c.parquet", "--table", tmp_path / "none.fsst", code=2)
    usage_error(res, "none.fsst")


@pytest.mark.parametrize(("args", "choices"), [
    (["decompress", "IN", "o.parquet", "--device", "tpu"], ["auto", "cpu", "gpu"]),
    (["compress", "IN", "o.parquet", "--parquet-codec", "bogus"],
     ["none", "snappy", "gzip", "brotli", "lz4", "zstd"]),
    (["compress", "IN", "o.out", "--format", "csv"], ["parquet", "arrow", "arrows"]),
    (["bench", "--device", "tpu"], ["cpu", "gpu"]),
])
def test_bad_choice_is_a_usage_error_listing_the_choices(tmp_path, sample, args, choices):
    src, _ = sample
    res = run(*[src if a == "IN" else a for a in args], code=2)
    usage_error(res, *choices)
    assert not (tmp_path / "o.parquet").exists()


def test_parquet_codec_choices_are_the_writer_codecs():
    assert [c.value for c in ParquetCodec] == list(PARQUET_CODECS)
    assert [f.value for f in FileFormat] == list(sniff.FORMATS)


@pytest.mark.parametrize("columns", ["zz", "url,zz", "", " , ", "n"])
def test_bad_columns_are_usage_errors_listing_string_columns(tmp_path, sample, columns):
    src, _ = sample
    res = run("compress", src, tmp_path / "c.parquet", "--columns", columns, code=2)
    one_line_error(res, "in.parquet", "string columns: url, mail")
    if columns == "n":
        one_line_error(res, "'n'", "int64")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_train_column_errors_are_usage_errors(tmp_path, sample):
    src, _ = sample
    res = run("train", src, "-o", tmp_path / "t.fsst", "--column", "zz", code=2)
    one_line_error(res, "zz", "string columns: url, mail")
    res = run("train", src, "-o", tmp_path / "t.fsst", "--column", "n", code=2)
    one_line_error(res, "'n'", "int64")
    assert not (tmp_path / "t.fsst").exists()


def test_roundtrip_compares_floats_bit_for_bit(tmp_path):
    # Table.equals takes a NaN for unequal to itself: an exact round trip of a column holding
    # NaN was reported as a mismatch (exit 1)
    from fsstgpu.cli.roundtrip import _same_file

    def table(x):
        return pa.table({"s": ["a", "b"], "f": [x, 1.0],
                         "st": pa.array([{"x": x}, None], pa.struct([("x", pa.float32())]))})
    for name, x in (("nan", float("nan")), ("zero", 0.0), ("minus", -0.0)):
        pq.write_table(table(x), tmp_path / f"{name}.parquet")
    res = run("roundtrip", tmp_path / "nan.parquet", "--json")
    assert json.loads(res.stdout)["equal"] is True
    assert _same_file(tmp_path / "nan.parquet", tmp_path / "nan.parquet")
    assert not _same_file(tmp_path / "nan.parquet", tmp_path / "zero.parquet")
    assert not _same_file(tmp_path / "zero.parquet", tmp_path / "minus.parquet")


def test_train_reads_files_as_compress_does(tmp_path, sample):
    # by their first bytes (a .pq file was read as lines of text), and a damaged one is
    # corrupt data naming the file, exit 4 (it was exit 1 with pyarrow's bare message)
    src, table = sample
    pq.write_table(pa.table({"s": ["hello world"] * 30}), tmp_path / "p.pq")
    run("train", tmp_path / "p.pq", "-o", tmp_path / "t.fsst")
    assert b"hello wo" in SymbolTable.from_bytes((tmp_path / "t.fsst").read_bytes()).symbols
    (tmp_path / "cut.parquet").write_bytes(open(src, "rb").read()[:300])
    res = run("train", tmp_path / "cut.parquet", "-o", tmp_path / "t2.fsst", code=4)
    one_line_error(res, "cut.parquet: unreadable")
    assert not (tmp_path / "t2.fsst").exists()


@pytest.mark.parametrize("cmd", ["compress", "decompress"])
def test_output_format_comes_from_the_suffix_or_is_refused(tmp_path, sample, cmd):
    src, table = sample
    if cmd == "decompress":
        run("compress", src, tmp_path / "c.arrow")
        src = tmp_path / "c.arrow"
    res = run(cmd, src, tmp_path / "out.csv", code=2)
    one_line_error(res, "out.csv", ".parquet", ".arrows", "--format")
    assert not (tmp_path / "out.csv").exists()
    run(cmd, src, tmp_path / "out.csv", "--format", "arrows")
    assert sniff.detect_format(tmp_path / "out.csv") == "arrows"
    run(cmd, src, tmp_path / "out.PQ")
    assert sniff.detect_format(tmp_path / "out.PQ") == "parquet"


def test_version():
    for flag in ("--version", "-V"):
        res = run(flag)
        assert res.stdout.strip() == f"fsstgpu {fsstgpu.__version__}"


def test_completion_can_be_installed():
    out = run("--help").stdout
    assert "--install-completion" in out and "--show-completion" in out


def test_help_shows_what_each_value_is():
    out = runner.invoke(app, ["compress", "--help"], env={"COLUMNS": "250"}).stdout
    lines = {line.split()[1]: line for line in out.splitlines()
             if len(line.split()) > 1 and line.split()[1].startswith("--")}
    for option, metavar in [("--columns", "COL[,COL...]"), ("--sample-bytes", "BYTES"),
                            ("--table", "FILE"), ("--format", "parquet|arrow|arrows"),
                            ("--parquet-codec", "none|snappy|gzip|brotli|lz4|zstd")]:
        assert metavar in lines[option], lines[option]
    for vague in ("<str>", "<int range>"):
        assert vague not in out, vague
    out = run("datasets", "generate", "--help").stdout
    assert "NAME" in out and "FILE" in out and "<int range>" not in out


def test_non_utf8_file_names(tmp_path, sample):
    src, table = sample
    odd = tmp_path / os.fsdecode(b"caf\xe9.parquet")  # a name that is not valid UTF-8
    src.rename(odd)
    comp = tmp_path / os.fsdecode(b"\xff-c.parquet")
    res = run("compress", odd, comp)
    assert "caf\\xe9.parquet" in res.stdout and "\\xff-c.parquet" in res.stdout
    info = json.loads(run("inspect", comp, "--json").stdout)
    assert info["path"].endswith("\\xff-c.parquet") and info["rows"] == 900
    run("decompress", comp, tmp_path / "d.parquet")
    assert pq.read_table(tmp_path / "d.parquet").equals(table)


@pytest.mark.skipif(not NO_GPU, reason="checks the no-GPU exit code")
def test_gpu_requested_without_gpu_exits_3(tmp_path, sample):
    src, _ = sample
    run("compress", src, tmp_path / "c.parquet")
    res = run("decompress", tmp_path / "c.parquet", tmp_path / "o.parquet", "--device", "gpu",
              code=3)
    one_line_error(res, "GPU")
    assert not (tmp_path / "o.parquet").exists()
    res = run("bench", "kernels", code=3)
    one_line_error(res, "GPU")
    text = tmp_path / "lines.txt"
    text.write_text("a\nb\n")
    res = run("bench", text, "--device", "gpu", code=3)
    one_line_error(res, "GPU")
    res = run("roundtrip", text, "--device", "gpu", code=3)
    one_line_error(res, "GPU")


def test_keyboard_interrupt_exits_130_without_output(tmp_path, sample, monkeypatch):
    src, _ = sample
    import fsstgpu.formats.compressing

    calls = []
    real = fsstgpu.formats.compressing.to_extension_array

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(fsstgpu.formats.compressing, "to_extension_array", interrupted)
    res = run("compress", src, tmp_path / "c.parquet", code=130)
    one_line_error(res, "interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_bench_words_take_no_paths(tmp_path):
    """`bench kernels FILE` / `bench files FILE` are usage errors: exit 2, as every misplaced
    bench option is (it was 1, the code of a failed run)."""
    text = tmp_path / "t.txt"
    text.write_text("x\n")
    for word in ("kernels", "files"):
        res = run("bench", word, text, code=2)
        one_line_error(res, f"`{word}` takes no paths")
        res = run("bench", text, word, "--json", code=2)
        assert json.loads(res.stdout)["kind"] == "usage"


def test_bench_cpu_from_the_checkout(tmp_path):
    """`fsstgpu bench` runs benchmarks/cpu.py of the checkout (not installed) on small files."""
    for name, n in (("a.txt", 2000), ("b.txt", 500)):
        (tmp_path / name).write_text("".join(f"http://example.com/{i}\n" for i in range(n)))
    rows = json.loads(run("bench", tmp_path / "a.txt", tmp_path / "b.txt", "--json").stdout)
    assert [r["name"] for r in rows] == ["a.txt", "b.txt", "(all files, one column)", "TOTAL"]
    assert [r["strings"] for r in rows] == [2000, 500, 2500, 2500]
    assert all(r["ratio"] > 1 and r["codec_decompress_mbs"] > 0 for r in rows)
    res = run("bench", tmp_path / "b.txt")
    assert "b.txt" in res.stdout and "TOTAL" in res.stdout


def test_bench_level(tmp_path):
    """`fsstgpu bench --level L` times level L: its blocks are compress(level=L)'s."""
    path = tmp_path / "urls.txt"
    words = ("alpha", "beta", "gamma")
    path.write_text("".join(f"http://example.com/{words[i % 3]}/{i % 97}/x\n"
                            for i in range(120_000)))
    col = load_lines(path)
    blocks = {level: len(fsstgpu.compress(col, level=level).tables)
              for level in ("fast", "default")}
    assert blocks["fast"] == 4 != blocks["default"]  # 3.3 MiB: a block per MiB
    for level, count in blocks.items():
        rows = json.loads(run("bench", path, "--level", level, "--json").stdout)
        assert rows[0]["name"] == "urls.txt" and rows[0]["blocks"] == count, (level, rows[0])
    res = run("bench", path, "--level", "fast", "--device", "gpu", code=2)
    one_line_error(res, "--level goes with --device cpu")


def test_bench_threads_gives_a_scaling_table_of_the_paths_as_one_column(tmp_path):
    """`fsstgpu bench --threads N` runs benchmarks/cpu_scaling.py over the files as one column."""
    for name, n in (("a.txt", 3000), ("b.txt", 1000)):
        (tmp_path / name).write_text("".join(f"http://example.com/{name}/{i}\n" for i in range(n)))
    rows = json.loads(run("bench", tmp_path / "a.txt", tmp_path / "b.txt", "--threads", "1",
                          "--json").stdout)
    assert [r["cores"] for r in rows] == [1]
    assert rows[0]["ratio"] > 1 and rows[0]["lz4_ratio"] > 1
    assert rows[0]["compress_MB_s"] > 0 and rows[0]["zstd_decompress_MB_s"] > 0
    res = run("bench", tmp_path / "a.txt", "--threads", "1", "--device", "gpu", code=2)
    one_line_error(res, "--threads goes with --device cpu")


def test_compress_writer_options(tmp_path, sample):
    src, table = sample
    res = run("compress", src, tmp_path / "c.parquet", "--zstd-level", "19",
              "--row-group-rows", "400", "--json")
    assert json.loads(res.stdout)["units"] == 3  # 900 rows in groups of 400
    meta = pq.ParquetFile(tmp_path / "c.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [400, 400, 100]
    assert fsstgpu.formats.read_table(tmp_path / "c.parquet", device="cpu").equals(table)
    run("compress", src, tmp_path / "x.parquet", "--zstd-level", "0", code=2)


def test_writer_options_that_do_not_fit_the_output_are_usage_errors(tmp_path, sample):
    """--zstd-level and --parquet-codec set a Parquet output's fsst pages: for an Arrow IPC
    output (or --zstd-level beside a codec other than zstd) they are a bad option, exit 2
    (they exited 1, and --parquet-codec was dropped without a word), and nothing is written."""
    src, _ = sample
    for opts in (["--zstd-level", "19"], ["--parquet-codec", "snappy"]):
        res = run("compress", src, tmp_path / "c.arrow", *opts, code=2)
        one_line_error(res, "Parquet")
        assert not (tmp_path / "c.arrow").exists()
    res = run("compress", src, tmp_path / "c.parquet", "--parquet-codec", "snappy",
              "--zstd-level", "19", code=2)
    one_line_error(res, "snappy")


def test_dataset_of_parquet_and_ipc_files_takes_writer_options(tmp_path, sample):
    """A dataset's --zstd-level and --parquet-codec are its Parquet files': its Arrow IPC files
    are written as without them (the first IPC file failed the run, the rest left unwritten)."""
    src, table = sample
    (tmp_path / "in").mkdir()
    pq.write_table(table, tmp_path / "in" / "a.parquet")
    compress_file(src, tmp_path / "in" / "b.arrow")  # an IPC file (compressed again: fine)
    fsstgpu.formats.decompress_file(tmp_path / "in" / "b.arrow", tmp_path / "in" / "c.arrow")
    (tmp_path / "in" / "b.arrow").unlink()
    run("compress", tmp_path / "in", tmp_path / "out", "--zstd-level", "19", "--parquet-codec",
        "zstd", "--no-progress", "--json")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.parquet", "c.arrow"]
    assert fsstgpu.formats.read_table(tmp_path / "out" / "c.arrow", device="cpu").equals(table)
    run("compress", tmp_path / "in", tmp_path / "out2", "--parquet-codec", "snappy",
        "--no-progress", "--json")
    meta = pq.ParquetFile(tmp_path / "out2" / "a.parquet").metadata
    assert "SNAPPY" in {meta.row_group(0).column(i).compression for i in range(meta.num_columns)}


def test_dask_options_with_one_file_are_usage_errors(tmp_path, sample):
    """--workers and --scheduler spread a dataset's files: with one file IN they were ignored
    without a word (exit 0, even with an unreachable scheduler); now a usage error, nothing
    written. --format with a dataset IN is still refused, by the same check."""
    src, _ = sample
    for command in ("compress", "decompress"):
        for opts in (["--workers", "2"], ["--scheduler", "tcp://nohost:1"]):
            res = run(command, src, tmp_path / "o.parquet", *opts, code=2)
            one_line_error(res, "Dask")
            assert not (tmp_path / "o.parquet").exists()
    (tmp_path / "in").mkdir()
    res = run("compress", tmp_path / "in", tmp_path / "out", "--format", "parquet", code=2)
    one_line_error(res, "--format")


def test_generate_shows_a_spinner_on_a_terminal_and_nothing_elsewhere(tmp_path, monkeypatch):
    """datasets generate (5 M rows take seconds) says what it does on stderr where stderr is a
    terminal; elsewhere stderr stays empty."""
    import io

    from rich.console import Console

    import fsstgpu.cli.app as cli_app

    shown = io.StringIO()
    monkeypatch.setattr(cli_app, "err_console",
                        lambda: Console(file=shown, force_terminal=True, width=100))
    run("datasets", "generate", "urls", "--rows", "20000", "--out", tmp_path / "u.parquet")
    assert "generating 20,000 rows of urls" in shown.getvalue()
    monkeypatch.undo()
    res = run("datasets", "generate", "urls", "--rows", "20", "--out", tmp_path / "v.parquet")
    assert res.stderr == ""


def test_train_shows_a_spinner_on_a_terminal(tmp_path, monkeypatch):
    """train (a big file takes seconds to read and sample) says what it does on stderr where
    stderr is a terminal."""
    import io

    from rich.console import Console

    import fsstgpu.cli.app as cli_app

    src = tmp_path / "u.parquet"
    run("datasets", "generate", "urls", "--rows", "2000", "--out", src)
    shown = io.StringIO()
    monkeypatch.setattr(cli_app, "err_console",
                        lambda: Console(file=shown, force_terminal=True, width=200))
    run("train", src, "--out", tmp_path / "t.fsst")
    assert "training on" in shown.getvalue() and "u.parquet" in shown.getvalue()
