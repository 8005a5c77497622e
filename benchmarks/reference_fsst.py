"""The reference FSST (cwida/fsst), built from its public source and driven through ctypes.

fsstgpu is measured against the reference implementation of the FSST paper. This module never
holds or copies the reference's code: :func:`build` compiles a checkout of it (``git clone
https://github.com/cwida/fsst``) together with ``reference_fsst_shim.cpp`` (this folder: Arrow
layout in, one call per column) into a shared library in a folder of the caller's choosing, the
way the reference's own CMakeLists.txt does (``-O3 -march=native``; its AVX-512 kernel at
``-O1``). :class:`ReferenceFSST` loads such a library and:

* :meth:`ReferenceFSST.compress`: ``fsst_create`` on the strings (the reference samples its
  16 KB itself) then ``fsst_compress`` of all of them (its AVX-512 kernel where the CPU has it),
  optionally with a new table every ``table_bytes`` of strings;
* :meth:`ReferenceFSST.decompress`: ``fsst_import`` of the exported table, then
  ``fsst_decompress`` per string into one buffer, giving Arrow-style offsets.

``ratio`` = string bytes / (code bytes + ``fsst_export`` table bytes), as fsstgpu's ratio counts
codes and tables (string lengths are stored by neither measure).

Run from a checkout: ``python -m benchmarks.reference_fsst SRC_DIR [FILE]`` builds the library
(printing its path) and, given a text file (one string per line), prints one round trip.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHIM = Path(__file__).resolve().with_name("reference_fsst_shim.cpp")
"""The wrapper compiled into the library beside the reference's sources."""

ABI_VERSION = 1
"""``fsstref_abi_version()`` of a library this module can drive."""

LIBRARY_NAME = "libfsstref.so"
_SOURCES = ("libfsst.cpp", "fsst_avx512.cpp")  # the reference's libfsst (CMake target fsst)
_HEADERS = ("fsst.h", "libfsst.hpp", "fsst_avx512.inc", "fsst_avx512_unroll1.inc",
            "fsst_avx512_unroll2.inc", "fsst_avx512_unroll3.inc", "fsst_avx512_unroll4.inc")
_FLAGS = ("-std=c++17", "-O3", "-march=native", "-DNDEBUG", "-fPIC")
_AVX512_FLAGS = ("-std=c++17", "-O1", "-march=native", "-DNDEBUG", "-fPIC")  # as its CMake


def is_reference_source(path) -> bool:
    """Whether ``path`` is a folder holding the reference's libfsst sources.

    Examples
    --------
    >>> import tempfile
    >>> from benchmarks.reference_fsst import is_reference_source
    >>> is_reference_source(tempfile.gettempdir())
    False
    """
    p = Path(path)
    return p.is_dir() and all((p / name).is_file() for name in (*_SOURCES, "fsst.h"))


def default_build_dir() -> Path:
    """Where :func:`load` builds when given a source folder: the user's cache
    (``$XDG_CACHE_HOME/fsstgpu/fsst-ref``, default ``~/.cache/fsstgpu/fsst-ref``).

    Examples
    --------
    >>> from benchmarks.reference_fsst import default_build_dir
    >>> default_build_dir().parts[-2:]
    ('fsstgpu', 'fsst-ref')
    """
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "fsstgpu" / "fsst-ref"


def build(src_dir, dest, *, compiler: str | None = None) -> Path:
    """Compile the reference's libfsst in ``src_dir`` with the shim into ``dest``.

    The library lands in ``dest/<hash>/libfsstref.so``, the hash covering the sources, the
    shim, the compiler and its flags, so a second call with the same inputs reuses it and a
    changed input builds anew. ``-march=native``: the library is for this machine only.

    Parameters
    ----------
    src_dir : str or os.PathLike
        A checkout of https://github.com/cwida/fsst (``libfsst.cpp``, ``fsst.h``, ...).
    dest : str or os.PathLike
        A folder for build outputs, outside the repository (created if missing).
    compiler : str, optional
        The C++ compiler (default ``$CXX``, else ``g++``).

    Returns
    -------
    pathlib.Path
        The shared library.

    Raises
    ------
    FileNotFoundError
        ``src_dir`` is not the reference's source, or no compiler is found.
    RuntimeError
        The compiler failed (its output is in the message).

    Examples
    --------
    >>> import tempfile
    >>> from benchmarks.reference_fsst import build
    >>> build(tempfile.gettempdir(), tempfile.gettempdir())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...: not the reference FSST's source (no libfsst.cpp, ...
    """
    src = Path(src_dir).resolve()
    if not is_reference_source(src):
        raise FileNotFoundError(
            f"{src}: not the reference FSST's source (no {', '.join((*_SOURCES, 'fsst.h'))}); "
            "get it with `git clone https://github.com/cwida/fsst`")
    cxx = compiler or os.environ.get("CXX") or "g++"
    if shutil.which(cxx) is None:
        raise FileNotFoundError(f"no C++ compiler {cxx!r} on PATH (set CXX)")
    digest = hashlib.sha256()
    for name in (*_SOURCES, *_HEADERS):
        f = src / name
        digest.update(name.encode() + b"\0" + (f.read_bytes() if f.is_file() else b""))
    digest.update(SHIM.read_bytes())
    digest.update(" ".join((cxx, *_FLAGS, *_AVX512_FLAGS)).encode())
    out_dir = Path(dest).resolve() / digest.hexdigest()[:16]
    lib = out_dir / LIBRARY_NAME
    if lib.is_file():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".build-") as tmp:
        objs = []
        for source, flags in ((src / "libfsst.cpp", _FLAGS), (src / "fsst_avx512.cpp",
                                                             _AVX512_FLAGS), (SHIM, _FLAGS)):
            obj = Path(tmp) / (source.stem + ".o")
            _run([cxx, *flags, "-I", str(src), "-c", str(source), "-o", str(obj)])
            objs.append(str(obj))
        built = Path(tmp) / LIBRARY_NAME
        _run([cxx, "-shared", "-fPIC", *objs, "-o", str(built)])
        os.replace(built, lib)  # atomic: a concurrent build sees a whole library or none
    return lib


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-4000:]}")


