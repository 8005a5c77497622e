"""nvCOMP's batched zstd decompression and CRC32 on the GPU, called through its C API.

Parquet pages reach the GPU still compressed (issue #24: the host reads and uploads them, it does
not decode them); nvCOMP is the well-kept library that undoes standard zstd frames on the GPU,
many at once. Its C API is called through ctypes on a stream of ours with buffers of ours, so
nothing of nvCOMP outlives a call (its Python ``Codec`` holds streams and arrays of its own, whose
release order once crashed a process at exit: ``benchmarks/nvcomp_child.py``).

nvCOMP documents its decompressor as undefined on corrupt input: :func:`zstd_decompress`'s callers
check each page's CRC32 first (:func:`crc32`, also nvCOMP's) and its frame header on the host, so
a damaged page is an error before nvCOMP sees it. The library comes from the ``[cuda12]`` /
``[cuda13]`` extras (``nvidia-libnvcomp-cu12`` / ``-cu13``) or a system installation;
:func:`library` is None where neither loads, and callers then read pages on the host.

>>> from fsstgpu.gpu.nvcomp import library
>>> lib = library()  # None without libnvcomp
"""

from __future__ import annotations

import ctypes
import functools
import os

from fsstgpu.errors import DeviceError

__all__ = ["ALIGNMENT", "STATUS_NAMES", "crc32", "library", "zstd_decompress"]

_PTR = ctypes.c_void_p
_SIZE = ctypes.c_size_t
#: nvcompStatus_t values worth naming in a message (shared_types.h)
STATUS_NAMES = {0: "success", 10: "invalid value", 11: "not supported", 12: "cannot decompress",
                13: "bad checksum", 15: "output buffer too small", 20: "wrong input length",
                1000: "CUDA error", 10000: "internal error"}
#: page payloads and outputs are placed at multiples of this (nvCOMP asks 8 of zstd's inputs and
#: outputs; :func:`zstd_alignments` says what this library asks)
ALIGNMENT = 16


class _DecompressOpts(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_int), ("reserved", ctypes.c_char * 60)]


class _Alignments(ctypes.Structure):
    _fields_ = [("input", _SIZE), ("output", _SIZE), ("temp", _SIZE)]


class _CrcSpec(ctypes.Structure):
    _fields_ = [("poly", ctypes.c_uint32), ("init", ctypes.c_uint32), ("ref_in", ctypes.c_bool),
                ("ref_out", ctypes.c_bool), ("xorout", ctypes.c_uint32),
                ("reserved", ctypes.c_char * 16)]


class _CrcConf(ctypes.Structure):
    _fields_ = [("kernel_kind", ctypes.c_int), ("bytes_per_read", ctypes.c_int32),
                ("blocks_per_msg", ctypes.c_int32), ("reserved", ctypes.c_char * 20)]


class _CrcOpts(ctypes.Structure):
    _fields_ = [("spec", _CrcSpec), ("kernel_conf", _CrcConf), ("reserved", ctypes.c_char * 64)]


_SIGNATURES = {
    "nvcompBatchedZstdDecompressGetRequiredAlignments": [_DecompressOpts,
                                                          ctypes.POINTER(_Alignments)],
    "nvcompBatchedZstdDecompressGetTempSize": [_SIZE, _SIZE, _DecompressOpts,
                                               ctypes.POINTER(_SIZE), _SIZE, _PTR],
    "nvcompBatchedZstdDecompressAsync": [_PTR, _PTR, _PTR, _PTR, _SIZE, _PTR, _SIZE, _PTR,
                                         _DecompressOpts, _PTR, _PTR],
    "nvcompBatchedCRC32GetHeuristicConf": [_PTR, _SIZE, ctypes.POINTER(_CrcConf), _SIZE, _PTR],
    "nvcompBatchedCRC32Async": [_PTR, _PTR, _SIZE, _PTR, _CrcOpts, ctypes.c_int, _PTR, _PTR],
}


def _candidates():
    """Where libnvcomp may be: the wheel's folder (``nvidia.libnvcomp``), then the system's."""
    try:
        import nvidia.libnvcomp as wheel  # noqa: PLC0415 (an optional extra)
        root = os.path.dirname(wheel.__file__)
        for sub in ("lib64", "lib", "bin"):
            yield os.path.join(root, sub, "libnvcomp.so.6")
    except ImportError:
        pass
    yield "libnvcomp.so.6"


