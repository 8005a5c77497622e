"""The one shared round-trip checker: every dataset, type and option goes through it.

:func:`check_roundtrip` compresses a column and checks, type-exact and byte-exact, everything a
user can get back from it: the CPU decompression, the blob round trip, single-string access and
``take``. Tests of every module (and other packages' tests) call it instead of writing their own
comparisons, so a new way to get strings back is checked everywhere once it is added here.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.codec import compress, decompress


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

    * ``decompress(carr, device="cpu")``, whose buffers are also validated by Arrow;
    * :meth:`CompressedStringArray.validate` on the compressed fields;
    * ``to_bytes`` / ``from_bytes`` give equal fields and the same decompression (both with and
      without stored code offsets);
    * ``carr[i]`` for up to ``samples`` indices (first, last and random ones, negative too);
    * ``carr.take`` of the same indices.

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
    carr = compress(array, **compress_options)
    carr._validated = carr._checked = False  # check_roundtrip re-runs every check on purpose
    carr.validate()
    assert len(carr) == len(array)
    assert carr.type == array.type
    _check_same(decompress(carr, device="cpu"), array, "decompress")

    for store in (True, False):
        blob = carr.to_bytes(store_code_offsets=store)
        again = CompressedStringArray.from_bytes(blob)
        assert again.equals(carr), f"from_bytes(to_bytes(store_code_offsets={store})) differs"
        _check_same(decompress(again, device="cpu"), array, f"blob (code offsets {store})")

    n = len(array)
    if n == 0:
        assert carr.take([]).to_pylist() == []
        return carr
    flat = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array

    def expected_take(indices):  # pyarrow has no take kernel for view types
        return pa.array([flat[int(i)].as_py() for i in indices], type=array.type)

    rng = np.random.default_rng(seed)
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
