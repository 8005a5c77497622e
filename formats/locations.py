"""Where input files are: local paths, fsspec URLs, and datasets (directories, globs, lists).

A string with a scheme (``s3://bucket/a.parquet``, ``gs://...``, ``memory://...``) is a
:class:`Url`, opened through fsspec (``pip install fsspec``, plus the scheme's package such as
``s3fs`` or ``gcsfs``) as a pyarrow file; ``file://`` and ``local://`` URLs (fsspec's local
file system) and everything else are local paths (:func:`local_text` gives the path such a URL
names, percent-decoded as RFC 8089 and pyarrow have it, so that the checks of inputs against
outputs see one path however it was written).
An output URL is written to a local temporary file and uploaded in one ``put`` when complete
(``atomic.py``).

:func:`dataset_files` expands a dataset: a directory (its Parquet / Arrow IPC files, recursively,
in sorted order), a glob pattern, or a list of paths or URLs, each with the relative name its
output takes. As ``pyarrow.dataset`` does, files and folders below the directory (or below the
pattern's last folder without wildcards) whose names start with ``_`` or ``.`` are not data and
are skipped: ``_temporary/``, ``_SUCCESS``, ``_metadata``, ``.hidden``.

>>> from fsstgpu.formats.locations import Url, is_url
>>> is_url("s3://bucket/a.parquet"), is_url("/data/a.parquet"), is_url("file:///data/a.parquet")
(True, False, False)
>>> Url("memory://x/a.parquet").name
'a.parquet'
"""

from __future__ import annotations

import glob as globbing
import os
import re
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pyarrow as pa

__all__ = ["DATASET_SUFFIXES", "IGNORED_PREFIXES", "Url", "dataset_files", "file_size",
           "fixed_prefix", "is_url", "local_or_url", "local_text", "skipped_files"]

#: the file names a directory dataset is made of (others, such as ``_SUCCESS``, are skipped)
DATASET_SUFFIXES = (".parquet", ".pq", ".arrow", ".feather", ".ipc", ".arrows")

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
#: the schemes of fsspec's local file system: their URLs are local paths
_LOCAL_SCHEMES = ("file://", "local://")
_GLOB = re.compile(r"[*?\[]")


def is_url(location) -> bool:
    """Tell whether ``location`` is a URL fsspec opens (a scheme other than ``file``)."""
    return (isinstance(location, str) and bool(_SCHEME.match(location))
            and not location.lower().startswith(_LOCAL_SCHEMES))


def local_text(location):
    """The local path a ``file://`` or ``local://`` URL names; anything else unchanged.

    As RFC 8089 has it, and as pyarrow's ``FileSystem.from_uri`` and ``urllib``'s
    ``url2pathname`` read it: the path percent-decoded (``%20`` a space, ``%23`` a ``#``, bytes
    as file names are decoded), a ``?`` query and a ``#`` fragment no part of it, the host empty
    or ``localhost``.

    Raises
    ------
    ValueError
        Where the URL names another host, or no path.

    Examples
    --------
    >>> from fsstgpu.formats.locations import local_text
    >>> local_text("local:///tmp/a.pq"), local_text("FILE:///tmp/a%20b.pq"), local_text("s3://b/a")
    ('/tmp/a.pq', '/tmp/a b.pq', 's3://b/a')
    >>> local_text("file://localhost/tmp/%2341.pq#part")
    '/tmp/#41.pq'
    """
    if isinstance(location, str):
        for scheme in _LOCAL_SCHEMES:
            if location[: len(scheme)].lower() == scheme:
                return _url_path(location, len(scheme))
    return location


def _url_path(url: str, start: int) -> str:
    """The decoded path of file URL ``url`` whose authority starts at ``start``."""
    # (split by hand: urllib.parse drops tabs and newlines, which a file name may hold)
    rest = url[start:].split("#", 1)[0].split("?", 1)[0]
    host, slash, path = rest.partition("/")
    if host.lower() not in ("", "localhost"):
        raise ValueError(f"{url}: a file URL names a file of this machine: its host is empty "
                         f"(file:///path) or localhost, not {host!r}")
    if not slash:
        raise ValueError(f"{url}: names no file (a file URL's path is absolute: file:///path)")
    return os.fsdecode(unquote_to_bytes("/" + path))


