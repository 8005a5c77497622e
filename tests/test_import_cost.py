"""`import fsstgpu` loads what the column API needs, not the file formats (issue #21's start-up
goal, issue #22's layering): pyarrow.parquet, pyarrow.fs and pyarrow.compute cost ~80 ms."""

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
