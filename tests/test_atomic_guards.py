"""Guard checks of formats/atomic.py that no other test could fail (a mutation round: each test
here fails with the guard dropped, forced or its exception swallowed)."""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
from pathlib import Path

import fsspec
import pytest

from fsstgpu.formats import atomic
from fsstgpu.formats.atomic import (
    TEMP_SUFFIX,
    atomic_output,
    check_output,
    owner_tag,
    refuse_lost_folder,
    remove_stale_temporaries,
)


def _stale(folder: Path, pid) -> Path:
    path = folder / f".out.bin.0badcafe.{pid}@{atomic._host()}{TEMP_SUFFIX}"
    path.write_bytes(b"partial")
    return path


def test_a_process_id_past_any_process_keeps_its_file(tmp_path):
    path = _stale(tmp_path, 10**30)  # os.kill: OverflowError, not a name fsstgpu gave
    assert remove_stale_temporaries(tmp_path) == [] and path.exists()


def test_a_process_of_another_user_counts_as_alive(tmp_path, monkeypatch):
    path = _stale(tmp_path, 4242)

    def not_permitted(pid, sig):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "kill", not_permitted)
    assert remove_stale_temporaries(tmp_path) == [] and path.exists()


def test_a_stale_file_another_sweep_removed_first_is_no_error(tmp_path, monkeypatch):
    path = _stale(tmp_path, 2**22 + 1)  # past pid_max: no such process
    monkeypatch.setattr(atomic, "_pid_alive", lambda pid: False)
    unlink = os.unlink

    def raced(p, *args, **kwargs):
        unlink(p, *args, **kwargs)
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(p))

    monkeypatch.setattr(os, "unlink", raced)
    assert remove_stale_temporaries(tmp_path) == [] and not path.exists()


def test_a_relative_output_in_a_deleted_folder_is_named(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(FileNotFoundError, match="out.bin: the current folder has been deleted"):
        check_output("out.bin")
    with pytest.raises(FileNotFoundError, match="relative input path"):
        refuse_lost_folder("in.bin", "input")
    refuse_lost_folder(str(tmp_path / "x.bin"))  # absolute: nothing to say


def test_a_hard_link_to_an_input_is_the_input(tmp_path):
    src = tmp_path / "in.bin"
    src.write_bytes(b"input")
    other = tmp_path / "other.bin"
    os.link(src, other)
    with pytest.raises(ValueError, match="the output is the input file"):
        check_output(other, force=True, inputs=[src])


def test_a_folder_as_output_is_a_directory_error(tmp_path):
    with pytest.raises(IsADirectoryError):
        check_output(tmp_path, force=True)


def test_an_existing_output_is_refused_before_any_work(tmp_path):
    dst = tmp_path / "out.bin"
    dst.write_bytes(b"old")
    with pytest.raises(FileExistsError, match="already exists"):
        check_output(dst)
    assert check_output(dst, force=True) == dst
    dangling = tmp_path / "link.bin"
    dangling.symlink_to(tmp_path / "nowhere")  # a name taken, though by nothing that exists
    with pytest.raises(FileExistsError, match="already exists"):
        check_output(dangling)


def test_other_errors_of_a_folder_flush_are_raised(tmp_path, monkeypatch):
    dst = tmp_path / "out.bin"
    dst.write_bytes(b"old")
    flush = atomic._fsync

    def broken(path, flags=os.O_RDONLY):
        if flags & os.O_DIRECTORY:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
        flush(path, flags)

    monkeypatch.setattr(atomic, "_fsync", broken)
    with pytest.raises(OSError) as raised:
        with atomic_output(dst, force=True) as tmp:
            Path(tmp).write_bytes(b"new")
    assert raised.value.errno == errno.EIO


def test_a_replaced_output_is_flushed_before_the_rename(tmp_path, monkeypatch):
    dst = tmp_path / "out.bin"
    dst.write_bytes(b"old")
    calls = []
    flush = atomic._fsync

    def spy(path, flags=os.O_RDONLY):
        calls.append((Path(path).name.endswith(TEMP_SUFFIX), bool(flags & os.O_DIRECTORY)))
        flush(path, flags)

    monkeypatch.setattr(atomic, "_fsync", spy)
    with atomic_output(dst, force=True) as tmp:
        Path(tmp).write_bytes(b"new")
    assert calls == [(True, False), (False, True)] and dst.read_bytes() == b"new"


def test_url_output_guards():
    fs = fsspec.filesystem("memory")
    base = f"memory://guards-{secrets.token_hex(4)}"
    fs.pipe(f"{base}/x.bin", b"old")
    fs.mkdir(f"{base}/d")
    fs.pipe(f"{base}/d/y.bin", b"y")
    with pytest.raises(FileExistsError, match="already exists"):
        check_output(f"{base}/x.bin")
    with pytest.raises(IsADirectoryError):
        check_output(f"{base}/d", force=True)
    with pytest.raises(PermissionError) as raised:
        with atomic_output(f"{base}/new.bin") as tmp:
            raise PermissionError(errno.EACCES, "Permission denied", tmp)
    assert raised.value.filename == f"{base}/new.bin"
    assert not fs.exists(f"{base}/new.bin")


def test_an_error_about_the_temporary_file_names_the_output(tmp_path):
    dst = tmp_path / "out.bin"
    with pytest.raises(PermissionError) as raised:
        with atomic_output(dst) as tmp:
            raise PermissionError(errno.EACCES, "Permission denied", tmp)
    assert raised.value.filename == str(dst) and list(tmp_path.iterdir()) == []


def test_a_temporary_name_taken_is_drawn_again(tmp_path, monkeypatch):
    taken = tmp_path / f".out.bin.00000000.{owner_tag()}{TEMP_SUFFIX}"
    taken.write_bytes(b"someone's")
    draws = iter(["00000000", "11111111"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(draws))
    with atomic_output(tmp_path / "out.bin") as tmp:
        Path(tmp).write_bytes(b"new")
    assert (tmp_path / "out.bin").read_bytes() == b"new" and taken.read_bytes() == b"someone's"


def test_other_errors_of_link_are_raised(tmp_path, monkeypatch):
    def broken(src, dst):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "link", broken)
    with pytest.raises(OSError) as raised:
        with atomic_output(tmp_path / "out.bin") as tmp:
            Path(tmp).write_bytes(b"new")
    assert raised.value.errno == errno.EIO and list(tmp_path.iterdir()) == []


def _no_links(monkeypatch):
    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)