def load(lib_or_src, *, dest=None) -> ReferenceFSST:
    """A :class:`ReferenceFSST` from a library :func:`build` made, or from a source folder
    (built into ``dest``, default :func:`default_build_dir`, on first use).

    Examples
    --------
    >>> from benchmarks.reference_fsst import load
    >>> load("/nonexistent")
    Traceback (most recent call last):
    ...
    FileNotFoundError: /nonexistent: neither a library built by ...
    """
    p = Path(lib_or_src)
    if p.is_dir():
        return ReferenceFSST(build(p, dest or default_build_dir()))
    if p.is_file():
        return ReferenceFSST(p)
    raise FileNotFoundError(f"{lib_or_src}: neither a library built by "
                            "benchmarks.reference_fsst.build nor the reference FSST's source "
                            "folder")


@dataclass
class Compressed:
    """The reference's compressed form of a column: per table part, its exported table, code
    bytes, code offsets (``n + 1``, from 0) and how many strings it holds."""

    parts: list  # of (table bytes, codes uint8 array, code offsets int64 array)
    nbytes: int  # string bytes

    @property
    def stored_bytes(self) -> int:
        """Code bytes plus table bytes (string lengths not counted, as in fsstgpu's ratio)."""
        return sum(len(t) + int(o[-1]) for t, _, o in self.parts)


