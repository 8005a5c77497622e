"""An input file held to the version a read began with.

A read opens its input more than once (a handle per reading thread, a second handle for an IPC
file's footer, a stream read lazily), each time by its path. If another process replaces the
file meanwhile (``mv``, ``os.replace``, ``fsstgpu compress --force``), later handles read the new
file and earlier ones the old: a table of rows from both, without an error (pyarrow's own read
keeps one handle). If it rewrites the file in place (``cp`` over it), the bytes change under the
read. :class:`FileIdentity` is the first handle's file (device, inode, size, modification time,
status-change time): every later handle must be that file unchanged, each unit is checked
before it is passed on, and a read that ends checks the file is still as it began; otherwise
:class:`~fsstgpu.errors.CorruptDataError` says the file changed while it was being read
(``tar``'s "file changed as we read it"). The status-change time catches a rewrite that set the
modification time back (``cp -p``, ``touch -r``); it also moves on changes of metadata alone,
so a new one counts only where the mode, link count and owner stayed (``chmod``, ``ln``,
``chown`` pass; an xattr set or an atime restored during a read is taken for a rewrite: an
error, never a wrong answer). Inputs that are not local files (URLs) are not checked.

>>> import os, tempfile
>>> from fsstgpu.formats.file_identity import FileIdentity
>>> path = os.path.join(tempfile.mkdtemp(), "f.bin")
>>> _ = open(path, "wb").write(b"one")
>>> with open(path, "rb") as first:
...     held = FileIdentity.of(first.fileno())
...     _ = open(path + ".new", "wb").write(b"two")
...     os.replace(path + ".new", path)
...     with open(path, "rb") as second:
...         held.check(second.fileno(), path)
Traceback (most recent call last):
...
fsstgpu.errors.CorruptDataError: ...f.bin: the file was replaced or changed while it was being read
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from fsstgpu.errors import CorruptDataError

__all__ = ["FileIdentity", "descriptor"]


@dataclass(frozen=True)
class FileIdentity:
    """Which file a descriptor reads, and its size and modification time then."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int  # (a rewrite can set the mtime back, cp -p, touch -r; not the ctime)
    fd: int
    #: mode, link count, owner: a change of these alone (chmod, ln, chown) moves the ctime
    #: too, and leaves the bytes as they were
    meta: tuple = ()

    @classmethod
    def of(cls, fd: int | None) -> FileIdentity | None:
        """The identity of the open file ``fd`` (None for None: not a local file)."""
        if fd is None:
            return None
        st = os.fstat(fd)
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, fd,
                   (st.st_mode, st.st_nlink, st.st_uid, st.st_gid))

    def _same(self, fd: int) -> bool:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != (
                self.device, self.inode, self.size, self.mtime_ns):
            return False
        # a new ctime with the same mode, links and owner: the bytes were rewritten and the
        # mtime set back (cp -p, touch -r); with a new mode, link count or owner, a change of
        # metadata alone (chmod, ln, chown) that moved the ctime
        return (st.st_ctime_ns == self.ctime_ns
                or (st.st_mode, st.st_nlink, st.st_uid, st.st_gid) != self.meta)

    def check(self, fd: int | None, path) -> None:
        """Raise CorruptDataError unless ``fd`` reads this file, unchanged."""
        if fd is not None and not self._same(fd):
            raise CorruptDataError(f"{os.fsdecode(path)}: the file was replaced or changed "
                                   "while it was being read")

    def check_unchanged(self, path) -> None:
        """Raise CorruptDataError if the file (through the first handle, which must still be
        open) changed since the read began."""
        self.check(self.fd, path)


def descriptor(f) -> int | None:
    """The OS file descriptor of a pyarrow or Python file, or None (a URL's file)."""
    try:
        return f.fileno()
    except (AttributeError, OSError, NotImplementedError, ValueError):
        return None