class Url(str):
    """An input file behind an fsspec URL; a ``str`` (its URL) for messages and comparisons."""

    @property
    def name(self) -> str:
        """The last part of the path, like ``Path.name``."""
        return self.rstrip("/").rsplit("/", 1)[-1]

    def filesystem(self):
        """``(fsspec filesystem, path within it)``; ImportError naming the package to install."""
        try:
            import fsspec
        except ImportError:
            raise ImportError(f"{self}: reading URLs needs fsspec (pip install fsspec, and the "
                              f"package of its scheme, such as s3fs or gcsfs)") from None
        return fsspec.core.url_to_fs(str(self))

    def key(self) -> tuple:
        """``(filesystem class, path within it)``: the object this URL names, however it is
        spelt (``memory://b/x`` and ``memory:///b/x`` are one object), to tell an output that
        is an input."""
        fs, path = self.filesystem()
        return type(fs), path

    def open(self) -> pa.NativeFile:
        """The file, opened for reading as a pyarrow random-access file."""
        fs, path = self.filesystem()
        return pa.PythonFile(fs.open(path, "rb"), mode="r")

    def size(self) -> int:
        fs, path = self.filesystem()
        return int(fs.size(path))

    def is_file(self) -> bool:
        fs, path = self.filesystem()
        return bool(fs.isfile(path))

    def is_dir(self) -> bool:
        fs, path = self.filesystem()
        return bool(fs.isdir(path))


def local_or_url(location) -> Path | Url:
    """``location`` as a :class:`Url` (a URL with a scheme) or a local ``Path``.

    Examples
    --------
    >>> from fsstgpu.formats.locations import local_or_url
    >>> type(local_or_url("memory://a.parquet")).__name__, local_or_url("local:///tmp/a.pq")
    ('Url', PosixPath('/tmp/a.pq'))
    """
    if isinstance(location, Url):
        return location
    if is_url(location):
        return Url(location)
    return Path(local_text(os.fspath(location)))


def file_size(location) -> int:
    """The size in bytes of a local file or of the object behind a URL.

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.locations import file_size
    >>> p = os.path.join(tempfile.mkdtemp(), "x")
    >>> _ = open(p, "wb").write(b"abc")
    >>> file_size(p)
    3
    """
    loc = local_or_url(location)
    return loc.size() if isinstance(loc, Url) else loc.stat().st_size


def dataset_files(source) -> list[tuple[Path | Url, str]]:
    """The files of a dataset, each with its relative output name.

    Parameters
    ----------
    source : str, os.PathLike, or a list of them
        A directory (local or URL: its files with a :data:`DATASET_SUFFIXES` suffix, found
        recursively, relative names keep the subfolders), a glob pattern (``data/*.parquet``,
        ``ds/*/*.parquet``, ``ds/**/*.parquet`` (``**``: any depth of folders, none too),
        ``s3://b/part-*.parquet``: relative names from the pattern's last folder without
        wildcards, so hive folders ``ds/year=2026/`` are kept), or a list of
        files (their base names). Below a directory or pattern, names starting with ``_`` or
        ``.`` are skipped (see the module docstring); listed files are taken as named.

    Raises
    ------
    FileNotFoundError
        When the directory or pattern names no file, or a listed file is missing.
    ValueError
        When two files would get one output name.

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.locations import dataset_files
    >>> d = tempfile.mkdtemp()
    >>> for name in ("a.parquet", "sub/b.parquet", "_SUCCESS", "_temporary/0/c.parquet"):
    ...     os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
    ...     _ = open(os.path.join(d, name), "wb").write(b"x")
    >>> [rel for _, rel in dataset_files(d)]
    ['a.parquet', 'sub/b.parquet']
    """
    if isinstance(source, (list, tuple)):
        if not source:
            raise FileNotFoundError("the list of files is empty")
        files = [(local_or_url(s), local_or_url(s).name) for s in source]
        for f, _ in files:
            if not f.is_file():
                raise FileNotFoundError(f"{f}: a folder, not a file (a list names files; "
                                        "give the folder alone)" if f.is_dir()
                                        else f"{f}: no such file")
    else:
        files = [(f, rel) for f, rel in _found(source) if not _hidden(rel)]
        if not files:
            raise FileNotFoundError(f"{source}: no Parquet or Arrow IPC file there")
    refuse_repeats([rel for _, rel in files],
                   "give a directory (its subfolders keep them apart) or rename them")
    return files


def skipped_files(source) -> list[str]:
    """The relative names of the files that :func:`dataset_files` leaves out of the directory
    or pattern ``source`` as not data (``_``- and ``.``-named, see the module docstring), for
    a caller to say so; none for a list of files, which are taken as named.

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.locations import skipped_files
    >>> d = tempfile.mkdtemp()
    >>> for name in ("a.parquet", "_temporary/0/b.parquet", ".c.parquet"):
    ...     os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
    ...     _ = open(os.path.join(d, name), "wb").write(b"x")
    >>> skipped_files(d)
    ['.c.parquet', '_temporary/0/b.parquet']
    """
    if isinstance(source, (list, tuple)):
        return []
    return [rel for _, rel in _found(source) if _hidden(rel)]


