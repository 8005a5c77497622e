"""Atomic outputs: no partial files, no clobbering (also between processes), no litter."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from fsstgpu.formats import atomic
from fsstgpu.formats.atomic import (
    TEMP_SUFFIX,
    StaleTemporaryFileWarning,
    atomic_output,
    check_output,
    remove_stale_temporaries,
)


def race(dst, writers: int, force: bool = False) -> list[str]:
    """``writers`` threads write ``dst`` at once; each finishes its block at the same moment."""
    barrier = threading.Barrier(writers)
    results = [None] * writers

    def write(k):
        try:
            with atomic_output(dst, force=force) as tmp:
                with open(tmp, "wb") as f:
                    f.write(b"writer %d" % k)
                barrier.wait()  # all temporary files complete: now put them in place together
            results[k] = "ok"
        except FileExistsError:
            results[k] = "exists"

    threads = [threading.Thread(target=write, args=(k,)) for k in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_one_writer_of_a_new_output_wins(tmp_path):
    # Checking for the output and then renaming let several writers "succeed" (about one trial
    # in ten before link() made the last step atomic).
    for trial in range(40):
        dst = tmp_path / f"out{trial}.bin"
        results = race(dst, 8)
        assert results.count("ok") == 1, results
        winner = results.index("ok")
        assert dst.read_bytes() == b"writer %d" % winner
    assert all(not p.name.endswith(TEMP_SUFFIX) for p in tmp_path.iterdir())


def test_forced_writers_all_succeed_and_one_file_remains(tmp_path):
    results = race(tmp_path / "out.bin", 4, force=True)
    assert results == ["ok"] * 4
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_without_hard_links_the_name_is_claimed_exclusively(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)  # a file system without hard links
    for trial in range(10):
        dst = tmp_path / f"out{trial}.bin"
        results = race(dst, 4)
        assert results.count("ok") == 1, results
        assert dst.read_bytes() == b"writer %d" % results.index("ok")
    assert all(not p.name.endswith(TEMP_SUFFIX) for p in tmp_path.iterdir())


def test_temporary_file_is_named_after_the_output_and_the_writer(tmp_path):
    with atomic_output(tmp_path / "x.parquet") as tmp:
        name = os.path.basename(tmp)
        assert os.path.dirname(tmp) == str(tmp_path)
        assert name.startswith(".x.parquet.") and name.endswith(TEMP_SUFFIX)
        assert f".{os.getpid()}@" in name
        assert os.path.exists(tmp)
    assert os.listdir(tmp_path) == ["x.parquet"]
    long = "n" * 250  # the temporary name stays within the 255-byte limit
    with atomic_output(tmp_path / long) as tmp:
        assert len(os.fsencode(os.path.basename(tmp))) <= 255
    assert (tmp_path / long).exists()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporary_files_of_dead_writers_are_removed(tmp_path):
    host = atomic._host()
    dead = tmp_path / f".a.parquet.1234abcd.{dead_pid()}@{host}{TEMP_SUFFIX}"
    alive = tmp_path / f".b.parquet.1234abcd.{os.getpid()}@{host}{TEMP_SUFFIX}"
    elsewhere = tmp_path / f".c.parquet.1234abcd.{dead_pid()}@other-host{TEMP_SUFFIX}"
    unknown = tmp_path / f".d.parquet.z1x2c3{TEMP_SUFFIX}"  # no writer named: left alone
    for p in (dead, alive, elsewhere, unknown):
        p.write_bytes(b"partial")
    with pytest.warns(StaleTemporaryFileWarning, match=dead.name):
        with atomic_output(tmp_path / "new.bin") as tmp:
            open(tmp, "wb").close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [alive.name, elsewhere.name, unknown.name, "new.bin"])
    assert remove_stale_temporaries(tmp_path) == []


def test_killed_writer_leaves_a_file_the_next_writer_removes(tmp_path):
    code = ("import os, sys\nfrom fsstgpu.formats.atomic import atomic_output\n"
            "with atomic_output(sys.argv[1]) as tmp:\n"
            "    open(tmp, 'wb').write(b'partial')\n"
            "    os.kill(os.getpid(), 9)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out.bin")], timeout=60)
    assert proc.returncode == -9
    (left,) = tmp_path.iterdir()
    assert left.name.endswith(TEMP_SUFFIX)
    with pytest.warns(StaleTemporaryFileWarning):
        with atomic_output(tmp_path / "out.bin") as tmp:
            open(tmp, "wb").close()
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]



def test_killed_url_writer_leaves_a_copy_the_next_url_writer_removes(tmp_path, monkeypatch):
    """A URL output is written to a local copy in the temporary folder first; a process killed
    before its upload left that copy (a whole output) there for good: the sweep of dead
    writers' files looked in local outputs' folders only."""
    import fsspec

    spools = tmp_path / "tmp"
    spools.mkdir()
    code = ("import os, sys\nfrom fsstgpu.formats.atomic import atomic_output\n"
            "with atomic_output('memory://fsstgpu-test-atomic/k.bin') as tmp:\n"
            "    open(tmp, 'wb').write(b'partial')\n"
            "    os.kill(os.getpid(), 9)\n")
    proc = subprocess.run([sys.executable, "-c", code], timeout=60,
                          env={**os.environ, "TMPDIR": str(spools)})
    assert proc.returncode == -9
    (left,) = spools.iterdir()
    assert left.name.endswith(TEMP_SUFFIX)
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    url = "memory://fsstgpu-test-atomic/k.bin"
    try:
        with pytest.warns(StaleTemporaryFileWarning, match=left.name) as warned:
            with atomic_output(url) as tmp:
                open(tmp, "wb").close()
        assert warned[0].filename == __file__  # (the warning points at the caller's with)
        assert list(spools.iterdir()) == []
    finally:
        fsspec.filesystem("memory").rm(url)


def test_a_stop_right_after_the_create_leaves_no_file(tmp_path, monkeypatch):
    """A stop signal's exception can come at any step after the temporary file is created and
    before the block that removes it (it once did, between the create and that block: the CI's
    SIGTERM test left the file): here it comes from the descriptor's close."""
    folder = tmp_path / "t"  # (both the local and the URL output make theirs here)
    folder.mkdir()
    real_close = os.close

    def interrupted_close(fd):
        real_close(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "close", interrupted_close)
    with pytest.raises(KeyboardInterrupt):
        with atomic._new_temporary(folder, ".x.parquet"):
            pass
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG])
def test_a_full_disk_is_named_after_the_output_and_leaves_nothing(tmp_path, code):
    # pyarrow's writers raise OSError(28, "Error writing bytes to file. ...") naming no file
    dst = tmp_path / "out.parquet"
    with pytest.raises(OSError) as raised:
        with atomic_output(dst) as tmp:
            Path(tmp).write_bytes(b"part")
            raise OSError(code, "Error writing bytes to file. Detail: [errno 28]")
    assert raised.value.errno == code and raised.value.filename == str(dst)
    assert os.strerror(code) in str(raised.value) and str(dst) in str(raised.value)
    assert list(tmp_path.iterdir()) == []



