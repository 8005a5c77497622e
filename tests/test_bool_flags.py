"""The public API's bool flags take bools only (limits.flag): each took any truthy object, so
``force="no"`` overwrote an existing output and ``validate(full="no")`` walked every code."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.formats import (
    blob,
    compress_dataset,
    compress_file,
    decompress_dataset,
    decompress_file,
)
from fsstgpu.gpu.concat import concat_device_arrays
from fsstgpu.integrations.dask import local_client
from fsstgpu.limits import flag

NOT_BOOLS = ["no", 1, None, [], 0.0]


def test_flag_takes_bools_and_numpy_bools_only():
    assert flag(True, "x") is True and flag(np.False_, "x") is False
    for value in NOT_BOOLS:
        with pytest.raises(TypeError, match="^x must be a bool, not "):
            flag(value, "x")


@pytest.mark.parametrize("value", NOT_BOOLS)
def test_force_of_every_writer_is_a_bool(tmp_path, value):
    pq.write_table(pa.table({"s": ["ab", "cd"]}), tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    (tmp_path / "taken.parquet").write_bytes(b"mine")
    for write in (lambda: compress_file(tmp_path / "in.parquet", tmp_path / "taken.parquet",
                                        force=value),
                  lambda: decompress_file(tmp_path / "c.parquet", tmp_path / "taken.parquet",
                                          force=value)):
        with pytest.raises(TypeError, match="^force must be a bool"):
            write()
        assert (tmp_path / "taken.parquet").read_bytes() == b"mine"
    (tmp_path / "ds").mkdir()
    pq.write_table(pa.table({"s": ["ab"]}), tmp_path / "ds" / "a.parquet")
    for write in (compress_dataset, decompress_dataset):
        with pytest.raises(TypeError, match="^force must be a bool"):
            write(tmp_path / "ds", tmp_path / "out", force=value)
        assert not (tmp_path / "out").exists()


def test_numpy_bools_are_taken(tmp_path):
    pq.write_table(pa.table({"s": ["ab", "cd"]}), tmp_path / "in.parquet")
    (tmp_path / "c.parquet").write_bytes(b"old")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet", force=np.True_)
    assert decompress_file(tmp_path / "c.parquet", tmp_path / "d.parquet",
                           force=np.False_)["rows"] == 2
    carr = fsstgpu.compress(pa.array(["ab", None]))
    carr.validate(full=np.True_)
    assert blob.loads(carr.to_bytes(store_code_offsets=np.True_)).equals(carr)


@pytest.mark.parametrize("value", NOT_BOOLS)
def test_the_column_flags_are_bools(value):
    carr = fsstgpu.compress(pa.array(["ab", None]))
    with pytest.raises(TypeError, match="^full must be a bool"):
        carr.validate(full=value)
    with pytest.raises(TypeError, match="^store_code_offsets must be a bool"):
        carr.to_bytes(store_code_offsets=value)
    with pytest.raises(TypeError, match="^store_code_offsets must be a bool"):
        blob.dumps(carr, store_code_offsets=value)
    with pytest.raises(TypeError, match="^consume must be a bool"):  # (before any GPU use)
        concat_device_arrays([], consume=value)
    for name in ("processes", "quiet"):  # (before dask is imported)
        with pytest.raises(TypeError, match=f"^{name} must be a bool"), \
                local_client(**{name: value}):
            pass
