"""Datasets: a directory, glob or list of Parquet / Arrow IPC files (local or fsspec URLs).

:func:`compress_dataset` and :func:`decompress_dataset` write one output file per input file,
under one output folder, each with :func:`~fsstgpu.formats.compress_file`'s promises (atomic,
never over an input, over an existing output only with ``force``): a failure leaves the files
done so far complete and names the file it stopped at. :func:`read_dataset` reads all the files
as one table (or one set of device columns). Files are found by
:func:`fsstgpu.formats.locations.dataset_files`; each keeps its own symbol tables.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats.datasets import compress_dataset, read_dataset
>>> d = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(d, "in", "year=2026"))
>>> pq.write_table(pa.table({"s": ["a", "b"]}), os.path.join(d, "in", "one.parquet"))
>>> pq.write_table(pa.table({"s": ["c"]}), os.path.join(d, "in", "year=2026", "two.parquet"))
>>> [r["output"][len(d) + 1:] for r in compress_dataset(os.path.join(d, "in"),
...                                                      os.path.join(d, "out"))]
['out/one.parquet', 'out/year=2026/two.parquet']
>>> t = read_dataset(os.path.join(d, "out"), device="cpu")  # year: the hive folder's
>>> t.column("s").to_pylist(), t.column("year").to_pylist()
(['a', 'b', 'c'], [None, None, 2026])
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from pathlib import Path, PurePath, PurePosixPath

import pyarrow as pa

from fsstgpu.errors import FsstGpuError
from fsstgpu.formats.atomic import refuse_lost_folder
from fsstgpu.formats.device_reader import nested_column_to_device
from fsstgpu.formats.file_reads import device_columns, read_table
from fsstgpu.formats.files import compress_file, decompress_file
from fsstgpu.formats.locations import (
    DATASET_SUFFIXES,
    IGNORED_PREFIXES,
    Url,
    dataset_files,
    fixed_prefix,
    is_url,
    local_text,
    refuse_repeats,
)
from fsstgpu.formats.nested import holds_fsst
from fsstgpu.formats.partitions import hive_columns, with_partition_columns
from fsstgpu.formats.rowgroups import check_progress
from fsstgpu.formats.sniff import output_format
from fsstgpu.gpu.concat import concat_device_arrays
from fsstgpu.gpu.strings import DeviceStringArray
from fsstgpu.limits import flag

__all__ = ["DatasetOutputError", "check_dataset_output", "compress_dataset", "dataset_outputs",
           "decompress_dataset", "make_parent", "output_name", "read_dataset",
           "read_dataset_device", "refuse_output_format"]

#: outputs in one folder of an object store from which the clobber check lists the folder once
#: rather than asking about each output (a request each)
LIST_FROM = 4


class DatasetOutputError(FsstGpuError, NotADirectoryError):
    """The output of a dataset names a file (an existing one, or a name such as
    ``out.parquet``), where it must be a folder: a caller's mistake (the command line's exit 2).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.datasets import DatasetOutputError, dataset_outputs
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["a"]}), os.path.join(d, "x.parquet"))
    >>> try:
    ...     dataset_outputs(d, os.path.join(d, "out.parquet"))
    ... except DatasetOutputError:
    ...     print("refused;", sorted(os.listdir(d)))
    refused; ['x.parquet']
    """


def dataset_outputs(src, dst, *, force: bool = False) -> list[tuple[Path | Url, Path | Url]]:
    """Each file of the dataset ``src`` with the output it gets under the folder ``dst`` (its
    relative name; ``dst`` local or a URL): the plan every dataset writer follows, checked
    before anything is written (without ``force``, no output may exist already).

    Raises
    ------
    DatasetOutputError
        (a NotADirectoryError) When ``dst`` is an existing local file, or does not exist and is
        named as a file (``out.parquet``: a suffix of
        :data:`~fsstgpu.formats.locations.DATASET_SUFFIXES`), which would silently become a
        folder; an existing folder of that name is taken.
    ValueError
        When an output is one of the dataset's inputs.
    FileExistsError
        Without ``force``, naming the outputs that exist already.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.datasets import dataset_outputs
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["a"]}), os.path.join(d, "x.parquet"))
    >>> [str(out) for _, out in dataset_outputs(d, "memory://bucket/out/")]
    ['memory://bucket/out/x.parquet']
    """
    force = flag(force, "force")
    dst = local_text(dst)  # a file:// folder is a local one (as a Path, the URL named ./file:/)
    check_dataset_output(dst, src)
    if is_url(dst):
        plan = [(path, Url(f"{str(dst).rstrip('/')}/{rel}")) for path, rel in _renamed(src)]
    else:
        plan = [(path, Path(dst) / rel) for path, rel in _renamed(src)]
    _refuse_outputs_over_inputs(plan)
    if not force:  # every clash named before anything is written (not after the files before it)
        _refuse_existing(plan)
    return plan


def _refuse_outputs_over_inputs(plan) -> None:
    """ValueError when an output of ``plan`` is one of the dataset's inputs, also another
    file's (OUT a folder above IN: ``ds/ds/z.parquet``'s output ``./ds/z.parquet`` is the input
    ``ds/z.parquet``, which ``force`` replaced before it was read); links resolved, as
    :func:`~fsstgpu.formats.atomic.check_output` resolves them for a file's own input; URLs
    as objects of their store (``memory://b/ds`` over ``memory://b/ds/ds``: the same loss)."""
    inputs = {_identity(path): path for path, _ in plan}
    for path, out in plan:
        if _identity(out) in inputs:
            raise ValueError(f"{out}: the output is the input file "
                             f"{inputs[_identity(out)]} of the same dataset (as the "
                             f"output of {path}); name an output folder that holds none of "
                             "its files")


def _identity(location) -> tuple | str:
    """What names the file ``location`` for the check of outputs over inputs: a URL's store
    and path there, a local path's real path."""
    return location.key() if isinstance(location, Url) else os.path.realpath(location)


def _refuse_existing(plan) -> None:
    """FileExistsError naming the outputs of ``plan`` that exist already (found after the
    files before them were written, they failed a rerun on those)."""
    there = _urls_there([out for _, out in plan if isinstance(out, Url)])
    taken = [str(out) for _, out in plan
             if (str(out) in there if isinstance(out, Url) else os.path.lexists(out))]
    if taken:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise FileExistsError(f"{taken[0]}{more}: already exists (use --force / force=True "
                              "to overwrite)")


def check_dataset_output(dst, src=None) -> None:
    """Refuse ``dst`` as a dataset's output folder when it names a file
    (:class:`DatasetOutputError`, see :func:`dataset_outputs`), or lies inside the folder of
    the dataset ``src`` (a directory, or a ``**`` pattern's fixed part; local, or a URL on the
    output URL's store), where its files would be read as the dataset's the next time (a
    folder named ``_*`` or ``.*`` there is skipped, and so taken); before any file is listed.
    ``file://`` and ``local://`` URLs are checked as the local paths they name.

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.datasets import check_dataset_output
    >>> check_dataset_output(os.path.join(tempfile.mkdtemp(), "out"))  # a folder's name: taken
    >>> check_dataset_output(os.path.join(tempfile.mkdtemp(), "out.parquet"))
    Traceback (most recent call last):
    ...
    fsstgpu.formats.datasets.DatasetOutputError: ...out.parquet: the output of a dataset is a \
folder (one output file per input file), and this name is a file's; name a folder, or create \
the folder first to use this name
    >>> d = tempfile.mkdtemp()
    >>> check_dataset_output(os.path.join(d, "_compressed"), d)  # skipped as not data: taken
    >>> check_dataset_output(os.path.join(d, "compressed"), d)
    Traceback (most recent call last):
    ...
    fsstgpu.formats.datasets.DatasetOutputError: ...compressed: the output folder is inside the \
input dataset's folder..., where its files would be read as the dataset's; name a folder \
outside it, or one named _* or .* inside it (skipped as not data)
    """
    src, dst = local_text(src), local_text(dst)  # file:// and local:// name local paths
    if is_url(dst):
        if _file_name(Url(dst)) and not Url(dst).is_dir():
            raise _named_as_a_file(dst)
        _refuse_url_inside(Url(dst), src)
        return
    refuse_lost_folder(dst)  # (realpath below asks os.getcwd, whose error names no file)
    out_dir = Path(dst)
    if out_dir.exists() and not out_dir.is_dir():
        raise DatasetOutputError(f"{dst}: the output of a dataset is a folder, and this is a file")
    if not out_dir.exists() and _file_name(out_dir):
        raise _named_as_a_file(dst)
    root = _dataset_folder(src)
    if root is not None:
        refuse_lost_folder(root, "input")  # (a relative pattern's folder: realpath as above)
        _refuse_inside(dst, Path(os.path.realpath(out_dir)), Path(os.path.realpath(root)), root)


def _refuse_url_inside(dst: Url, src) -> None:
    """The check of :func:`check_dataset_output` for an output URL: refused inside the folder
    of a URL dataset ``src`` (a folder, or a ``**`` pattern's fixed part) on the same store,
    whose next listing (``fs.find``, any depth) would read the outputs as inputs."""
    if src is None or isinstance(src, (list, tuple)) or not is_url(src):
        return  # (a local dataset: on another store than the output)
    out_fs, out = dst.filesystem()
    src_fs, path = Url(src).filesystem()
    if type(src_fs) is not type(out_fs):
        return
    if "**" in path:
        root, shown = fixed_prefix(path, "/"), fixed_prefix(src, "/")
    elif src_fs.isdir(path):
        root, shown = path, src
    else:
        return
    _refuse_inside(dst, _store_path(out), _store_path(root), shown)


def _store_path(path: str) -> PurePosixPath:
    """A path within an fsspec store, ``..`` and ``.`` resolved as text (no links there)."""
    return PurePosixPath(posixpath.normpath(path))


def _refuse_inside(dst, out: PurePath, root: PurePath, shown) -> None:
    """DatasetOutputError where the output folder ``out`` (``dst`` as given) is ``root``, the
    folder of the input dataset (``shown`` in the message), or below it, and not in a folder
    whose name is skipped as not data (``_*``, ``.*``: there it is taken)."""
    try:
        parts = out.relative_to(root).parts
    except ValueError:  # not below root
        return
    if not any(part.startswith(IGNORED_PREFIXES) for part in parts):
        raise DatasetOutputError(
            f"{dst}: the output folder is inside the input dataset's folder {shown}, where "
            "its files would be read as the dataset's; name a folder outside it, or one "
            "named _* or .* inside it (skipped as not data)")


def _dataset_folder(src) -> str | None:
    """The local folder whose files, at any depth, are the dataset ``src``: a directory, or the
    fixed part of a ``**`` pattern; None for anything else (a list, a URL, a shallow pattern)."""
    if src is None or isinstance(src, (list, tuple)) or is_url(src):
        return None
    text = os.fspath(src)
    if "**" in text:
        return fixed_prefix(text, os.sep) or os.curdir
    return text if os.path.isdir(text) else None


#: Codec names writers put before the suffix (Spark: ``part-0-c000.snappy.parquet``); an output
#: drops them, as its pages are stored otherwise (fsst + zstd, or the input's codecs back).
CODEC_INFIXES = ("snappy", "gz", "gzip", "zstd", "zst", "lz4", "lz4_raw", "brotli", "br",
                 "uncompressed")
_CODEC_INFIX = re.compile(r"\.(" + "|".join(CODEC_INFIXES) + r")(\.[^./]+)$", re.IGNORECASE)


def output_name(rel: str) -> str:
    """The output name of a dataset file named ``rel``: ``rel`` less a codec name before its
    suffix.

    Examples
    --------
    >>> from fsstgpu.formats.datasets import output_name
    >>> output_name("y=1/part-00000-c000.snappy.parquet"), output_name("a.zstd.arrow")
    ('y=1/part-00000-c000.parquet', 'a.arrow')
    >>> output_name("snappy.parquet"), output_name("b.parquet")
    ('snappy.parquet', 'b.parquet')
    """
    folder, _, name = rel.rpartition("/")
    stem = _CODEC_INFIX.sub(r"\2", name)
    if stem.startswith("."):  # 'snappy.parquet' has no name to keep
        stem = name
    return f"{folder}/{stem}" if folder else stem


def _renamed(src) -> list[tuple[Path | Url, str]]:
    """The dataset's files with their output names (:func:`output_name`); two inputs that
    would share one are refused."""
    files = [(path, output_name(rel)) for path, rel in dataset_files(src)]
    refuse_repeats([rel for _, rel in files],
                   "rename them (a codec name before the suffix is dropped from output names)")
    return files


def _file_name(dst) -> bool:
    """Tell whether ``dst``'s name ends as a data file's does (``out.parquet``)."""
    return str(dst).rstrip("/").lower().endswith(DATASET_SUFFIXES)


def _named_as_a_file(dst) -> DatasetOutputError:
    return DatasetOutputError(
        f"{dst}: the output of a dataset is a folder (one output file per input file), and this "
        "name is a file's; name a folder, or create the folder first to use this name")


def make_parent(out) -> list[Path]:
    """Create the local folder an output goes in (a URL's store needs none); return the
    folders this created, the deepest last."""
    if is_url(out):
        return []
    parent = Path(out).parent
    missing = [d for d in (parent, *parent.parents) if not d.exists()][::-1]
    parent.mkdir(parents=True, exist_ok=True)
    return missing


def _each_file(src, dst, work, progress, force: bool) -> list[dict]:
    check_progress(progress)
    plan = dataset_outputs(src, dst, force=force)
    results = []
    created: list[Path] = []  # folders made here: removed again if a failure leaves them empty
    try:
        for k, (path, out) in enumerate(plan):
            created += make_parent(out)
            info = work(path, out)
            results.append({"input": str(path), "output": str(out), **info})
            if progress is not None:
                progress(files_done=k + 1, files_total=len(plan), last=results[-1])
    except BaseException:
        for folder in reversed(created):  # (the outputs already written stay, whole)
            with contextlib.suppress(OSError):
                folder.rmdir()  # only an empty one
        raise
    return results


def file_options(out, options: dict) -> dict:
    """A dataset compression's options for one output: ``zstd_level`` and ``parquet_codec`` set
    Parquet pages, so an Arrow IPC file of the dataset is written without them (for one file
    :func:`~fsstgpu.formats.compress_file` refuses them: a dataset may mix both formats).

    Examples
    --------
    >>> from fsstgpu.formats.datasets import file_options
    >>> file_options("out/a.arrow", {"zstd_level": 9, "parquet_codec": "zstd", "level": "fast"})
    {'level': 'fast'}
    >>> file_options("out/a.parquet", {"zstd_level": 9})
    {'zstd_level': 9}
    """
    if output_format(out) == "parquet":
        return options
    return {k: v for k, v in options.items() if k not in ("zstd_level", "parquet_codec")}


def refuse_output_format(options: dict) -> None:
    """ValueError for ``format=`` among a dataset compression's options: each output keeps its
    input's name and format (``format="arrow"`` wrote Arrow IPC files named ``*.parquet``).

    Examples
    --------
    >>> from fsstgpu.formats.datasets import refuse_output_format
    >>> refuse_output_format({"parquet_codec": "zstd"})
    """
    if options.get("format") is not None:
        raise ValueError("format= names one output file's format; a dataset's outputs keep "
                         "their inputs' names and formats")


def _urls_there(urls) -> set[str]:
    """Those of ``urls`` (outputs) whose object or folder exists: one listing of each folder
    holding :data:`LIST_FROM` of them or more, not a request (``fs.exists``) per URL, one round
    trip each to an object store (a folder with fewer is asked about each: a listing of a
    folder that already holds many objects takes a round trip per thousand of them).
    An entry the listing names in another spelling, or a folder the filesystem cannot list, is
    asked about alone (fsspec's ``exists``, which reads any error as "not there")."""
    folders: dict = {}
    for url in urls:
        fs, path = url.filesystem()
        folders.setdefault((fs, posixpath.dirname(path)), []).append((str(url), path))
    there = set()
    for (fs, folder), outputs in folders.items():
        if len(outputs) < LIST_FROM:  # (a listing of a big folder would cost more)
            there.update(url for url, path in outputs if fs.exists(path))
            continue
        try:
            listed = {entry.rstrip("/") for entry in fs.ls(folder, detail=False)}
        except FileNotFoundError:
            continue  # (no folder, no object under it)
        except Exception:  # (exists() reads any error as "not there": asked one by one)
            listed = None
        finally:  # the check just before each upload must ask the store, not this listing
            fs.invalidate_cache(folder)
        names = {posixpath.basename(entry) for entry in listed or ()}
        for url, path in outputs:
            if listed is not None and path.rstrip("/") in listed:
                there.add(url)
            elif (listed is None or posixpath.basename(path.rstrip("/")) in names) and (
                    fs.exists(path)):
                there.add(url)
    return there


def compress_dataset(src, dst, columns=None, *, force=False, progress=None, **options
                     ) -> list[dict]:
    """Compress every file of a dataset into the folder ``dst`` (same relative names).

    Parameters
    ----------
    src : str, os.PathLike or list
        A directory, a glob pattern or a list of files; local or fsspec URLs
        (:func:`~fsstgpu.formats.locations.dataset_files`).
    dst : str or os.PathLike
        Output folder (created), local or a URL; each output has its input's relative name and
        format.
    columns, force, **options
        As for :func:`~fsstgpu.formats.compress_file` (``table=``: one symbol table for
        every file; default, each file trains its own).
    progress : callable, optional
        ``progress(files_done=, files_total=, last=)`` after each file.

    Returns
    -------
    list of dict
        :func:`~fsstgpu.formats.compress_file`'s result per file, with ``input`` and
        ``output``.

    Examples
    --------
    See the module docstring.
    """
    refuse_output_format(options)
    return _each_file(src, dst, lambda path, out: compress_file(
        path, out, columns, force=force, **file_options(out, options)), progress, force)


def decompress_dataset(src, dst, *, device="auto", force=False, progress=None) -> list[dict]:
    """Decompress every file of a compressed dataset into the folder ``dst``.

    As :func:`compress_dataset`, with :func:`~fsstgpu.formats.decompress_file` per file.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.datasets import compress_dataset, decompress_dataset
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["a", None]}), os.path.join(d, "x.parquet"))
    >>> _ = compress_dataset(os.path.join(d, "*.parquet"), os.path.join(d, "c"))
    >>> _ = decompress_dataset(os.path.join(d, "c"), os.path.join(d, "p"), device="cpu")
    >>> pq.read_table(os.path.join(d, "p", "x.parquet")).column("s").to_pylist()
    ['a', None]
    """
    return _each_file(src, dst, lambda path, out: decompress_file(
        path, out, device=device, force=force), progress, force)


def _check_types(parts) -> None:
    """Refuse files whose columns of one name have different types (naming the first two); a
    column of type null (all nulls, as a writer that saw no value types it) takes any type, as
    in ``pyarrow.unify_schemas``."""
    seen: dict[str, tuple] = {}
    for path, table in parts:
        for field in table.schema:
            if pa.types.is_null(field.type):
                continue
            first = seen.setdefault(field.name, (path, field.type))
            if field.type != first[1]:
                raise ValueError(f"{path}: its schema differs from {first[0]}'s: column "
                                 f"{field.name!r} is {field.type} there, {first[1]} in "
                                 f"{first[0]}:\n{table.schema}")


def read_dataset(src, device="auto", *, partitioning="hive"):
    """Read every file of a dataset as one table, decompressing fsst columns.

    Parameters
    ----------
    src : str, os.PathLike or list
        As for :func:`compress_dataset`.
    device : {"auto", "cpu", "gpu"}
        Where the fsst columns decode, as for :func:`~fsstgpu.formats.read_table`; the result is
        a host ``pyarrow.Table`` either way (:func:`read_dataset_device`: in GPU memory).
    partitioning : {"hive", None}
        ``"hive"`` (the default, as ``pyarrow.parquet.read_table`` of a folder): the
        ``key=value`` folders of each file's relative name become columns after the files' own
        (``int32`` or ``string``, :mod:`fsstgpu.formats.partitions`); None: the files' columns
        only.

    Returns
    -------
    pyarrow.Table
        The files' tables concatenated: their columns in order of first appearance, a column a
        file lacks null in its rows.

    Raises
    ------
    ValueError
        When two files have a column of one name and two types (the message names both; a
        column of type null in a file is taken as any type), or when ``partitioning`` is
        neither.

    Examples
    --------
    See the module docstring.
    """
    files, _, values = partitioned_files(src, partitioning)
    tables = [read_table(path, device=device) for path, _ in files]
    own = {name for table in tables for name in table.column_names}
    parts = [(path, with_partition_columns(table, part))
             for (path, _), table, part in zip(files, tables, values, strict=True)]
    _check_types(parts)
    # a column some files lack is null in their rows (pyarrow's schema unification)
    joined = pa.concat_tables([table for _, table in parts], promote_options="default")
    # the partition columns after every file's own (concat orders by first appearance: a
    # later file's own column came after an earlier file's keys), as read_dataset_device has
    names = joined.column_names
    return joined.select([n for n in names if n in own] + [n for n in names if n not in own])


def read_dataset_device(src, *, partitioning="hive") -> dict:
    """Read every file of a dataset with its fsst columns decoded into GPU memory.

    Parameters
    ----------
    src, partitioning
        As for :func:`read_dataset` (partition columns are host columns).

    Returns
    -------
    dict
        Column name -> one :class:`fsstgpu.DeviceStringArray` over all the files (each fsst
        column; its chunks the row groups) or a ``pyarrow.ChunkedArray`` (every other column),
        in order of first appearance. A host column some files lack is null in their rows, as
        in :func:`read_dataset`; an fsst column must be in every file.

    Raises
    ------
    DeviceError
        Without a usable GPU.
    ValueError
        When a file lacks an fsst column of another file, a column is fsst in one file and
        plain in another, a host column has two types, or ``partitioning`` is neither value.

    Examples
    --------
    >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_dataset, read_dataset_device
    >>> d = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(d, "events", "year=2026"))
    >>> pq.write_table(pa.table({"s": ["a", None]}),
    ...                os.path.join(d, "events", "year=2026", "x.parquet"))
    >>> _ = compress_dataset(os.path.join(d, "events"), os.path.join(d, "fsst"))
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     cols = read_dataset_device(os.path.join(d, "fsst"))
    ...     assert cols["s"].to_arrow().to_pylist() == ["a", None]   # on the GPU
    ...     assert cols["year"].to_pylist() == [2026, 2026]         # the hive key, on the host
    """
    files, keys, values = partitioned_files(src, partitioning)
    # nested fsst columns stay compressed per file and are placed once, over every file
    parts = [(path, device_columns(path, nested_on_device=False)) for path, _ in files]
    rows = [len(next(iter(cols.values()))) if cols else 0 for _, cols in parts]
    out = {}
    for name in dict.fromkeys(n for _, cols in parts for n in cols):  # first appearance
        out[name] = _device_dataset_column(name, parts, rows)
    for key, (type_, _) in keys.items():
        if key not in out:  # as on the CPU: a file column of that name wins
            out[key] = pa.chunked_array(
                [pa.repeat(pa.scalar(part[key][1], type_), n)
                 for part, n in zip(values, rows, strict=True)], type=type_)
    return out


def _device_dataset_column(name, parts, rows):
    """Column ``name`` of every file of ``parts`` (``(path, columns)``) joined: the device
    columns on the device; host columns as one ChunkedArray, nulls where a file lacks it."""
    present = [(path, cols[name]) for path, cols in parts if name in cols]
    on_device = [(path, c) for path, c in present if isinstance(c, DeviceStringArray)]
    on_host = [(path, c) for path, c in present if not isinstance(c, DeviceStringArray)]
    if on_device and on_host:
        raise ValueError(f"column {name!r} is fsst-compressed in {on_device[0][0]} and plain in "
                         f"{on_host[0][0]}: read_dataset (on the host) reads such files")
    if on_device:
        if len(on_device) < len(parts):
            lacking = next(path for path, cols in parts if name not in cols)
            raise ValueError(f"{lacking}: no column {name!r}, which other files hold as fsst "
                             "strings decoded on the GPU; read_dataset (on the host) reads such "
                             "files, with nulls where a file lacks a column")
        return concat_device_arrays([c for _, c in on_device])
    _check_types([(path, pa.table({name: c})) for path, c in on_host])
    if all(holds_fsst(c.type) for _, c in on_host) and len(on_host) == len(parts):
        return nested_column_to_device(
            present[0][0] if len(present) == 1 else "dataset", name,
            pa.chunked_array([chunk for _, c in on_host for chunk in c.chunks], on_host[0][1].type))
    types = [c.type for _, c in on_host if not pa.types.is_null(c.type)]
    type_ = types[0] if types else pa.null()
    chunks = []
    for (_, cols), n in zip(parts, rows, strict=True):
        column = cols.get(name)
        chunks += [pa.nulls(n, type_)] if column is None else [
            chunk.cast(type_) for chunk in column.chunks]  # a null-typed file's chunks
    return pa.chunked_array(chunks, type=type_)


def partitioned_files(src, partitioning):
    """The files of a dataset (:func:`~fsstgpu.formats.locations.dataset_files`), its hive keys
    (``{name: (type, values)}``) and each file's key values (``{name: (type, value)}``); with
    ``partitioning=None`` no keys.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.datasets import partitioned_files
    >>> d = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(d, "year=2026"))
    >>> pq.write_table(pa.table({"s": ["a"]}), os.path.join(d, "year=2026", "a.parquet"))
    >>> files, keys, values = partitioned_files(d, "hive")
    >>> [rel for _, rel in files], values
    (['year=2026/a.parquet'], [{'year': (DataType(int32), 2026)}])
    """
    if partitioning not in ("hive", None):
        raise ValueError(f"partitioning must be 'hive' or None, not {partitioning!r}")
    files = dataset_files(src)
    keys = hive_columns([rel for _, rel in files]) if partitioning == "hive" else {}
    values = [{key: (type_, vals[k]) for key, (type_, vals) in keys.items()}
              for k in range(len(files))]
    return files, keys, values