@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG])
def test_a_full_temporary_folder_under_a_url_output_is_named(code):
    """A URL output is written to a local temporary file first: a full disk or a size limit
    there said only "Error writing bytes to file", naming neither the output nor the folder."""
    import fsspec

    url = "memory://fsstgpu-test-atomic/out.parquet"
    with pytest.raises(OSError) as raised:
        with atomic_output(url) as tmp:
            Path(tmp).write_bytes(b"part")
            raise OSError(code, "Error writing bytes to file. Detail: [errno 28]")
    assert raised.value.errno == code and raised.value.filename == url
    assert os.strerror(code) in str(raised.value) and "temporary folder" in str(raised.value)
    assert not os.path.exists(tmp) and not fsspec.filesystem("memory").exists(url)




def test_a_url_upload_that_fails_part_way_keeps_the_old_object(monkeypatch):
    """fsspec's generic put_file (memory://'s, and any store's without its own) writes at the key
    itself: an upload that failed part way left a partial object there, which with force had
    replaced the complete one. The upload goes to a temporary key beside it, moved in place."""
    import fsspec
    from fsspec.implementations.memory import MemoryFile

    fs = fsspec.filesystem("memory")
    folder, url = "/fsstgpu-test-partial", "memory://fsstgpu-test-partial/x.bin"
    fs.pipe(url, b"the old, complete object")
    real_write = MemoryFile.write

    def reset(self, data):
        real_write(self, data[:4])
        raise ConnectionResetError("connection reset by peer")

    try:
        monkeypatch.setattr(MemoryFile, "write", reset)
        with pytest.raises(ConnectionResetError):
            with atomic_output(url, force=True) as tmp:
                Path(tmp).write_bytes(b"the new, complete object")
        monkeypatch.undo()
        assert fs.find(folder) == [f"{folder}/x.bin"]  # (no temporary key left either)
        assert fs.cat(url) == b"the old, complete object"
        # an object that appears at the key during the upload is kept, without force
        real_put = fs.put_file

        def raced(local, key, **kwargs):
            real_put(local, key, **kwargs)
            fs.pipe(f"{folder}/y.bin", b"another writer's")

        monkeypatch.setattr(fs, "put_file", raced)
        with pytest.raises(FileExistsError, match="memory://fsstgpu-test-partial/y.bin: already"):
            with atomic_output("memory://fsstgpu-test-partial/y.bin") as tmp:
                Path(tmp).write_bytes(b"new")
        assert fs.cat(f"{folder}/y.bin") == b"another writer's"
        # errors of the upload name the output, not the temporary key
        for refused in (lambda key: PermissionError(errno.EACCES, "Access Denied", key),
                        FileNotFoundError):  # (s3fs's, and memory://'s missing parent)
            def refuse(local, key, _refused=refused, **kwargs):
                raise _refused(key)

            monkeypatch.setattr(fs, "put_file", refuse)
            with pytest.raises(OSError) as raised:
                with atomic_output(url, force=True) as tmp:
                    Path(tmp).write_bytes(b"new")
            assert url in str(raised.value) and TEMP_SUFFIX not in str(raised.value)
        monkeypatch.undo()
        # a store that cannot move (no copy either) is written at the key, as before
        monkeypatch.setattr(type(fs), "cp_file", _cannot)
        with atomic_output(url, force=True) as tmp:
            Path(tmp).write_bytes(b"the new, complete object")
        assert fs.cat(url) == b"the new, complete object"
        assert fs.find(folder) == [f"{folder}/x.bin", f"{folder}/y.bin"]
    finally:
        fs.rm(folder, recursive=True)


