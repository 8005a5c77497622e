"""Write an output file atomically: to a temporary file beside it, then put it in place.

:func:`atomic_output` yields the path of a temporary file in the output's folder; when the block
ends normally the file takes the output's name in one step, and on any exception (Ctrl-C too) it
is removed. Readers therefore see either no output or the complete one, never a partial file.

* **No clobbering.** Without ``force``, the last step is ``link(temp, output)``, which fails when
  the name exists, so of several processes writing one new output exactly one succeeds (on a file
  system without hard links, an ``O_EXCL`` create claims the name first). With ``force`` it is
  ``rename``, which replaces the old file in one step.
* **Inputs are never overwritten**, also when the output names one of them through a link;
  nor is anything that is not a regular file (a device such as ``/dev/null``, a FIFO). An
  output that is a link is replaced as a name: ``force`` over a symbolic link puts the new file
  in the link's place (its target keeps its content), over a hard link it gives the name a file
  of its own (``cp -f`` would write through both; a rename cannot).
* **Litter from killed processes is cleaned up.** A temporary file is named
  ``.<output name>.<random>.<pid>@<host>.fsstgpu-tmp``; a process killed before it could remove
  it (SIGKILL, power loss) leaves it behind, and the next :func:`atomic_output` in that folder
  removes every such file whose process on this host has gone, with a
  :class:`StaleTemporaryFileWarning` naming it (a URL output's local copy, in the temporary
  folder: the next URL output).
* **Errors name the output.** An error about the temporary file, or a full disk (or quota, or
  file size limit) that pyarrow's writers report naming no file, is raised naming the output.
* **No wider reading than the data had.** The output is created as any new file (mode 0o666
  less the umask), except that the group, or everyone else, may not read it when they may not
  read an input or the output it replaces (a private input gives a private output, as ``cp``
  and ``gzip`` keep it; ``--force`` does not loosen a replaced file's permissions).
* **A URL output** (fsspec) is written to a local temporary file, uploaded to a temporary key
  beside the output (named as above, so hidden from dataset listings) and moved in place with
  the store's own move: a rename, or an object store's copy (whole) and delete. An upload that
  fails part way (fsspec's generic ``put_file`` writes at the key itself) leaves the old object
  as it was, and the temporary key is removed. That is as atomic as the store's move: a store
  whose copy itself writes part by part may show a partial object while it runs; one with
  neither move nor copy is uploaded at the key, as it can (a partial object if that fails).
  Only local temporary files are swept: a process killed during an upload leaves its key.
* **A replaced output survives a crash.** With ``force`` over an existing file, the new file's
  data reaches the disk (``fsync``) before it takes the name, and the folder after: a power
  loss leaves the old file or the new one, never an empty one under the name.

>>> import os, tempfile
>>> from fsstgpu.formats.atomic import atomic_output
>>> dst = os.path.join(tempfile.mkdtemp(), "x.bin")
>>> with atomic_output(dst) as tmp:
...     _ = open(tmp, "wb").write(b"done")
>>> open(dst, "rb").read(), os.listdir(os.path.dirname(dst))
(b'done', ['x.bin'])
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import warnings
from pathlib import Path

from fsstgpu.formats.locations import Url, is_url, local_text
from fsstgpu.limits import flag

__all__ = [
    "TEMP_SUFFIX",
    "StaleTemporaryFileWarning",
    "atomic_output",
    "check_output",
    "WRITE_ERRORS",
    "owner_tag",
    "owned_by_ended",
    "refuse_lost_folder",
    "refuse_missing_folder",
    "remove_stale_temporaries",
]

#: Every temporary file fsstgpu writes ends with this.
TEMP_SUFFIX = ".fsstgpu-tmp"
_TEMP_NAME = re.compile(r"^\..*\.(?P<pid>[0-9]+)@(?P<host>[^@/]*)" + re.escape(TEMP_SUFFIX)
                        + "$")
# Errors of link() that mean "this file system has no hard links", not "the name is taken".
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS}
_NAME_BYTES = 120  # of the output's name kept in the temporary name (file names: 255 bytes)


class StaleTemporaryFileWarning(UserWarning):
    """A temporary file left by a process that died was removed."""


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", os.uname().nodename) or "host"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OverflowError:  # no process has such an id: not a name fsstgpu gave (left alone)
        return True
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def owner_tag() -> str:
    """``<pid>@<host>`` of this process: what temporary names carry, so that the next run can
    tell a dead process's litter (:func:`owned_by_ended`) from a live one's."""
    return f"{os.getpid()}@{_host()}"


def owned_by_ended(directory, pattern: re.Pattern) -> list[os.DirEntry]:
    """The entries of ``directory`` whose names ``pattern`` finds with an :func:`owner_tag`'s
    parts (groups ``pid`` and ``host``) of a process of this host that has ended (one of
    another host, or a reused id, counts as alive: the safe mistake); none where the folder
    may be written but not listed (mode -wx).

    Examples
    --------
    >>> import os, re, tempfile
    >>> from fsstgpu.formats.atomic import owned_by_ended, owner_tag
    >>> d = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(d, f"x-{owner_tag()}"))  # this process: alive
    >>> owned_by_ended(d, re.compile(r"^x-(?P<pid>[0-9]+)@(?P<host>.*)$"))
    []
    """
    try:
        listing = os.scandir(directory)
    except PermissionError:
        return []
    with listing as entries:
        return [entry for entry in entries if (match := pattern.search(entry.name))
                and match["host"] == _host() and not _pid_alive(int(match["pid"]))]


def remove_stale_temporaries(directory) -> list[Path]:
    """Remove the temporary files in ``directory`` whose writing process has died.

    Only files named as :func:`atomic_output` names them, by a process of this host that no
    longer runs, are removed (a process id reused by another process keeps its file: the safe
    mistake). Returns the removed paths.

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.atomic import remove_stale_temporaries
    >>> d = tempfile.mkdtemp()
    >>> remove_stale_temporaries(d)
    []
    """
    removed = []
    for entry in owned_by_ended(directory, _TEMP_NAME):
        with contextlib.suppress(FileNotFoundError):  # another process got there first
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def check_output(dst, *, force: bool = False, inputs=()) -> Path:
    """Check that ``dst`` may be written (see :func:`atomic_output`); return it as a Path.

    Raises
    ------
    ValueError
        When ``dst`` is one of ``inputs`` (also through links), or exists and is not a regular
        file (a device such as ``/dev/null``, a FIFO, a socket; also through links), which
        even ``force`` does not replace.
    IsADirectoryError
        When ``dst`` is a directory.
    FileExistsError
        When ``dst`` exists and ``force`` is false.
    FileNotFoundError, NotADirectoryError
        When the folder of ``dst`` does not exist (also the current one, for a relative
        ``dst``: :func:`refuse_lost_folder`), or is a file.

    Examples
    --------
    >>> from fsstgpu.formats.atomic import check_output
    >>> check_output("x.bin", inputs=["./x.bin"])
    Traceback (most recent call last):
    ...
    ValueError: x.bin: the output is the input file; choose another output path
    """
    force = flag(force, "force")  # (every writer's force= comes here first)
    # file:// and local:// name local paths: compared as paths (a URL string compared with a
    # path never matched, and the input was overwritten)
    dst = local_text(dst)
    inputs = [local_text(src) for src in inputs]
    if is_url(dst):
        return _check_url_output(Url(dst), force=force, inputs=inputs)
    refuse_missing_folder(dst)
    refuse_lost_folder(dst)
    dst = Path(dst)
    for src in inputs:
        if is_url(src):  # a remote input cannot be a local output
            continue
        src = Path(src)
        if _resolved(src) == _resolved(dst) or (
            dst.exists() and src.exists() and os.path.samefile(src, dst)
        ):
            raise ValueError(f"{dst}: the output is the input file; choose another output path")
    if dst.is_dir():
        raise IsADirectoryError(f"{dst}: is a directory")
    if dst.exists() and not dst.is_file():  # (links followed: /dev/stdout is one)
        # a device, FIFO or socket: replacing it would put a file in its place (/dev/null
        # with force, as root), and writing through it would not be atomic
        raise ValueError(f"{dst}: is not a regular file (a device, FIFO or socket); fsstgpu "
                         "writes outputs as files, put in place whole: name a file (the "
                         "command line's - writes to standard output)")
    if os.path.lexists(dst) and not force:
        raise FileExistsError(f"{dst}: already exists (use --force / force=True to overwrite)")
    parent = dst.absolute().parent
    if parent.exists() and not parent.is_dir():
        raise NotADirectoryError(f"{dst}: {parent} is not a directory")
    if not parent.is_dir():
        raise FileNotFoundError(f"{dst}: directory {parent} does not exist")
    return dst


def refuse_missing_folder(dst) -> None:
    """NotADirectoryError where the local output name ``dst`` ends in a separator (a folder:
    pathlib drops the slash, which would make it a file to create) and no such folder exists.

    >>> from fsstgpu.formats.atomic import refuse_missing_folder
    >>> refuse_missing_folder("no/such/folder/")
    Traceback (most recent call last):
    ...
    NotADirectoryError: no/such/folder/: no such directory (a name ending in / is a folder)
    """
    if isinstance(dst, str) and dst.endswith(("/", os.sep)) and not os.path.isdir(dst):
        raise NotADirectoryError(f"{dst}: no such directory (a name ending in / is a folder)")


def refuse_lost_folder(dst, role: str = "output") -> None:
    """FileNotFoundError naming the local ``dst`` (an ``output``, or another ``role``) where it
    is relative and the current folder has been deleted: resolving it (``os.getcwd``) would
    fail with an error that names no file.

    Examples
    --------
    >>> from fsstgpu.formats.atomic import refuse_lost_folder
    >>> refuse_lost_folder("out.parquet")  # the current folder is there: nothing to say
    """
    if os.path.isabs(dst):
        return
    try:
        os.getcwd()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{os.fspath(dst)}: the current folder has been deleted, so this relative {role} "
            "path names no folder; give an absolute path, or change to a folder that exists"
        ) from None


def _resolved(path: Path) -> Path:
    """``path.resolve()``, a loop of symbolic links an OSError (pathlib: RuntimeError)."""
    try:
        return path.resolve()
    except RuntimeError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None


def _creation_mode(dst: Path, force: bool, inputs) -> int:
    """The mode the output is created with (the umask applies too): 0o666, less group / other
    access where an input (a local file), or the output ``force`` replaces, keeps them from
    reading it."""
    mode = 0o666
    sources = [Path(local_text(p)) for p in inputs if not is_url(p)]
    if force:
        sources.append(dst)
    for src in sources:
        try:
            st = os.stat(src)
        except OSError:
            continue
        if not st.st_mode & 0o040:  # the group may not read it
            mode &= ~0o060
        if not st.st_mode & 0o004:  # nor may others
            mode &= ~0o006
    return mode


def _fsync(path, flags: int = os.O_RDONLY) -> None:
    """Flush ``path`` (a file; a folder's entries with ``os.O_DIRECTORY``) to the disk."""
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: errors of a folder's fsync that say it cannot be done there (a folder that may be written
#: but not read, mode -wx; a file system without it), not that data was lost
_NO_FOLDER_SYNC = {errno.EACCES, errno.EPERM, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}


def _fsync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries (a rename just done) to the disk, where that can be done.

    The new output has its name by now, the old one is gone: a folder that cannot be opened
    for reading (mode -wx, where an output can still be written) failed with "Permission
    denied" a write that had replaced the old file. Such errors pass; others are raised."""
    try:
        _fsync(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        if exc.errno not in _NO_FOLDER_SYNC:
            raise


def _check_url_output(dst: Url, *, force: bool, inputs) -> Url:
    # compared as objects of a store: as strings, memory:///b/x was not memory://b/x, and the
    # input was replaced
    if any(is_url(src) and Url(src).key() == dst.key() for src in inputs):
        raise ValueError(f"{dst}: the output is the input file; choose another output path")
    fs, path = dst.filesystem()
    if fs.isdir(path):
        raise IsADirectoryError(f"{dst}: is a directory")
    if fs.exists(path) and not force:
        raise FileExistsError(f"{dst}: already exists (use --force / force=True to overwrite)")
    return dst


def _sweep(folder, stacklevel: int) -> None:
    """:func:`remove_stale_temporaries` of ``folder``, a StaleTemporaryFileWarning for each
    (``stacklevel``: this function's frame is 1)."""
    for path in remove_stale_temporaries(folder):
        warnings.warn(f"removed {path}, a temporary file left by a process that has ended",
                      StaleTemporaryFileWarning, stacklevel=stacklevel)


@contextlib.contextmanager
def _url_output(dst: Url, *, force: bool):
    """A local temporary file, uploaded when the block succeeds to a temporary key beside ``dst``
    and moved to ``dst`` with the store's own move (see the module docstring); both removed in
    any case. An object that appears at ``dst`` meanwhile is kept unless ``force`` (checked just
    before the move: a window that a local ``link`` does not have)."""
    import tempfile

    fs, path = dst.filesystem()
    folder = tempfile.gettempdir()
    # (a process killed during an upload left its whole local copy there: no local output's
    # sweep looks in the temporary folder)
    _sweep(folder, 6)
    # private: the shared temporary folder is not where the output's readers are decided
    with _new_temporary(Path(folder), ".fsstgpu-upload", 0o600) as made:
        tmp = str(made)
    try:
        try:
            yield tmp
        except OSError as exc:  # writing the local copy: named as the local branch names it
            if exc.errno in WRITE_ERRORS and (exc.filename is None or exc.filename == tmp):
                # (pyarrow's "Error writing bytes to file" named neither the output nor the
                # temporary folder, whose disk it is: the store may well have room)
                raise OSError(exc.errno, f"{os.strerror(exc.errno)} in the temporary folder "
                              f"{folder} (TMPDIR), where the output is written before its "
                              "upload", str(dst)) from None
            if str(exc.filename or "").endswith(TEMP_SUFFIX):
                raise _naming(exc, dst) from None
            raise
        parent = path.rsplit("/", 1)[0]
        if parent and parent != path:
            fs.makedirs(parent, exist_ok=True)
        _upload(fs, tmp, path, dst, force)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _upload(fs, local: str, path: str, dst: Url, force: bool) -> None:
    """Put the file ``local`` at ``path`` of ``fs``: uploaded to a temporary key beside it first,
    so that an upload that fails part way leaves the object at ``path`` as it was (fsspec's
    generic ``put_file`` writes at the key itself, and a partial object replaced the old one)."""
    folder, sep, name = path.rpartition("/")
    name = name.encode()[:_NAME_BYTES].decode(errors="ignore")
    key = f"{folder}{sep}.{name}.{secrets.token_hex(4)}.{owner_tag()}{TEMP_SUFFIX}"
    moved = False
    try:
        fs.put_file(local, key)
        if fs.exists(path) and not force:
            raise FileExistsError(f"{dst}: already exists (use --force / force=True to "
                                  "overwrite)")
        try:
            fs.mv(key, path)  # a rename, or an object store's copy (whole) and delete
            moved = True
        except NotImplementedError:  # a store that can neither: put at the key, as it can
            fs.put_file(local, path)
    except OSError as exc:  # naming the temporary key: the user named dst, not it
        if key in f"{exc.filename} {exc}":
            text = (exc.strerror or str(exc)).replace(key, path)
            raise (type(exc)(exc.errno, text, str(dst)) if exc.errno is not None
                   else type(exc)(f"{dst}: {text}")) from None
        raise
    finally:
        if not moved:  # any failure, Ctrl-C too, must not leave the temporary key behind
            with contextlib.suppress(Exception):
                fs.rm_file(key)


@contextlib.contextmanager
def _new_temporary(folder: Path, prefix: str, mode: int = 0o666):
    """Create an empty file ``<prefix>.<random>.<pid>@<host>.fsstgpu-tmp`` in ``folder`` (with
    ``mode``) and yield its path; it is removed if anything interrupts, before the block or in it.

    A stop signal's handler raises in the main thread at whatever point it has reached, whichever
    thread took the signal (blocking it on the main thread alone did not hold it off: a codec
    thread took it, and 1 CI run in several left the file). So the name is drawn before the
    file exists and every step after is inside the ``try`` that removes it. The name holds this
    process's id: it is never another process's file.
    """
    tmp = None
    creator = os.getpid()
    try:
        while True:
            tmp = folder / f"{prefix}.{secrets.token_hex(4)}.{owner_tag()}{TEMP_SUFFIX}"
            try:  # ``mode`` less the umask (0o666: the mode any new file gets)
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
                break
            except FileExistsError:  # a random name taken: draw again
                continue
        yield tmp
    except BaseException:
        # (a child forked inside the block, e.g. by a progress callback, leaves the parent's
        # file to the parent, which is still writing it)
        if tmp is not None and os.getpid() == creator:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


#: errors only a write can give (a full disk or quota, a file past the size limit)
WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _naming(exc: OSError, dst: Path) -> OSError:
    """``exc`` (about the temporary file) as the same error about ``dst``: messages name the
    file the user asked for, never a temporary name they have not heard of."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(dst))


def _put_in_place(tmp: Path, dst: Path, force: bool) -> None:
    """Give ``tmp`` the name ``dst``: replacing it with ``force``, else only if it is free."""
    if force:
        os.replace(tmp, dst)
        return
    taken = FileExistsError(f"{dst}: already exists (use --force / force=True to overwrite)")
    try:
        os.link(tmp, dst)  # atomic: fails if the name exists, whoever created it meanwhile
    except FileExistsError:
        raise taken from None
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        if _rename_noreplace(tmp, dst):  # atomic too: no moment with an empty dst
            return
        # no hard links and no renameat2 here: claim the name, then replace our own claim
        # (an empty dst until the replace: a reader, or a kill, may meet it)
        try:
            os.close(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            raise taken from None
        os.replace(tmp, dst)
    else:
        os.unlink(tmp)


def _rename_noreplace(tmp: Path, dst: Path) -> bool:
    """``renameat2(tmp, dst, RENAME_NOREPLACE)`` (Linux): True when it gave ``tmp`` the name,
    FileExistsError when the name is taken, False where the call or flag is not supported."""
    import ctypes  # (here: a rare path, and ctypes costs the command line's start)
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        call = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, noreplace = -100, 1
    if call(at_fdcwd, os.fsencode(tmp), at_fdcwd, os.fsencode(dst), noreplace) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.EEXIST:
        raise FileExistsError(f"{dst}: already exists (use --force / force=True to overwrite)")
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(dst))


@contextlib.contextmanager
def atomic_output(dst, *, force: bool = False, inputs=()):
    """Yield a temporary path beside ``dst``; it becomes ``dst`` when the block succeeds.

    The temporary file is removed if the block raises anything (KeyboardInterrupt too), so an
    interrupted run leaves neither a partial ``dst`` nor litter; temporary files of dead
    processes in the same folder are removed first (see the module docstring).

    Parameters
    ----------
    dst : str or os.PathLike
        The output file.
    force : bool
        Replace an existing ``dst``. Without it an existing ``dst`` is left untouched, also one
        that another process creates while this one works.
    inputs : sequence of paths
        Files that ``dst`` must not be.

    Raises
    ------
    ValueError, IsADirectoryError, FileExistsError, FileNotFoundError
        As for :func:`check_output`, before the block runs; FileExistsError also at the end
        when another process took the name meanwhile.

    Examples
    --------
    See the module docstring.
    """
    dst = check_output(dst, force=force, inputs=inputs)
    if isinstance(dst, Url):
        with _url_output(dst, force=force) as tmp:
            yield tmp
        return
    _sweep(dst.absolute().parent, 4)  # (the caller's with: 2 frames above this one)
    name = os.fsdecode(os.fsencode(dst.name)[:_NAME_BYTES])
    folder = dst.absolute().parent
    try:
        with _new_temporary(folder, f".{name}", _creation_mode(dst, force, inputs)) as tmp:
            yield str(tmp)
            replacing = force and os.path.lexists(dst)
            if replacing:  # the old file goes: the new one must be on the disk first
                _fsync(tmp)
            _put_in_place(tmp, dst, force)
            if replacing:
                _fsync_folder(folder)
    except OSError as exc:  # about the temporary file: the user named dst, not it
        if str(exc.filename or "").endswith(TEMP_SUFFIX):
            raise _naming(exc, dst) from None
        if exc.filename is None and exc.errno in WRITE_ERRORS:
            # pyarrow's writers name no file ("Error writing bytes to file"): a full disk is
            # the output's, which the user must be told of by name
            raise OSError(exc.errno, os.strerror(exc.errno), str(dst)) from None
        raise
