"""What session 66's review found in that day's changes: metadata-only changes during a read
(chmod, ln) are not a changed file; a sliced map's required-nulls check sees its own entries only;
links inside hidden folders of a dataset are not followed."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.formats import compress_file, open_reader
from fsstgpu.formats.locations import skipped_files
from fsstgpu.formats.parquet_compat import required_nulls


def _parquet(tmp_path, groups=4):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": [f"v{i}" for i in range(groups * 100)]}), path,
                   row_group_size=100)
    return path


@pytest.mark.parametrize("change", ["chmod", "hard link"])
def test_a_metadata_only_change_during_a_read_is_not_a_changed_file(tmp_path, change):
    # chmod, a hard link (cp -al snapshots), chown, xattrs, tar --atime-preserve's utime all
    # move the ctime; the bytes are the same: the read must go on
    path = _parquet(tmp_path)
    reader = open_reader(path)
    rows = 0
    for i, batch in enumerate(reader):
        if i == 0:
            if change == "chmod":
                os.chmod(path, 0o444)
            else:
                os.link(path, tmp_path / "snapshot.parquet")
        rows += batch.num_rows
    assert rows == 400


def test_compress_survives_a_chmod_of_its_input(tmp_path):
    path = _parquet(tmp_path)

    def progress(**_):
        os.chmod(path, 0o444)

    compress_file(path, tmp_path / "out.parquet", progress=progress)
    assert pq.read_table(tmp_path / "out.parquet").num_rows == 400


def test_required_nulls_looks_only_at_a_sliced_maps_own_entries():
    type_ = pa.map_(pa.string(), pa.field("v", pa.int64(), nullable=False))
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array(["a", "b"]),
                                   pa.array([1, None], pa.int64()), type=type_)
    kept = maps.slice(0, 1)  # [{'a': 1}]: no null here (the null item is the next row's)
    assert kept.to_pylist() == [[("a", 1)]]
    assert required_nulls(pa.table({"m": kept})) == []


def test_links_in_hidden_folders_are_not_followed(tmp_path):
    # a dataset's .git / _env / .snapshot link may reach anywhere (/usr, a home folder):
    # the listing walked all of it (seconds, or an unreadable folder failing the dataset)
    ds, elsewhere = tmp_path / "ds", tmp_path / "elsewhere"
    ds.mkdir()
    (elsewhere / "deep").mkdir(parents=True)
    pq.write_table(pa.table({"s": ["a"]}), ds / "a.parquet")
    pq.write_table(pa.table({"s": ["b"]}), elsewhere / "deep" / "b.parquet")
    os.symlink(elsewhere, ds / ".env")
    assert skipped_files(ds) == []