def _cannot(self, *args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize("code", [errno.EACCES, errno.EINVAL])
def test_a_folder_that_cannot_be_flushed_does_not_fail_a_replace_done(tmp_path, monkeypatch,
                                                                      code):
    """With force, the folder is flushed after the rename: in a folder of mode -wx (opened for
    reading: EACCES) the old output was replaced and the write still failed ("Permission
    denied", exit 1), the user told nothing was written."""
    dst = tmp_path / "out.bin"
    dst.write_bytes(b"old")
    flush = atomic._fsync

    def no_folder(path, flags=os.O_RDONLY):
        if flags & os.O_DIRECTORY:
            raise OSError(code, os.strerror(code), str(path))
        flush(path, flags)

    monkeypatch.setattr(atomic, "_fsync", no_folder)
    with atomic_output(dst, force=True) as tmp:
        Path(tmp).write_bytes(b"new")
    assert dst.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_other_errors_without_a_file_name_pass_unchanged(tmp_path):
    with pytest.raises(OSError) as raised:
        with atomic_output(tmp_path / "out.parquet"):
            raise OSError(errno.EIO, "an input's read")
    assert raised.value.filename is None and raised.value.errno == errno.EIO
    assert list(tmp_path.iterdir()) == []


def test_what_is_not_a_regular_file_is_never_replaced(tmp_path):
    # --force onto /dev/null (as root) replaced the device with a file; a FIFO likewise
    fifo = tmp_path / "fifo.parquet"
    os.mkfifo(fifo)
    (tmp_path / "link.parquet").symlink_to(fifo)
    for dst in (fifo, tmp_path / "link.parquet"):
        for force in (False, True):
            with pytest.raises(ValueError, match="is not a regular file"):
                with atomic_output(dst, force=force) as tmp:
                    Path(tmp).write_bytes(b"x")
    assert fifo.is_fifo() and (tmp_path / "link.parquet").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.parquet", "link.parquet"]


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/null"),
                    reason="a device node is made by root only")