def strings_layout(strings) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)`` of ``strings``: uint8 bytes and int64 offsets from 0 (``n + 1``).

    ``strings`` is a pyarrow string / binary array (either offset width, sliced or not; nulls
    read as empty strings) or a list of ``bytes`` / ``str`` (UTF-8). Arrow input is not copied.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from benchmarks.reference_fsst import strings_layout
    >>> data, offsets = strings_layout(pa.array(["ab", None, "cde"]).slice(1))
    >>> bytes(data), offsets.tolist()
    (b'cde', [0, 0, 3])
    >>> data, offsets = strings_layout([b"x", "y\\u00e9"])
    >>> bytes(data), offsets.tolist()
    (b'xy\\xc3\\xa9', [0, 1, 4])
    """
    import pyarrow as pa

    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    if isinstance(strings, pa.Array):
        t = strings.type
        if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
            width = np.int64
        elif pa.types.is_string(t) or pa.types.is_binary(t):
            width = np.int32
        else:
            raise TypeError(f"a string or binary array is needed, not {t}")
        n = len(strings)
        raw = strings.buffers()[1]
        offsets = np.frombuffer(raw, dtype=width)[strings.offset: strings.offset + n + 1] \
            if raw is not None else np.zeros(n + 1, width)
        first, last = int(offsets[0]), int(offsets[-1])
        buf = strings.buffers()[2]
        data = np.frombuffer(buf, dtype=np.uint8)[first:last] if buf is not None and last > first \
            else np.zeros(0, np.uint8)
        return data, offsets.astype(np.int64) - first
    encoded = [s.encode() if isinstance(s, str) else bytes(s) for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


class ReferenceFSST:
    """The reference FSST in a shared library built by :func:`build`.

    Parameters
    ----------
    lib_path : str or os.PathLike
        The library.

    Examples
    --------
    >>> from benchmarks.reference_fsst import ReferenceFSST
    >>> ReferenceFSST("/nonexistent/libfsstref.so")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    OSError: ...
    """

    def __init__(self, lib_path):
        self.path = Path(lib_path)
        lib = ctypes.CDLL(str(self.path))  # CDLL calls drop the GIL
        try:
            version = lib.fsstref_abi_version()
        except AttributeError:
            raise OSError(f"{lib_path}: not a library built by benchmarks.reference_fsst.build "
                          "(no fsstref_* entry points)") from None
        if version != ABI_VERSION:
            raise OSError(f"{lib_path}: built from another version of the shim ({version}, "
                          f"want {ABI_VERSION}): build it again")
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        lib.fsstref_compress.restype = ctypes.c_int64
        lib.fsstref_compress.argtypes = [sz, vp, vp, sz, vp, vp, vp, vp]
        lib.fsstref_decompress.restype = ctypes.c_int64
        lib.fsstref_decompress.argtypes = [vp, sz, vp, vp, sz, vp, vp]
        self._lib = lib

    def compress(self, data: np.ndarray, offsets: np.ndarray, *,
                 table_bytes: int | None = None) -> Compressed:
        """Train and compress the strings ``data[offsets[i]:offsets[i + 1]]``.

        Parameters
        ----------
        data, offsets : numpy.ndarray
            uint8 string bytes and int64 offsets from 0 (:func:`strings_layout`).
        table_bytes : int, optional
            Start a new table (a new ``fsst_create``) every this many string bytes, at string
            boundaries (default: one table for all, as a column store would per column chunk).

        Returns
        -------
        Compressed
        """
        n = len(offsets) - 1
        cuts = [0]
        if table_bytes:
            want = np.arange(table_bytes, int(offsets[-1]), table_bytes)
            cuts += sorted(set(np.searchsorted(offsets, want).tolist()) - {0, n})
        cuts.append(n)
        parts = []
        for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
            part_offsets = np.ascontiguousarray(offsets[lo: hi + 1] - offsets[lo])
            base = data[int(offsets[lo]):]
            size = int(part_offsets[-1])
            cap = 2 * size + 8 * (hi - lo) + 1024  # every byte escaped, and slack
            out = np.empty(cap, np.uint8)
            out_offsets = np.empty(hi - lo + 1, np.int64)
            table = np.empty(2 * 2048 + 64, np.uint8)  # FSST_MAXHEADER is 2066 bytes
            table_len = ctypes.c_uint32(0)
            got = self._lib.fsstref_compress(hi - lo, _ptr(base) if len(base) else None,
                                             _ptr(part_offsets), cap, _ptr(out),
                                             _ptr(out_offsets), _ptr(table),
                                             ctypes.addressof(table_len))
            if got < 0:
                raise RuntimeError(f"fsstref_compress failed ({got})")
            parts.append((table[: table_len.value].tobytes(), out[:got], out_offsets))
        return Compressed(parts, int(offsets[-1]))

    def decompress(self, comp: Compressed) -> tuple[np.ndarray, np.ndarray]:
        """Decode ``comp`` into ``(data, offsets)`` (offsets from 0, ``n + 1``).

        The output size is the column's string byte count, which a store keeps beside the codes.
        """
        n = sum(len(o) - 1 for _, _, o in comp.parts)
        out = np.empty(comp.nbytes + 64, np.uint8)  # slack: the decoder's 8-byte stores
        offsets = np.empty(n + 1, np.int64)
        offsets[0] = 0
        pos, row = 0, 0
        for table, codes, code_offsets in comp.parts:
            k = len(code_offsets) - 1
            tbl = np.frombuffer(table, np.uint8)
            part = offsets[row: row + k + 1]  # writes into offsets (a view)
            got = self._lib.fsstref_decompress(_ptr(tbl), k, _ptr(codes) if len(codes) else None,
                                               _ptr(code_offsets), len(out) - pos,
                                               _ptr(out) + pos, _ptr(part))
            if got < 0:
                raise RuntimeError(f"fsstref_decompress failed ({got})")
            part += pos
            pos += got
            row += k
        return out[:pos], offsets


def roundtrip(ref: ReferenceFSST, strings, *, repeats: int = 3,
              table_bytes: int | None = None) -> dict:
    """Compress and decompress ``strings`` with the reference; best of ``repeats`` wall times.

    Returns ``strings``, ``bytes``, ``ratio``, ``compress_MB_s`` (training included),
    ``decompress_MB_s`` (decompressed bytes per second) and ``equal`` (the decoded bytes and
    offsets are the input's).

    Examples
    --------
    >>> from benchmarks.reference_fsst import load, roundtrip  # doctest: +SKIP
    >>> roundtrip(load(".data/fsst-ref"), [b"abc"] * 1000)["equal"]  # doctest: +SKIP
    True
    """
    data, offsets = strings_layout(strings)
    best_c = best_d = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        comp = ref.compress(data, offsets, table_bytes=table_bytes)
        t1 = time.perf_counter()
        back, back_offsets = ref.decompress(comp)
        t2 = time.perf_counter()
        best_c, best_d = min(best_c, t1 - t0), min(best_d, t2 - t1)
    equal = bool(np.array_equal(back, data) and np.array_equal(back_offsets, offsets))
    nbytes = int(offsets[-1])
    return {"strings": len(offsets) - 1, "bytes": nbytes,
            "ratio": nbytes / max(1, comp.stored_bytes),
            "compress_MB_s": nbytes / best_c / 1e6, "decompress_MB_s": nbytes / best_d / 1e6,
            "equal": equal}


def _main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or len(argv) > 2:
        sys.exit("usage: python -m benchmarks.reference_fsst SRC_DIR_OR_LIB [FILE]")
    ref = load(argv[0])
    print(ref.path)
    if len(argv) == 2:
        from fsstgpu.datasets import load_lines

        print(roundtrip(ref, load_lines(argv[1], binary=True)))


if __name__ == "__main__":
    _main()
