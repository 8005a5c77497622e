"""A streaming read (open_reader) of an input rewritten in place between its batches yields
only the old file's rows, then an error: never a batch of the new version (before, the new
version's row groups were yielded and the error came only at the end, or never when the
caller stopped early). A dataset's hidden folder that vanishes while it is listed (Spark's
_temporary) is not an error. A stray temporary name with an impossible process id does not
stop writes."""

from __future__ import annotations

import itertools
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu.formats.locations as locations
from fsstgpu import CorruptDataError
from fsstgpu.formats import compress_file, open_reader
from fsstgpu.formats.atomic import TEMP_SUFFIX, _host, atomic_output
from fsstgpu.formats.locations import dataset_files

ROWS, GROUP = 4_000, 500


def _table(letter: str) -> pa.Table:
    # same lengths in both versions: a file of one layout, other bytes
    return pa.table({"s": [f"{letter * 8}{i:06d}" for i in range(ROWS)],
                     "n": list(range(ROWS))})


def _versions(tmp_path, fmt: str):
    """``work`` (the old version, its mtime in the past) and the new version's bytes, of one
    size: plain Parquet without dictionaries or page compression, or fsstgpu IPC files."""
    paths = []
    for letter in "ab":
        plain = tmp_path / f"{letter}.parquet"
        pq.write_table(_table(letter), plain, row_group_size=GROUP, compression="none",
                       use_dictionary=False)
        if fmt == "arrow":
            out = tmp_path / f"{letter}.arrow"
            compress_file(plain, out)
            plain = out
        paths.append(plain)
    old, new = (p.read_bytes() for p in paths)
    assert len(old) == len(new) and old != new
    work = tmp_path / f"work.{fmt}"
    work.write_bytes(old)
    st = os.stat(work)  # (coarse file-system clocks: the rewrite must show in the mtime)
    os.utime(work, ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))
    return work, new


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
@pytest.mark.parametrize("stop", [None, 4])
def test_open_reader_never_yields_a_rewritten_files_rows(tmp_path, fmt, stop):
    work, new = _versions(tmp_path, fmt)
    reader = open_reader(work)
    seen = []
    with pytest.raises(CorruptDataError, match="changed while it was being read") if (
            stop is None) else _maybe_raises():
        for i, batch in enumerate(itertools.islice(reader, stop)):
            seen.append(batch.column("s").to_pylist())
            if i == 0:
                with open(work, "r+b") as f:  # cp over it: same inode, same size
                    f.write(new)
    rows = [s for part in seen for s in part]
    assert rows == _table("a").column("s").to_pylist()[:len(rows)]


class _maybe_raises:
    """An early stop may see the error or only old rows (batches read before the change)."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return exc_type is not None and issubclass(exc_type, CorruptDataError)


def test_a_vanishing_hidden_folder_is_not_an_error(tmp_path, monkeypatch):
    """A writer's _temporary folder removed between its parent's listing and its own (the
    files of a hidden folder are not the dataset's): before, FileNotFoundError."""
    pq.write_table(pa.table({"s": ["x"]}), tmp_path / "a.parquet")
    (tmp_path / "_temporary" / "0").mkdir(parents=True)
    real = os.walk

    def walk(top, *args, **kwargs):
        for step in real(top, *args, **kwargs):
            if os.path.basename(step[0]) == "_temporary":
                shutil.rmtree(step[0])  # gone before os.walk lists _temporary/0
            yield step

    monkeypatch.setattr(locations.os, "walk", walk)
    assert [rel for _, rel in dataset_files(tmp_path)] == ["a.parquet"]


def test_a_temporary_name_with_an_impossible_process_id_is_left_alone(tmp_path):
    stray = tmp_path / f".x.parquet.ab.{10**20}@{_host()}{TEMP_SUFFIX}"
    stray.touch()
    with atomic_output(tmp_path / "out.bin") as tmp:
        open(tmp, "wb").write(b"x")
    assert (tmp_path / "out.bin").read_bytes() == b"x" and stray.exists()


def test_no_hard_links_never_leaves_an_empty_output(tmp_path, monkeypatch):
    """On a file system without hard links (link() EPERM: vfat, some FUSE mounts) the name was
    claimed by an empty file, then replaced: a signal (or SIGKILL) in between left an empty
    output that every rerun refused as existing, and readers met the empty file meanwhile."""
    import errno

    import fsstgpu.formats.atomic as atomic

    def no_link(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # a stop signal between the claim and the rename

    monkeypatch.setattr(atomic.os, "link", no_link)
    monkeypatch.setattr(atomic.os, "replace", interrupted)
    dst = tmp_path / "out.bin"
    try:
        with atomic_output(dst) as tmp:
            open(tmp, "wb").write(b"whole")
    except KeyboardInterrupt:
        pass
    assert not dst.exists() or dst.read_bytes() == b"whole"
    assert [p.name for p in tmp_path.iterdir()] in ([], ["out.bin"])
    monkeypatch.undo()
    monkeypatch.setattr(atomic.os, "link", no_link)
    with pytest.raises(FileExistsError):  # another process took the name meanwhile: kept
        with atomic_output(tmp_path / "taken.bin", force=False) as tmp:
            (tmp_path / "taken.bin").write_bytes(b"theirs")
            open(tmp, "wb").write(b"ours")
    assert (tmp_path / "taken.bin").read_bytes() == b"theirs"


def test_a_rewrite_that_sets_the_mtime_back_is_seen(tmp_path):
    """cp -p, rsync --inplace -t, touch -r: written in place, same size, the old mtime set
    back; (device, inode, size, mtime) unchanged, so the new version's row groups were yielded
    and no error came. The ctime cannot be set back."""
    work, new = _versions(tmp_path, "parquet")
    st = os.stat(work)
    seen = []
    with pytest.raises(CorruptDataError, match="changed while it was being read"):
        for i, batch in enumerate(open_reader(work)):
            seen += batch.column("s").to_pylist()
            if i == 0:
                with open(work, "r+b") as f:
                    f.write(new)
                os.utime(work, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert seen == _table("a").column("s").to_pylist()[:len(seen)]