def test_without_links_renameat2_puts_it_in_place_with_no_empty_moment(tmp_path, monkeypatch):
    _no_links(monkeypatch)
    dst = tmp_path / "out.bin"
    opened = []
    real_open = os.open

    def spy(path, *args, **kwargs):
        opened.append(Path(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    with atomic_output(dst) as tmp:
        Path(tmp).write_bytes(b"new")
    assert dst.read_bytes() == b"new" and dst not in opened


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "claimed"])
def test_without_links_a_name_taken_meanwhile_is_kept(tmp_path, monkeypatch, renameat2):
    """Without hard links the output is moved by renameat2(RENAME_NOREPLACE), or, without it
    too, by a name claimed with O_EXCL: either way a name taken meanwhile is kept."""
    _no_links(monkeypatch)
    if not renameat2:
        monkeypatch.setattr(atomic, "_rename_noreplace", lambda tmp, dst: False)
    dst = tmp_path / "out.bin"
    with pytest.raises(FileExistsError, match="already exists"):
        with atomic_output(dst) as tmp:
            Path(tmp).write_bytes(b"new")
            dst.write_bytes(b"theirs")
    assert dst.read_bytes() == b"theirs" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


class _Libc:
    def __init__(self, *args, **kwargs):
        pass

    @staticmethod
    def renameat2(*args):
        return -1


def test_renameat2_unsupported_or_missing_is_false(tmp_path, monkeypatch):
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_bytes(b"a")
    monkeypatch.setattr(ctypes, "CDLL", _Libc)
    monkeypatch.setattr(ctypes, "get_errno", lambda: errno.EINVAL)
    assert atomic._rename_noreplace(src, dst) is False

    def missing(*args, **kwargs):
        raise OSError("no libc")

    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert atomic._rename_noreplace(src, dst) is False
    assert not dst.exists()


def test_a_child_forked_in_the_block_leaves_the_parents_file(tmp_path):
    """A child (forked by a callback, say) that leaves the block by an exception must not
    remove the file its parent is still writing."""
    dst = tmp_path / "out.bin"
    parent = os.getpid()
    try:
        with atomic_output(dst) as tmp:
            Path(tmp).write_bytes(b"new")
            pid = os.fork()
            if pid == 0:
                raise KeyboardInterrupt  # the child's way out: through the block
            os.waitpid(pid, 0)
            assert Path(tmp).exists()
    except KeyboardInterrupt:
        if os.getpid() != parent:
            os._exit(0)
        raise
    assert dst.read_bytes() == b"new"
