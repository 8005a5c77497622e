"""`import fsstgpu` loads what the column API needs, not the file formats (issue #21's start-up
goal, issue #22's layering): pyarrow.parquet, pyarrow.fs and pyarrow.compute cost ~80 ms."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

HEAVY = ("pyarrow.parquet", "pyarrow.fs", "pyarrow.compute", "pyarrow.dataset",
         "fsstgpu.formats.files", "fsstgpu.formats.datasets")


def test_import_leaves_the_file_formats_unloaded(fresh_python):
    loaded = fresh_python("import sys, fsstgpu; "
                          f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert loaded == "[]"


def test_a_column_round_trip_loads_no_file_format(fresh_python):
    """(pyarrow.compute may load on use: some of pyarrow's own array methods call it.)"""
    files = tuple(m for m in HEAVY if m != "pyarrow.compute")
    out = fresh_python("import sys, pyarrow as pa, fsstgpu\n"
                       "col = pa.array(['ab', None, 'abc'] * 100)\n"
                       "back = fsstgpu.decompress(fsstgpu.compress(col), device='cpu')\n"
                       "assert back.equals(col)\n"
                       f"print(sorted(m for m in {files!r} if m in sys.modules))")
    assert out == "[]"


@pytest.mark.parametrize("name", ["read_table", "compress_file", "read_dataset", "inspect_file"])
def test_the_file_functions_load_on_first_use(fresh_python, name):
    out = fresh_python(f"import fsstgpu.formats as f; from fsstgpu.formats import {name}; "
                       f"print(callable({name}), {name!r} in dir(f), {name!r} in f.__all__)")
    assert out == "True True True"


def test_files_round_trip_without_pandas(fresh_python, tmp_path):
    """pandas is optional: compress_file, read_table and decompress_file work with it unable
    to import. (pyarrow 25's DataType.to_pandas_dtype imports pandas: the README's first
    command failed on Python 3.10, which gets pyarrow 25, with "No module named 'pandas'".)"""
    hide = ("import sys\n"
            "class NoPandas:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'pandas' or name.startswith('pandas.'):\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NoPandas())\n")
    out = fresh_python(hide +
                       "import pyarrow as pa, pyarrow.parquet as pq\n"
                       "from fsstgpu.formats import compress_file, decompress_file, read_table\n"
                       f"d = {str(tmp_path)!r}\n"
                       "t = pa.table({'s': ['ab', None, 'abc'] * 100, 'n': range(300)})\n"
                       "pq.write_table(t, d + '/in.parquet')\n"
                       "compress_file(d + '/in.parquet', d + '/c.parquet')\n"
                       "assert read_table(d + '/c.parquet', device='cpu').equals(t)\n"
                       "decompress_file(d + '/c.parquet', d + '/d.parquet')\n"
                       "print(pq.read_table(d + '/d.parquet').equals(t))")
    assert out == "True"



@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_compress_file_does_not_import_pandas(fresh_python, tmp_path, suffix):
    """Where pandas is installed, ``pa.array`` of a NumPy array or a list imports it to ask
    whether its argument is a pandas object: 0.2-1 s of a command's wall time (the CLI's compress
    of the bundled sample 0.99 -> 0.71 s without it). The writers build their arrays from
    buffers."""
    pytest.importorskip("pandas", reason="pandas not installed: nothing could import it")
    table = pa.table({"s": ["ab", None, "abc"] * 100, "n": range(300)})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=100)  # here: pa.table imports it
    out = fresh_python("import sys\n"
                       "from fsstgpu.formats import compress_file\n"
                       f"compress_file({str(tmp_path / 'in.parquet')!r}, "
                       f"{str(tmp_path / ('c' + suffix))!r})\n"
                       "print('pandas' in sys.modules)")
    assert out == "False"
