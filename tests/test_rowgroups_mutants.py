"""formats.rowgroups' behaviours that the second mutation campaign of the module (session 80)
found untested: each test names the mutants it kills."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from fsstgpu.formats import compress_file
from fsstgpu.formats.rowgroups import Source
from fsstgpu.formats.sinks import write_table


def test_repeated_names_are_refused_naming_the_first_one(tmp_path):
    # guards the message's name: the first name used twice, not the last (mutant: repeated[-1])
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3]), pa.array([4])],
                                 names=["b", "a", "b", "a"])
    with ipc.new_file(tmp_path / "t.arrow", table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(ValueError, match="column name 'b' is used by more than one column"):
        Source(tmp_path / "t.arrow")


def test_an_ipc_file_of_an_extension_column_is_read_without_pool_threads(tmp_path, monkeypatch):
    # guards the reopening of an IPC file holding a Python-defined type with use_threads=False
    # (pool threads dropping the type's references later could abort the process at its end):
    # mutant "format == 'arrow' and not use_threads" forced False
    write_table(pa.table({"s": ["a", "b", "c"]}), tmp_path / "t.arrow", "arrow")
    compress_file(tmp_path / "t.arrow", tmp_path / "c.arrow")
    opened = []
    plain = ipc.open_file

    def recording(source, *args, **kwargs):
        opened.append(kwargs.get("options"))
        return plain(source, *args, **kwargs)

    monkeypatch.setattr(ipc, "open_file", recording)
    with Source(tmp_path / "t.arrow") as source:  # no extension type: pool threads allowed
        assert source.use_threads
    assert all(options is None or options.use_threads for options in opened)
    opened.clear()
    with Source(tmp_path / "c.arrow") as source:
        assert not source.use_threads
        assert source.unit(0).column("s").type.extension_name == "fsstgpu.fsst"
    assert opened and opened[-1] is not None and not opened[-1].use_threads