@functools.cache
def library():
    """libnvcomp with the signatures used here, or None where it does not load.

    ``FSSTGPU_NVCOMP=0`` in the environment says None whatever is installed (the host then reads
    every page, as without nvCOMP).
    """
    if os.environ.get("FSSTGPU_NVCOMP", "1") == "0":
        return None
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path, ctypes.RTLD_LOCAL)
        except OSError:
            continue
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name, None)
            if fn is None:
                return None
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
        return lib
    return None


def _check(code: int, what: str) -> None:
    if code:
        raise DeviceError(f"nvCOMP {what} failed: {STATUS_NAMES.get(code, code)}")


def zstd_alignments() -> tuple[int, int, int]:
    """nvCOMP's alignment of zstd inputs, outputs and scratch, in bytes."""
    out = _Alignments()
    _check(library().nvcompBatchedZstdDecompressGetRequiredAlignments(_DecompressOpts(),
                                                                      ctypes.byref(out)),
           "zstd alignments")
    return int(out.input), int(out.output), int(out.temp)


def zstd_decompress(cp, src_ptrs, src_sizes, dst_ptrs, dst_sizes, *, max_chunk: int,
                    total: int, stream):
    """Enqueue the zstd decompression of ``len(src_ptrs)`` frames on ``stream``.

    Parameters
    ----------
    cp : module
        CuPy.
    src_ptrs, src_sizes, dst_ptrs, dst_sizes : cupy.ndarray of uint64
        Each frame's device address and size, and its output's address and capacity; addresses
        aligned as :func:`zstd_alignments` says (multiples of :data:`ALIGNMENT` are).
    max_chunk, total : int
        The largest output capacity and their sum (nvCOMP sizes its scratch by them).
    stream : cupy.cuda.Stream

    Returns
    -------
    statuses : cupy.ndarray of int32
        nvCOMP's status of each frame (0: decompressed), once the stream gets there.
    sizes : cupy.ndarray of uint64
        The bytes each frame decompressed to.
    """
    lib = library()
    n = len(src_ptrs)
    opts = _DecompressOpts()
    temp_bytes = _SIZE(0)
    _check(lib.nvcompBatchedZstdDecompressGetTempSize(n, max_chunk, opts,
                                                      ctypes.byref(temp_bytes), total,
                                                      stream.ptr), "zstd scratch size")
    with stream:
        temp = cp.empty(max(int(temp_bytes.value), 1), cp.uint8)
        statuses = cp.empty(n, cp.int32)
        sizes = cp.empty(n, cp.uint64)
    _check(lib.nvcompBatchedZstdDecompressAsync(
        src_ptrs.data.ptr, src_sizes.data.ptr, dst_sizes.data.ptr, sizes.data.ptr, n,
        temp.data.ptr, int(temp_bytes.value), dst_ptrs.data.ptr, opts, statuses.data.ptr,
        stream.ptr), "zstd decompression")
    return statuses, sizes


def crc32(cp, ptrs, sizes, *, max_chunk: int, stream):
    """Enqueue the CRC32 (zlib's, as Parquet's page checksums are) of ``len(ptrs)`` device
    buffers on ``stream``: a cupy.ndarray of uint32, one per buffer, once the stream gets there.

    Parameters
    ----------
    ptrs, sizes : cupy.ndarray of uint64
        Each buffer's device address (any alignment) and size.
    max_chunk : int
        The largest size (picks nvCOMP's kernel configuration without a sync).
    """
    lib = library()
    n = len(ptrs)
    opts = _CrcOpts()
    opts.spec = _CrcSpec(0x04C11DB7, 0xFFFFFFFF, True, True, 0xFFFFFFFF)  # nvcompCRC32
    _check(lib.nvcompBatchedCRC32GetHeuristicConf(None, n, ctypes.byref(opts.kernel_conf),
                                                  max(max_chunk, 1), stream.ptr),
           "CRC32 configuration")
    with stream:
        out = cp.empty(n, cp.uint32)
        statuses = cp.empty(n, cp.int32)
    _check(lib.nvcompBatchedCRC32Async(ptrs.data.ptr, sizes.data.ptr, n, out.data.ptr, opts,
                                       0, statuses.data.ptr, stream.ptr), "CRC32")
    return out