def _found(source) -> list[tuple[Path | Url, str]]:
    """Every file a directory, pattern or file names (``_``- and ``.``-named ones too), with its
    relative name, sorted by path string as pyarrow's datasets and glob patterns sort them
    (``k=1.5/x`` before ``k=1/x``; Path objects compare folder by folder)."""
    loc = local_or_url(source)
    if isinstance(loc, Url):
        return _url_files(loc)
    if loc.is_dir():
        return sorted(((p, p.relative_to(loc).as_posix()) for p in _walked(loc)
                       if p.is_file() and p.suffix.lower() in DATASET_SUFFIXES),
                      key=lambda found: found[1])
    if _GLOB.search(str(loc)):
        base = fixed_prefix(str(loc), os.sep)
        return [(Path(p), Path(os.path.relpath(p, base or os.curdir)).as_posix())
                for p in sorted(globbing.glob(str(loc), recursive=True)) if Path(p).is_file()]
    if loc.is_file():
        return [(loc, loc.name)]
    raise FileNotFoundError(f"{loc}: no such file or directory")


def _walked(top: Path):
    """Every name below the folder ``top``, an unreadable folder an error: ``rglob`` skipped it
    without a word, and a dataset lost its files there. Links to folders are followed, as
    ``pyarrow.dataset`` follows them (not followed, their files were left out without a word),
    except a link back to a folder it is inside (a loop: its files are read already)."""

    def hidden(path) -> bool:  # (below top: _temporary, .git, ...; not the dataset's)
        return _hidden(Path(os.path.relpath(path, top)).as_posix())

    def refuse(exc: OSError):
        # a hidden folder removed since its parent was listed, as writers' staging folders
        # are, is as if it had not been there
        if isinstance(exc, FileNotFoundError) and exc.filename is not None and hidden(
                exc.filename):
            return
        raise exc

    # each folder's real path with its parents', to tell a loop of links
    chains = {str(top): (os.path.realpath(top),)}
    for folder, dirs, names in os.walk(top, onerror=refuse, followlinks=True):
        chain = chains.pop(folder)
        kept = []
        for name in dirs:
            path = os.path.join(folder, name)
            if os.path.islink(path) and hidden(path):
                continue  # (a link in .git, _env, .snapshot may reach anywhere: not data)
            real = os.path.realpath(path)
            if real not in chain:
                chains[path] = (*chain, real)
                kept.append(name)
        dirs[:] = kept
        for name in names:
            yield Path(folder, name)


def refuse_repeats(names, advice: str) -> None:
    """Raise ValueError naming the output names given more than once, with ``advice``.

    Examples
    --------
    >>> from fsstgpu.formats.locations import refuse_repeats
    >>> refuse_repeats(["a.parquet", "b.parquet"], "rename them")
    >>> refuse_repeats(["a.parquet", "a.parquet"], "rename them")
    Traceback (most recent call last):
    ...
    ValueError: several inputs would be written as a.parquet: rename them
    """
    counts: dict = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    twice = sorted(n for n, c in counts.items() if c > 1)
    if twice:
        raise ValueError(f"several inputs would be written as {', '.join(twice)}: {advice}")


#: Names below a dataset's root that are not data (pyarrow.dataset's ``ignore_prefixes``).
IGNORED_PREFIXES = ("_", ".")


def _hidden(rel: str) -> bool:
    """Tell whether a relative name has a file or folder named as not data (``_temporary/``,
    ``_SUCCESS``, ``.part``): pyarrow.dataset skips those."""
    return any(part.startswith(IGNORED_PREFIXES) for part in rel.split("/") if part)


def fixed_prefix(pattern: str, sep: str) -> str:
    """The folders of a glob pattern before its first part with a wildcard (``ds/*/*.parquet``:
    ``ds``; parts split at ``sep``); relative output names start below it.

    Examples
    --------
    >>> from fsstgpu.formats.locations import fixed_prefix
    >>> [fixed_prefix(p, "/") for p in ("ds/*/*.parquet", "b/x/p-*.pq", "*.pq", "/*/a.pq")]
    ['ds', 'b/x', '', '/']
    """
    parts = pattern.split(sep)
    fixed = []
    for part in parts[:-1]:
        if _GLOB.search(part):
            break
        fixed.append(part)
    prefix = sep.join(fixed)
    return prefix if prefix or not pattern.startswith(sep) else sep


def _url_files(url: Url) -> list[tuple[Url, str]]:
    fs, path = url.filesystem()
    protocol = url.split("://", 1)[0]
    if _GLOB.search(path):
        found = sorted(fs.glob(path))
        base = fixed_prefix(path, "/").rstrip("/") + "/"
        return [(Url(f"{protocol}://{p}"), p[len(base):] if p.startswith(base) else p)
                for p in found if fs.isfile(p)]
    if fs.isdir(path):
        root = path.rstrip("/") + "/"
        found = sorted(p for p in fs.find(path) if p.lower().endswith(DATASET_SUFFIXES))
        return [(Url(f"{protocol}://{p}"), p[len(root):] if p.startswith(root) else p)
                for p in found]
    if fs.isfile(path):
        return [(url, url.name)]
    raise FileNotFoundError(f"{url}: no such file or directory")
