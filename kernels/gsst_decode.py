"""GSST word-interleaved code layout and its thread-per-split decode (an experiment).

GSST (Fang et al., GPU-accelerated FSST) gives every THREAD a stream of codes and stores the
streams word-interleaved, so that 32 threads reading their word ``w`` read 128 contiguous bytes.
Here the streams are our splits (:mod:`fsstgpu.splits`), so the output positions, tables and
error checks are those of :mod:`fsstgpu.kernels.fsst_decode`, whose kernel gives every split a
WARP instead (its loads are coalesced already); the benchmark ``benchmarks/gsst_layout.py``
measures one against the other.

Layout (:class:`InterleavedCodes`): split ``s``'s codes re-aligned to start at byte 0 of stream
``s`` and zero padded to ``wmax`` 4-byte words (the longest split's, rounded up to even so that
the transpose moves 8-byte pairs); word ``w`` of stream ``s`` at ``words[w, s]``, i.e. at
``w * nstreams + s``; ``nstreams`` is the number of splits rounded up to 32 (the extra streams
empty), so that each warp's 128-byte reads start on a 128-byte line. ``nbytes[s]`` is the split's
code byte count (:data:`BAD_SPLIT` for a split whose code range is unusable; the decode reports
it). The GPU builds it in two passes, a gather of every split into a ``(nstreams, wmax)``
matrix (``gsst_gather`` in ``gsst_decode.cu``) and :func:`fsstgpu.kernels.transpose.transpose`
out of place; :func:`interleave_codes_cpu` is its NumPy twin (the same bytes).

>>> import numpy as np
>>> from fsstgpu.kernels.gsst_decode import interleave_codes_cpu, stream_codes
>>> codes = np.frombuffer(b"abcdefghij", np.uint8)
>>> layout = interleave_codes_cpu(codes, np.array([0, 3, 10]))
>>> layout.words.shape, layout.nbytes[:3].tolist()
((2, 32), [3, 7, 0])
>>> hex(int(layout.words[0, 0])), hex(int(layout.words[1, 1]))
('0x636261', '0x6a6968')
>>> [bytes(stream_codes(layout, s)) for s in range(2)]
[b'abc', b'defghij']
"""

from __future__ import annotations

import contextlib

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.kernels.transpose import transpose, transpose_cpu

__all__ = ["BAD_SPLIT", "InterleavedCodes", "decode_device", "decode_interleaved",
           "interleave_codes", "interleave_codes_cpu", "interleave_device", "layout_shape",
           "stream_codes"]

SOURCE = "gsst_decode.cu"
#: splits (threads) per block of the decode kernel: GSST_THREADS in the .cu file
THREADS = 256
#: streams are rounded up to a multiple of this: one warp's word w is one 128-byte line
STREAM_ALIGN = 32
#: ``nbytes`` of a split whose code range is reversed, outside the codes or longer than the layout
BAD_SPLIT = 0xFFFFFFFF
#: bytes the gather may read past the last code (its 4-byte loads are aligned)
GATHER_PAD = 8
#: blocks in flight along the rows of the gather (gridDim.y's limit is 65535)
_GATHER_ROWS = 65535


class InterleavedCodes:
    """The word-interleaved codes of a column's splits (see the module docstring).

    Attributes
    ----------
    words : numpy.ndarray or cupy.ndarray of uint32, shape (wmax, nstreams)
        Word ``w`` of stream ``s`` at ``words[w, s]`` (C order: ``w * nstreams + s``).
    nbytes : numpy.ndarray or cupy.ndarray of uint32, shape (nstreams,)
        Each stream's code bytes (0 for the padding streams, :data:`BAD_SPLIT` for a bad split).
    nsplits : int
        The streams that are splits (the first ``nsplits``).
    """

    __slots__ = ("words", "nbytes", "nsplits")

    def __init__(self, words, nbytes, nsplits: int):
        self.words, self.nbytes, self.nsplits = words, nbytes, int(nsplits)

    @property
    def wmax(self) -> int:
        return int(self.words.shape[0])

    @property
    def nstreams(self) -> int:
        return int(self.words.shape[1])

    def __repr__(self) -> str:
        return (f"InterleavedCodes({self.nsplits} splits, {self.nstreams} streams x "
                f"{self.wmax} words)")