def test_a_device_is_never_replaced(tmp_path):
    os.mknod(tmp_path / "null.parquet", 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    with pytest.raises(ValueError, match="is not a regular file"):
        with atomic_output(tmp_path / "null.parquet", force=True):
            pass
    assert (tmp_path / "null.parquet").is_char_device()


def test_an_output_inside_a_file_says_the_file_is_not_a_folder(tmp_path):
    (tmp_path / "a").write_bytes(b"x")
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        with atomic_output(tmp_path / "a" / "b.parquet"):
            pass
    with pytest.raises(FileNotFoundError, match="does not exist"):
        with atomic_output(tmp_path / "no" / "b.parquet"):
            pass


def test_outputs_are_read_by_no_one_the_inputs_keep_out(tmp_path):
    """A private input gives a private output, and force does not loosen a replaced file's
    permissions (before: always 0o666 less the umask, as cp and gzip do not; session 62's
    hostile-environment round)."""
    old = os.umask(0o022)
    try:
        src = tmp_path / "in.bin"
        src.write_bytes(b"secret")
        cases = ((0o600, 0o600), (0o640, 0o640), (0o644, 0o644), (0o604, 0o604), (0o666, 0o644))
        for mode, want in cases:
            os.chmod(src, mode)
            dst = tmp_path / f"out{mode:o}.bin"
            with atomic_output(dst, inputs=[src]) as tmp:
                Path(tmp).write_bytes(b"x")
            assert stat.S_IMODE(os.stat(dst).st_mode) == want, oct(mode)
        os.chmod(src, 0o644)
        kept = tmp_path / "kept.bin"
        kept.write_bytes(b"old")
        os.chmod(kept, 0o600)
        with atomic_output(kept, force=True, inputs=[src]) as tmp:
            Path(tmp).write_bytes(b"new")
        assert kept.read_bytes() == b"new" and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    finally:
        os.umask(old)


def test_a_folder_that_cannot_be_listed_still_takes_outputs(tmp_path, monkeypatch):
    """A -wx folder cannot be listed for stale temporaries (before: PermissionError, the
    output refused although it could be created): nothing is cleaned, the write goes on."""
    def refused(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(atomic.os, "scandir", refused)
    assert remove_stale_temporaries(tmp_path) == []
    with atomic_output(tmp_path / "out.bin") as tmp:
        Path(tmp).write_bytes(b"x")
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_loop_of_links_as_output_is_an_os_error(tmp_path):
    loop = tmp_path / "loop.bin"
    loop.symlink_to(loop)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        check_output(loop, force=True, inputs=[tmp_path / "in.bin"])


def test_an_output_named_with_a_trailing_slash_is_a_folder(tmp_path):
    """'new.parquet/' (no such folder) was created as a file; cp refuses it too."""
    with pytest.raises(NotADirectoryError, match="a name ending in / is a folder"):
        check_output(f"{tmp_path}/new.parquet/")
    assert not (tmp_path / "new.parquet").exists()
