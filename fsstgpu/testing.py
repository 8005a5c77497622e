"""The one shared round-trip checker: every dataset, type and option goes through it.

:func:`check_roundtrip` compresses a column and checks, type-exact and byte-exact, everything a
user can get back from it: the CPU decompression, the blob round trip, single-string access and
``take``. Tests of every module (and other packages' tests) call it instead of writing their own
comparisons, so a new way to get strings back is checked everywhere once it is added here.
:func:`greedy_encode` is the encoders' oracle: FSST's definition, one string in plain Python.
:func:`poisoned_codes` forges an extension array's codes, for the tests of decoders' refusals.
``UTF8_SPOILERS`` are the byte forms RFC 3629 forbids, for the UTF-8 checks' tests.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.arrow_layout import offsets_from_lengths
from fsstgpu.columns import compress_column, decompress_column
from fsstgpu.decoder import decode_all
from fsstgpu.device import get_cupy
from fsstgpu.errors import CorruptDataError
from fsstgpu.gpu.arrays import DeviceCompressedStringArray
from fsstgpu.gpu.decode import decode_async
from fsstgpu.gpu.layout import HostBatch, checks_code_starts
from fsstgpu.types import is_text

#: bytes that spoil UTF-8 text: a lone continuation, overlong two- and three-byte forms, a
#: surrogate, past U+10FFFF, a five-byte lead, 0xFF, and two sequences cut short (valid only
#: where the right continuation bytes follow them)
UTF8_SPOILERS = (b"\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                 b"\xf8", b"\xe2\x82", b"\xff", b"\xc3")


def _check_same(result, expected, what: str) -> None:
    assert type(result) is type(expected), (
        f"{what}: got a {type(result).__name__}, expected a {type(expected).__name__}")
    assert result.type == expected.type, f"{what}: type {result.type}, expected {expected.type}"
    assert len(result) == len(expected), f"{what}: {len(result)} strings, expected {len(expected)}"
    assert result.null_count == expected.null_count, (
        f"{what}: {result.null_count} nulls, expected {expected.null_count}")
    if isinstance(expected, pa.ChunkedArray):
        assert [len(c) for c in result.chunks] == [len(c) for c in expected.chunks], (
            f"{what}: chunk lengths differ")
        for chunk in result.chunks:
            chunk.validate(full=True)
    else:
        result.validate(full=True)  # offsets monotonic and in bounds, UTF-8 valid for strings
    # equals() compares values and validity, whatever the offsets' base or a slice's offset.
    assert result.equals(expected), f"{what}: values differ"


def check_roundtrip(array, *, samples: int = 64, seed: int = 0,
                    **compress_options) -> CompressedStringArray:
    """Compress ``array`` and assert that everything reading it back gives exactly it.

    Checks, each type-exact (same Arrow type, Array vs ChunkedArray, chunk lengths) and
    value-exact (bytes and nulls):

    * ``decompress_column(carr)``, whose buffers are also validated by Arrow;
    * :meth:`CompressedStringArray.validate` on the compressed fields;
    * ``to_bytes`` / ``from_bytes`` give equal fields and the same decompression (both with and
      without stored code offsets);
    * ``carr[i]`` for up to ``samples`` indices (first, last and random ones, negative too);
    * ``carr.take`` of the same indices;
    * ``pa.array(carr)`` (the Arrow PyCapsule interface: the column decoded, chunks combined);
    * slices ``carr[a:b]`` (a random one, a prefix, a suffix, an empty one): fully validated,
      and decompressing to exactly ``array.slice(a, b - a)``, chunks included.

    Parameters
    ----------
    array : pyarrow.Array or pyarrow.ChunkedArray
    samples : int
        How many indices to check with ``carr[i]`` and ``take``.
    seed : int
        Seeds the choice of indices.
    **compress_options
        Passed to :func:`fsstgpu.compress` (``table``, ``sample_bytes``, ``split_size``).

    Returns
    -------
    CompressedStringArray

    Raises
    ------
    AssertionError
        Naming the first check that failed.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.testing import check_roundtrip
    >>> carr = check_roundtrip(pa.array(["a", None, "bcd"], pa.string_view()))
    >>> len(carr)
    3
    """
    carr = compress_column(array, **compress_options)
    carr._validated = carr._checked = False  # check_roundtrip re-runs every check on purpose
    carr.validate()
    assert len(carr) == len(array)
    assert carr.type == array.type
    _check_same(decompress_column(carr), array, "decompress")

    for store in (True, False):
        blob = carr.to_bytes(store_code_offsets=store)
        again = CompressedStringArray.from_bytes(blob)
        assert again.equals(carr), f"from_bytes(to_bytes(store_code_offsets={store})) differs"
        _check_same(decompress_column(again), array, f"blob (code offsets {store})")

    n = len(array)
    flat = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    _check_same(pa.array(carr), flat, "pa.array(carr)")
    rng = np.random.default_rng(seed)
    a, b = np.sort(rng.integers(0, n + 1, size=2))
    for start, stop in ((int(a), int(b)), (0, int(b)), (int(a), n), (int(a), int(a))):
        part = carr[start:stop]
        part._validated = part._checked = False
        part.validate()  # the re-planned split points too
        _check_same(decompress_column(part), array.slice(start, stop - start),
                    f"carr[{start}:{stop}]")
    if n == 0:
        assert carr.take([]).to_pylist() == []
        return carr

    def expected_take(indices):  # pyarrow has no take kernel for view types
        return pa.array([flat[int(i)].as_py() for i in indices], type=array.type)

    picks = np.unique(np.concatenate([[0, n - 1], rng.integers(0, n, size=samples)]))
    for i in picks[:samples]:
        expected = flat[int(i)].as_py()
        assert carr[int(i)] == expected, f"carr[{int(i)}] = {carr[int(i)]!r}, expected {expected!r}"
    assert carr[-1] == flat[n - 1].as_py(), "carr[-1] differs"
    order = rng.permutation(picks[:samples])
    taken = carr.take(order)
    expected = expected_take(order)
    assert taken.type == expected.type, f"take: type {taken.type}, expected {expected.type}"
    taken.validate(full=True)
    assert taken.equals(expected), "take: values differ"
    run = np.arange(max(0, n // 2 - 5), min(n, n // 2 + 5))  # contiguous: one decode call
    assert carr.take(run).equals(expected_take(run)), "take of a contiguous run differs"
    return carr


def gpu_decode_matches_cpu(carr, *, poison: int = 0xAB, **changes) -> bool:
    """Decode ``carr`` with some fields changed, on the GPU and with the CPU twin, and assert that
    they agree; return whether both found the data corrupt.

    The changes (``codes``, ``split_codes``, ``split_out``, ``split_table``: new values of the
    same shapes) are made after the host's checks, in what the upload sends, so the kernel's own
    checks meet them. Asserts: the GPU raises CorruptDataError exactly when
    :func:`fsstgpu.decoder.decode_all` does (given the string ends and, for text, the UTF-8
    check, as the CPU decode of a column not :attr:`~fsstgpu.CompressedStringArray.validated`
    gives them, and its stored code offsets where it keeps them), otherwise gives its bytes,
    and never writes past the output (a poisoned guard after it).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.testing import gpu_decode_matches_cpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     carr = fsstgpu.compress(pa.array(["abc", "abd"]))
    ...     assert gpu_decode_matches_cpu(carr, split_out=carr.split_out + 1)
    """

    cp = get_cupy()
    layout = HostBatch([carr])
    for name, value in changes.items():
        if name == "codes":
            layout.codes = [value]
        else:  # into the host buffer the upload sends (same shapes)
            getattr(layout, name)[...] = value
    dev = DeviceCompressedStringArray(layout)
    dev.is_batch = False
    total = dev.total
    try:
        ends = None if layout.trusted else offsets_from_lengths(carr.lengths, carr.type, total)
        # stored code offsets of a column not known good: checked in the walk the split points
        # drive, each split with its own table (the CPU decoder's call, as the GPU's check)
        stored = carr.code_offsets if checks_code_starts(carr) else None
        twin = decode_all(carr.tables, layout.codes[0], layout.split_codes, layout.split_out,
                          layout.split_table, total, string_ends=ends, code_offsets=stored,
                          utf8=ends is not None and is_text(carr.type))
        cpu_error = None
    except CorruptDataError as exc:
        cpu_error = str(exc)
    buf = cp.full(total + 256, poison, dtype=cp.uint8)
    try:
        res = decode_async(dev, fill=poison, out=buf).check()
    except CorruptDataError:
        assert cpu_error, "the GPU found corruption that the CPU twin did not"
    else:
        assert not cpu_error, f"the CPU twin found: {cpu_error}"
        assert np.array_equal(res.data.get(), twin), "the GPU's bytes differ from the twin's"
    assert bool((buf[total:] == poison).all()), "the GPU wrote past the output's end"
    return bool(cpu_error)


def greedy_encode(table, s: bytes) -> list[int]:
    """The codes of ``s`` by FSST's definition: at each position the longest symbol of
    ``table`` that matches, else an escape (255) and the byte. Plain Python, independent of
    every encoder it checks.

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.testing import greedy_encode
    >>> greedy_encode(SymbolTable([b"a", b"ab"]), b"abax")
    [1, 0, 255, 120]
    """
    code_of = {sym: c for c, sym in enumerate(table.symbols)}
    out, i = [], 0
    while i < len(s):
        for ln in range(min(8, len(s) - i), 0, -1):
            c = code_of.get(s[i : i + ln])
            if c is not None:
                out.append(c)
                i += ln
                break
        else:
            out += [255, s[i]]
            i += 1
    return out



def symbol_slot(sym: bytes) -> int:
    """The hash slot of a 3-8 byte symbol (``csrc/matcher.h``'s hash3 of its first 3 bytes):
    a trained table holds at most one such symbol per slot, so tests that build tables by hand
    for the lane kernels keep to it.

    Examples
    --------
    >>> from fsstgpu.testing import symbol_slot
    >>> 0 <= symbol_slot(b"http") < 4096
    True
    """
    p = (int.from_bytes(sym[:3], "little") * 2971215073) & (2**64 - 1)
    return (p ^ (p >> 15)) & 4095


def poisoned_codes(ext: pa.ExtensionArray, value: int = 254) -> pa.ExtensionArray:
    """``ext`` (an ``fsstgpu.fsst`` array, version 2-4 storage) with every code byte replaced
    by ``value``: with a code its table lacks, a decoder must refuse the column.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> from fsstgpu.testing import poisoned_codes
    >>> bad = poisoned_codes(to_extension_array(fsstgpu.compress(pa.array(["ab", "cd"]))))
    >>> set(b"".join(bad.storage.field("codes").to_pylist()))
    {254}
    """
    storage = ext.storage
    codes = storage.field("codes")
    data = np.frombuffer(codes.buffers()[2], np.uint8).copy()
    data[:] = value
    bad = pa.Array.from_buffers(codes.type, len(codes),
                                [codes.buffers()[0], codes.buffers()[1], pa.py_buffer(data)],
                                offset=codes.offset)
    struct = pa.StructArray.from_arrays(
        [bad, *(storage.field(i) for i in range(1, storage.type.num_fields))],
        fields=list(storage.type), mask=storage.is_null())
    return pa.ExtensionArray.from_storage(ext.type, struct)
