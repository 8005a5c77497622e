"""JSON records in a Parquet footer nested past Python's recursion limit (a forged footer):
CorruptDataError where the record matters, ignored where an unreadable record is ignored,
never a RecursionError."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file, read_table
from fsstgpu.formats.decoding import CODECS_KEY
from fsstgpu.formats.pruning import STRING_STATS_KEY

DEEP = b"[" * 100_000  # json.loads recurses once per level


def _plain(tmp_path, key):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": ["a", "b"]}).replace_schema_metadata({key: DEEP}), path)
    return path


def test_deep_string_stats_record_is_corrupt_data(tmp_path):
    path = _plain(tmp_path, STRING_STATS_KEY)
    with pytest.raises(CorruptDataError, match="string_stats"):
        read_table(path, filters=[("s", "==", "a")])


def test_deep_input_codecs_record_is_ignored_as_unreadable(tmp_path):
    path = _plain(tmp_path, CODECS_KEY)
    compress_file(path, tmp_path / "out.parquet")
    assert read_table(tmp_path / "out.parquet").column("s").to_pylist() == ["a", "b"]