def _on(stream):
    return stream if stream is not None else contextlib.nullcontext()


def layout_shape(split_codes) -> tuple[int, int]:
    """``(wmax, nstreams)`` of the layout of these split points (host array).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.gsst_decode import layout_shape
    >>> layout_shape(np.array([0, 3, 10])), layout_shape(np.array([0]))
    ((2, 32), (0, 0))
    """
    split_codes = np.asarray(split_codes, dtype=np.int64)
    nsplits = len(split_codes) - 1
    if nsplits <= 0:
        return 0, 0
    longest = max(int(np.diff(split_codes).max()), 0)
    return _shape(longest, nsplits)


def _shape(longest: int, nsplits: int) -> tuple[int, int]:
    words = -(-longest // 4)
    return words + (words & 1), -(-nsplits // STREAM_ALIGN) * STREAM_ALIGN


def _stream_sizes(split_codes: np.ndarray, ncodes: int, wmax: int) -> np.ndarray:
    """Each split's code bytes, :data:`BAD_SPLIT` where its range is unusable (the gather's
    rule in ``gsst_decode.cu``)."""
    cb, ce = split_codes[:-1], split_codes[1:]
    ok = (cb >= 0) & (cb <= ce) & (ce <= ncodes) & (ce - cb <= 4 * wmax)
    return np.where(ok, ce - cb, BAD_SPLIT).astype(np.uint32)


def interleave_codes_cpu(codes: np.ndarray, split_codes, *, wmax: int | None = None):
    """The word-interleaved layout of the splits' codes, built with NumPy (the GPU's twin).

    Parameters
    ----------
    codes : numpy.ndarray of uint8
        The column's codes (only the first ``split_codes[-1]`` are used; any padding after).
    split_codes : array of int64, shape (nsplits + 1,)
        Split ``s`` is ``codes[split_codes[s]:split_codes[s + 1]]``.
    wmax : int, optional
        Words per stream (default :func:`layout_shape`'s); a split longer than ``4 * wmax``
        bytes is marked :data:`BAD_SPLIT` and left empty, as the GPU does.

    Returns
    -------
    InterleavedCodes
        With NumPy arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.gsst_decode import interleave_codes_cpu
    >>> layout = interleave_codes_cpu(np.arange(9, dtype=np.uint8), np.array([0, 5, 9]))
    >>> layout.words[:, :2].tolist(), layout.nbytes[:2].tolist()
    ([[50462976, 134678021], [4, 0]], [5, 4])
    """
    codes = np.asarray(codes, dtype=np.uint8)
    split_codes = np.asarray(split_codes, dtype=np.int64)
    nsplits = max(len(split_codes) - 1, 0)
    shape_w, nstreams = layout_shape(split_codes)
    wmax = shape_w if wmax is None else int(wmax)
    mat = np.zeros((nstreams, 4 * wmax), np.uint8)
    nbytes = np.zeros(nstreams, np.uint32)
    ncodes = len(codes)
    if nsplits:
        nbytes[:nsplits] = _stream_sizes(split_codes, ncodes, wmax)
        for s in np.flatnonzero(nbytes[:nsplits] != BAD_SPLIT):  # splits are few (~4 KiB each)
            cb, n = int(split_codes[s]), int(nbytes[s])
            mat[s, :n] = codes[cb : cb + n]
    words = transpose_cpu(mat.view("<u4"))
    return InterleavedCodes(words, nbytes, nsplits)


def stream_codes(layout: InterleavedCodes, s: int) -> np.ndarray:
    """Stream ``s``'s code bytes read back from a host layout (the layout's inverse).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.gsst_decode import interleave_codes_cpu, stream_codes
    >>> layout = interleave_codes_cpu(np.arange(9, dtype=np.uint8), np.array([0, 5, 9]))
    >>> stream_codes(layout, 1).tolist()
    [5, 6, 7, 8]
    """
    n = int(layout.nbytes[s])
    if n == BAD_SPLIT:
        raise ValueError(f"stream {s} is a bad split")
    column = np.ascontiguousarray(layout.words[:, s]).astype("<u4")
    return column.view(np.uint8)[:n]


def _function(name: str):
    from fsstgpu.kernels.loader import get_function

    return get_function(SOURCE, name)


def interleave_codes(codes, split_codes, ncodes: int, *, wmax: int | None = None,
                     stream=None) -> InterleavedCodes:
    """Build the word-interleaved layout on the GPU: a gather, then the out-of-place transpose.

    Parameters
    ----------
    codes : cupy.ndarray of uint8
        The codes on the device, 4-byte aligned, at least ``ncodes + 8`` bytes (the gather's
        aligned loads read up to 7 bytes past a split; device columns are padded more).
    split_codes : cupy.ndarray of int64, shape (nsplits + 1,)
    ncodes : int
        Codes in ``codes`` (split ranges past it are marked :data:`BAD_SPLIT`).
    wmax : int, optional
        Words per stream, e.g. from :func:`layout_shape` on the host's split points; without it
        the longest split is found on the device (one host synchronisation).
    stream : cupy.cuda.Stream, optional

    Returns
    -------
    InterleavedCodes
        With CuPy arrays; equal byte for byte to :func:`interleave_codes_cpu`'s.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.kernels.gsst_decode import interleave_codes
    ...     layout = interleave_codes(cp.arange(24, dtype=cp.uint8), cp.array([0, 5, 9]), 9)
    ...     assert layout.nbytes[:2].get().tolist() == [5, 4]
    """
    cp = get_cupy()
    nsplits = max(int(split_codes.shape[0]) - 1, 0)
    if codes.dtype != cp.uint8 or codes.data.ptr % 4:
        raise ValueError("interleave_codes needs 4-byte aligned uint8 codes")
    if codes.nbytes < ncodes + GATHER_PAD:
        raise ValueError(f"codes buffer of {codes.nbytes} bytes, need {ncodes + GATHER_PAD}")
    with _on(stream):
        if wmax is None:
            longest = int(cp.diff(split_codes).max()) if nsplits else 0
            wmax, nstreams = _shape(max(longest, 0), nsplits)
        else:
            nstreams = -(-nsplits // STREAM_ALIGN) * STREAM_ALIGN
        mat = cp.empty((nstreams, wmax), dtype=cp.uint32)
        nbytes = cp.empty(nstreams, dtype=cp.uint32)
        if nstreams:
            grid = (max(1, -(-wmax // 256)), min(nstreams, _GATHER_ROWS))
            _function("gsst_gather")(grid, (256,), (
                codes, np.int64(ncodes), split_codes, np.int64(nsplits), np.int64(nstreams),
                np.int64(wmax), mat, nbytes))
        words = cp.empty((wmax, nstreams), dtype=cp.uint32)
        transpose(mat, words, stream=stream)
    return InterleavedCodes(words, nbytes, nsplits)


def interleave_device(dev, *, stream=None) -> InterleavedCodes:
    """:func:`interleave_codes` of a :class:`~fsstgpu.device_arrays.DeviceCompressedStringArray`
    (one column or a batch), its shape taken from the host's split points (no synchronisation).

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     from fsstgpu.kernels.gsst_decode import interleave_device
    ...     dev = fsstgpu.to_device(fsstgpu.compress(pa.array(["ab", "cd"])))
    ...     assert interleave_device(dev).nsplits == dev.nsplits
    """
    wmax, _ = layout_shape(dev.layout.split_codes)
    return interleave_codes(dev.codes, dev.split_codes, dev.ncodes, wmax=wmax, stream=stream)


def decode_interleaved(layout: InterleavedCodes, split_out, split_table, tab_sym, tab_len,
                       ntables: int, out, out_size: int, err, *, stream=None) -> None:
    """Enqueue the thread-per-split decode of an interleaved layout (no host synchronisation).

    Split ``k`` (stream ``k``) decodes with table ``split_table[k]`` into
    ``out[split_out[k]:split_out[k + 1]]``, as :func:`fsstgpu.kernels.fsst_decode.launch_decode`
    decodes it; ``err`` (one int32, zeroed before) gets the same error bits
    (:func:`fsstgpu.kernels.fsst_decode.error_message` says them in words).

    Parameters
    ----------
    layout : InterleavedCodes
        On the device (:func:`interleave_codes`).
    split_out : cupy.ndarray of int64, shape (nsplits + 1,)
    split_table : cupy.ndarray of uint16, shape (nsplits,)
    tab_sym, tab_len : cupy.ndarray, shape (ntables, 256)
        :func:`fsstgpu.symbol_table.pack_tables`' layout.
    ntables : int
    out : cupy.ndarray of uint8
        At least ``out_size`` bytes.
    out_size : int
    err : cupy.ndarray of int32, shape (1,)
    stream : cupy.cuda.Stream, optional

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.symbol_table import SymbolTable, pack_tables
    ...     from fsstgpu.kernels.gsst_decode import decode_interleaved, interleave_codes
    ...     layout = interleave_codes(cp.zeros(16, cp.uint8), cp.array([0, 2]), 2)  # "ab" "ab"
    ...     sym, ln = (cp.asarray(a) for a in pack_tables([SymbolTable([b"ab"])]))
    ...     out, err = cp.empty(4, cp.uint8), cp.zeros(1, cp.int32)
    ...     decode_interleaved(layout, cp.array([0, 4]), cp.zeros(1, cp.uint16), sym, ln, 1,
    ...                        out, 4, err)
    ...     assert bytes(out.get()) == b"abab" and int(err.get()[0]) == 0
    """
    nsplits = int(split_table.shape[0])
    if nsplits == 0:
        return
    if nsplits != layout.nsplits or int(split_out.shape[0]) != nsplits + 1:
        raise ValueError(f"{nsplits} splits, a layout of {layout.nsplits} and "
                         f"{int(split_out.shape[0])} output positions")
    words = layout.words
    if words.dtype != np.uint32 or words.ndim != 2 or not words.flags.c_contiguous:
        raise ValueError("layout.words must be a C-contiguous (wmax, nstreams) uint32 array")
    if int(layout.nbytes.shape[0]) != layout.nstreams or layout.nstreams < nsplits:
        raise ValueError("layout.nbytes must hold one count per stream")
    if out.nbytes < out_size:
        raise ValueError(f"output buffer of {out.nbytes} bytes, need {out_size}")
    blocks = -(-nsplits // THREADS)
    args = (words, np.int64(layout.nstreams), np.int64(layout.wmax), layout.nbytes, split_out,
            split_table, np.int64(nsplits), tab_sym, tab_len, np.int32(ntables), out,
            np.int64(out_size), err)
    with _on(stream):
        _function("gsst_decode")((blocks,), (THREADS,), args)


def decode_device(dev, layout: InterleavedCodes, out, err, *, stream=None) -> None:
    """:func:`decode_interleaved` of a device column or batch ``dev`` (its split points and
    tables) from ``layout`` (:func:`interleave_device` of it) into ``out[:dev.total]``.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.kernels.gsst_decode import decode_device, interleave_device
    ...     dev = fsstgpu.to_device(fsstgpu.compress(pa.array(["ab", "cd"])))
    ...     out, err = cp.empty(dev.total, cp.uint8), cp.zeros(1, cp.int32)
    ...     decode_device(dev, interleave_device(dev), out, err)
    ...     assert bytes(out.get()) == b"abcd" and int(err.get()[0]) == 0
    """
    decode_interleaved(layout, dev.split_out, dev.split_table, dev.tab_sym, dev.tab_len,
                       dev.ntables, out, dev.total, err, stream=stream)
