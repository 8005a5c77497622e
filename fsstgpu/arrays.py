"""CompressedStringArray: an FSST-compressed Arrow string column, in host memory.

CONTRACT (shared by the CPU codec, the GPU decoder and the file formats; change it only together):

=================  ==========================  ================================================
field              dtype / shape               meaning
=================  ==========================  ================================================
``type``           pyarrow.DataType            the original Arrow type (one of the six string /
                                               binary types); decompress returns exactly it
``length``         int                         number of strings (nulls included)
``tables``         tuple[SymbolTable]          one table per block
``block_starts``   int64, (nblocks + 1,)       string index where each block starts;
                                               ``[0] == 0``, ``[-1] == length``, non-decreasing
``codes``          uint8, (ncodes,)            every string's codes, concatenated (nulls: none)
``code_offsets``   int64, (length + 1,)        string ``i``'s codes are
                                               ``codes[code_offsets[i]:code_offsets[i+1]]``;
                                               ``[0] == 0``, ``[-1] == ncodes``; may be
                                               left out (None) and is then derived from the
                                               codes and lengths on first use
``lengths``        int64, (length,)            uncompressed byte length of each string (0 for
                                               nulls); the output offsets are their prefix sum
``validity``       uint8 or None, (ceil(n/8),)  Arrow validity bitmap, LSB first, bit offset 0;
                                               None when there are no nulls
``null_count``     int
``split_size``     int                         S: the target uncompressed bytes per split
``split_codes``    int64, (nsplits + 1,)       code position where each split starts;
                                               ``[-1] == ncodes``; non-decreasing
``split_out``      int64, (nsplits + 1,)       output byte position where each split starts;
                                               ``[-1] == sum(lengths)``; non-decreasing
``split_table``    uint16, (nsplits,)          which table decodes the split
``chunk_lengths``  int64 or None                when the input was a ChunkedArray: the chunk
                                               lengths, so decompress returns the same chunks
``packed_lengths`` uint8 or None                ``lengths`` bit-plane packed (FBP2), when known;
                                               what the GPU path uploads (unpacked there)
=================  ==========================  ================================================

Split points (:mod:`fsstgpu.splits`): decoding the codes ``split_codes[k]:split_codes[k+1]`` with
table ``split_table[k]`` yields exactly the output bytes ``split_out[k]:split_out[k+1]`` of the
Arrow data buffer. Every split start is a code boundary (never between an escape and its literal)
and splits never cross a block boundary. They are computed once, at compression, and travel with
the column (blob, extension type): readers do not re-derive them.

Checks: the constructor checks dtypes and shapes; :meth:`CompressedStringArray.validate` checks
every structural invariant in O(strings) (enough for every decoder to stay inside its buffers: the
decoders check each split fills exactly its range and raise CorruptDataError otherwise), and with
``full=True`` also walks every code (:func:`fsstgpu.scan.check_codes`); random access runs that
once first, so it raises exactly when the whole-column decode does. Decoded text (the
``string`` types) is checked to be UTF-8 by every decoding path: a forged column can decode to any
bytes.
"""

from __future__ import annotations

import operator

import numpy as np
import pyarrow as pa

from fsstgpu.arrow_layout import as_chunks, offsets_from_lengths, to_arrow as layout_to_arrow
from fsstgpu.blob_hooks import installed_blob_format
from fsstgpu.checks import check_structure
from fsstgpu.decoder import decode_all, decode_range
from fsstgpu.errors import CorruptDataError
from fsstgpu.limits import flag
from fsstgpu.memory import pool_empty
from fsstgpu.rows import take_rows
from fsstgpu.scan import CHECK, OFFSETS, walk
from fsstgpu.slicing import slice_fields
from fsstgpu.types import is_text, narrow_offsets

_INT_FIELDS = {"block_starts": np.int64, "codes": np.uint8, "code_offsets": np.int64,
               "lengths": np.int64, "split_codes": np.int64, "split_out": np.int64,
               "split_table": np.uint16}
# no check reads them (copy and pickle restore them slot by slot, after the fields they follow)
_UNCHECKED = frozenset({"packed_lengths", "_validated", "_checked", "_packed_unchecked"})
def _frozen(name, value, dtype):
    """A read-only, contiguous 1-D array of ``dtype`` (integers only: no silent float casts)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iub" and arr.size:
        raise TypeError(f"{name} must be an integer array, not {arr.dtype}")
    if arr.dtype != dtype and arr.size and arr.dtype.kind in "iu":
        info = np.iinfo(dtype)
        if int(arr.min()) < info.min or int(arr.max()) > info.max:
            raise ValueError(f"{name} holds values outside {np.dtype(dtype).name}")
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, not shape {arr.shape}")
    arr = arr.view()
    arr.flags.writeable = False
    return arr


class CompressedStringArray:
    """An FSST-compressed Arrow string column in host memory (fields: the module docstring).

    Build one with :func:`fsstgpu.compress` or :meth:`from_bytes`; the constructor takes the
    contract's fields as keywords and only checks their dtypes and shapes cheaply, so call
    :meth:`validate` on fields that come from elsewhere. The arrays are read-only.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> carr = fsstgpu.compress(pa.array(["alpha", None, "beta"]))
    >>> len(carr), carr[0], carr[1], carr[-1]
    (3, 'alpha', None, 'beta')
    >>> carr.take([2, 0]).to_pylist()
    ['beta', 'alpha']
    >>> fsstgpu.CompressedStringArray.from_bytes(carr.to_bytes()).equals(carr)
    True
    """

    __slots__ = ("type", "length", "tables", "block_starts", "codes", "_code_offsets", "lengths",
                 "validity", "null_count", "split_size", "split_codes", "split_out",
                 "split_table", "chunk_lengths", "packed_lengths", "_validated", "_checked",
                 "_packed_unchecked")

    def __init__(self, *, type, length, tables, block_starts, codes, code_offsets, lengths,
                 validity, null_count, split_size, split_codes, split_out, split_table,
                 chunk_lengths=None, packed_lengths=None):
        self.type = type
        self.length = int(length)
        self.tables = tuple(tables)
        self.block_starts = _frozen("block_starts", block_starts, np.int64)
        self.codes = _frozen("codes", codes, np.uint8)
        self.code_offsets = code_offsets
        self.lengths = _frozen("lengths", lengths, np.int64)
        self.validity = None if validity is None else _frozen("validity", validity, np.uint8)
        self.null_count = int(null_count)
        self.split_size = int(split_size)
        self.split_codes = _frozen("split_codes", split_codes, np.int64)
        self.split_out = _frozen("split_out", split_out, np.int64)
        self.split_table = _frozen("split_table", split_table, np.uint16)
        self.chunk_lengths = (None if chunk_lengths is None
                              else _frozen("chunk_lengths", chunk_lengths, np.int64))
        self.packed_lengths = (None if packed_lengths is None
                               else _frozen("packed_lengths", packed_lengths, np.uint8))
        self._validated = False  # validate(full=True) passed
        self._checked = False  # validate(full=False) passed

    @property
    def code_offsets(self) -> np.ndarray:
        """Where each string's codes start (int64, ``length + 1``); derived from the codes and
        lengths on first use when they were not given: by :meth:`validate`, whose one walk
        checks every code and split point on the way (so a column whose strings cannot be
        reached alone is corrupt, as its whole-column decode says).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> carr = fsstgpu.compress(pa.array(["abab", "", "ab"]))
        >>> blob = fsstgpu.CompressedStringArray.from_bytes(carr.to_bytes())
        >>> blob.code_offsets.tolist() == carr.code_offsets.tolist()
        True
        """
        if self._code_offsets is None:
            self.validate()
        return self._code_offsets

    @code_offsets.setter
    def code_offsets(self, value) -> None:
        frozen = None if value is None else _frozen("code_offsets", value, np.int64)
        object.__setattr__(self, "_code_offsets", frozen)

    @property
    def has_code_offsets(self) -> bool:
        """Whether the code offsets are at hand (given, or derived already).

        >>> import pyarrow as pa, fsstgpu
        >>> fsstgpu.compress(pa.array(["abc"])).has_code_offsets
        True
        """
        return self._code_offsets is not None

    @property
    def validated(self) -> bool:
        """Whether every string decodes on its own (encoder output, or :meth:`validate` passed).

        >>> import pyarrow as pa, fsstgpu
        >>> fsstgpu.compress(pa.array(["abc"])).validated
        True
        """
        return self._validated

    @property
    def packed_lengths_checked(self) -> bool:
        """Whether ``packed_lengths`` (when set) are known to be ``lengths`` packed: a blob's
        (its lengths were unpacked from them) or packed by :mod:`fsstgpu.gpu.layout`; ones given
        to the constructor or set later are checked before the GPU unpacks them into offsets.

        >>> import pyarrow as pa, fsstgpu
        >>> fsstgpu.compress(pa.array(["abc"])).packed_lengths_checked
        True
        """
        return not self._packed_unchecked

    def __setattr__(self, name, value):
        # Replacing a field the checks read invalidates an earlier validate() (the arrays are
        # read-only: this is the only way they change); writing the packed_lengths cache or the
        # object already held keeps it (issue #22: any write dropped it).
        slot = "_code_offsets" if name == "code_offsets" else name
        replaced = name not in _UNCHECKED and getattr(self, slot, None) is not value
        object.__setattr__(self, name, value)
        if replaced:
            object.__setattr__(self, "_validated", False)
            object.__setattr__(self, "_checked", False)
        if name in ("lengths", "packed_lengths"):  # the GPU's offsets come from packed_lengths
            object.__setattr__(self, "_packed_unchecked",
                               getattr(self, "packed_lengths", None) is not None)

    # ------------------------------------------------------------------ sizes and access
    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return (f"CompressedStringArray(type={self.type}, length={self.length}, "
                f"null_count={self.null_count}, blocks={len(self.tables)}, "
                f"codes={len(self.codes)} bytes, splits={len(self.split_table)}"
                + ("" if self.chunk_lengths is None else f", chunks={len(self.chunk_lengths)}")
                + ")")

    @property
    def nbytes(self) -> int:
        """Host memory held by the arrays and tables, in bytes.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> fsstgpu.compress(pa.array(["abc"])).nbytes > 0
        True
        """
        arrays = [self.block_starts, self.codes, self.lengths, self.split_codes, self.split_out,
                  self.split_table, self._code_offsets, self.validity, self.chunk_lengths]
        tables = sum(t.packed.nbytes + t.lengths.nbytes for t in self.tables)
        return sum(a.nbytes for a in arrays if a is not None) + tables

    @property
    def uncompressed_bytes(self) -> int:
        """Total bytes of the strings (the Arrow data buffer's size).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> fsstgpu.compress(pa.array(["abc", None, "de"])).uncompressed_bytes
        5
        """
        return int(self.split_out[-1]) if len(self.split_out) else 0

    def is_valid(self, i: int) -> bool:
        """Whether string ``i`` is not null (negative indices count from the end, as in
        ``carr[i]``).

        Raises
        ------
        IndexError
            For an index outside the column.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> carr = fsstgpu.compress(pa.array(["a", None]))
        >>> carr.is_valid(0), carr.is_valid(1), carr.is_valid(-2)
        (True, False, True)
        """
        i = self._index(i)
        if self.validity is None:
            return True
        return bool((self.validity[i >> 3] >> (i & 7)) & 1)

    def _index(self, i) -> int:
        try:
            i = int(i) if isinstance(i, np.integer) else i.__index__()  # (no int64 wrap)
        except AttributeError:
            raise TypeError(f"indices must be integers, not {type(i).__name__}") from None
        if i < 0:
            i += self.length
        if not 0 <= i < self.length:
            raise IndexError(f"index out of range for {self.length} strings")
        return i

    def _value(self, i: int, raw: bytes):
        if not is_text(self.type):
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptDataError(f"string {i} decodes to bytes that are not valid UTF-8 "
                                   f"({exc.reason} at byte {exc.start})") from None

    def __getitem__(self, i):
        """``carr[i]``: decode string ``i`` alone (negative indices count from the end; None for
        a null). ``carr[a:b]``: the strings ``a:b`` as a CompressedStringArray (:meth:`slice`)."""
        if isinstance(i, slice):
            start, stop, step = i.indices(self.length)
            if step != 1:
                raise ValueError(f"a CompressedStringArray slice takes step 1, not {step} "
                                 "(take() decodes any selection)")
            return self.slice(start, max(stop - start, 0))
        i = self._index(i)
        self.validate()  # once: random access answers as the whole-column decode does
        if not self.is_valid(i):
            return None
        n = int(self.lengths[i])
        out = np.empty(n, np.uint8)
        table = self.tables[int(np.searchsorted(self.block_starts, i, side="right")) - 1]
        end = decode_range(table, self.codes, int(self.code_offsets[i]),
                           int(self.code_offsets[i + 1]), out, 0, n)
        if end != n:
            raise CorruptDataError(f"string {i} decodes to {end} bytes, its length is {n}")
        return self._value(i, out.tobytes())

    def slice(self, offset: int = 0, length: int | None = None) -> CompressedStringArray:
        """The strings ``offset:offset + length`` as a compressed column (as ``pa.Array.slice``).

        The slice shares this column's codes; its split points are planned afresh
        (:mod:`fsstgpu.slicing`). A chunked column's slice has the chunks that
        ``pyarrow.ChunkedArray.slice`` would give.

        Parameters
        ----------
        offset : int
            First string (0 to ``len(self)``).
        length : int, optional
            Number of strings; default: up to the end (clipped to the end).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> carr = fsstgpu.compress(pa.array(["a", "b", None, "d"], pa.large_string()))
        >>> part = carr[1:3]
        >>> type(part).__name__, part.to_arrow().to_pylist()
        ('CompressedStringArray', ['b', None])
        """
        offset = operator.index(offset)  # (a float is refused, as pyarrow does, not truncated)
        if not 0 <= offset <= self.length:
            raise IndexError(f"slice offset {offset} outside 0..{self.length}")
        asked = self.length if length is None else operator.index(length)  # (pyarrow's rule)
        if (stop := min(offset + asked, self.length)) < offset:
            raise ValueError(f"slice length must be non-negative, not {length}")
        # The slice is cut from the blocks, code offsets, lengths and validity as they are:
        # fields from elsewhere are checked first (once), or a broken null count or block
        # start comes out of the slice as a consistent column (a null decoded as "").
        self.validate(full=False)
        part = CompressedStringArray(**slice_fields(self, offset, stop, asked))
        part.validate(full=False)
        part._validated = self._validated  # same codes; split points from a checked plan
        return part

    # ------------------------------------------------------------------ whole-column views
    def to_arrow(self):
        """Decode every string on the CPU (what ``fsstgpu.decompress(self, device="cpu")`` returns).

        Returns
        -------
        pyarrow.Array or pyarrow.ChunkedArray
            Of the original type (a ChunkedArray with the same chunks when compressed from one).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> fsstgpu.compress(pa.array(["a", None], pa.large_string())).to_arrow().type
        DataType(large_string)
        """
        self.validate(full=False)  # decode_all checks the codes of every split
        # (validate checked that the lengths add up to uncompressed_bytes)
        offsets = offsets_from_lengths(self.lengths, self.type,
                                       self.uncompressed_bytes)
        # The string ends (and stored code offsets) are checked in the same walk: the column
        # decodes exactly when each of its strings decodes alone (carr[i], take) and validate()
        # passes. A column validate() passed (the encoder's own, say) holds them already: the
        # faster decode. Forged codes can decode to any bytes: text is checked to be UTF-8 in
        # the same pass, each split's strings right after they are decoded. (A checked binary
        # column needs no ends at all: given ends cost the decoder a pass to check them.)
        checked, text = self._validated, is_text(self.type)
        data = decode_all(self.tables, self.codes, self.split_codes, self.split_out,
                          self.split_table, self.uncompressed_bytes,
                          string_ends=offsets if text or not checked else None,
                          code_offsets=None if checked else self._code_offsets,
                          check_ends=not checked, utf8=text, alloc=pool_empty)
        if self.chunk_lengths is None or (offsets.dtype == np.int64
                                          and narrow_offsets(self.type)):
            # (past 2 GiB a 32-bit type's chunks need their own offsets: few chunks are that
            # large)
            return layout_to_arrow(self.type, data, offsets, self.validity,
                                   self.chunk_lengths)
        return as_chunks(layout_to_arrow(self.type, data, offsets,
                                         self.validity), self.chunk_lengths)

    def _to_single_array(self) -> pa.Array:
        decoded = self.to_arrow()
        if isinstance(decoded, pa.ChunkedArray):
            decoded = (decoded.combine_chunks() if decoded.num_chunks
                       else pa.array([], type=self.type))
        return decoded

    def __arrow_c_array__(self, requested_schema=None):
        """Arrow PyCapsule interface: decode (:meth:`to_arrow`, chunks combined) and export.

        ``pa.array(carr)`` (and every consumer of the interface: polars, DuckDB, nanoarrow)
        gets the original type. ``requested_schema`` is passed to pyarrow, which casts to it
        when it can.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> pa.array(fsstgpu.compress(pa.array(["ab", None], pa.large_string()))).type
        DataType(large_string)
        """
        return self._to_single_array().__arrow_c_array__(requested_schema)

    def __arrow_c_stream__(self, requested_schema=None):
        """Arrow PyCapsule stream interface: the decoded chunks (one for an unchunked column);
        ``pa.chunked_array(carr)`` keeps a chunked column's chunks."""
        decoded = self.to_arrow()
        if isinstance(decoded, pa.Array):
            decoded = pa.chunked_array([decoded], type=self.type)
        return decoded.__arrow_c_stream__(requested_schema)

    def __array__(self, dtype=None, copy=None):
        """NumPy conversion: an object array of str (bytes for binary types), None for nulls,
        decoded in bulk (pyarrow's ``to_numpy``), not string by string.

        Examples
        --------
        >>> import numpy as np, pyarrow as pa, fsstgpu
        >>> np.asarray(fsstgpu.compress(pa.array(["ab", None])))
        array(['ab', None], dtype=object)
        """
        if copy is False:
            raise ValueError("a CompressedStringArray cannot be viewed as a numpy array without "
                             "decoding it (a copy)")
        decoded = self.to_arrow()
        out = decoded.to_numpy(zero_copy_only=False)
        return out if dtype is None else out.astype(dtype, copy=False)

    def __iter__(self):
        """Iterate over the decoded values (the column is decoded once, in bulk)."""
        return iter(self.to_arrow().to_pylist())

    def take(self, indices) -> pa.Array:
        """Decode the strings at ``indices`` (a null index gives a null) into a new pa.Array.

        Only the selected strings are decoded (after one :meth:`validate`, so that a corrupt
        column raises here as in :func:`fsstgpu.decompress`). Negative indices count from
        the end.

        Parameters
        ----------
        indices : sequence of int (None for a null), numpy integer array, or pyarrow integer Array
            Positions to take, in any order, repeats allowed.

        Returns
        -------
        pyarrow.Array
            Of the original type (a plain Array even when the input was chunked).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> carr = fsstgpu.compress(pa.array([b"x", b"yy", None], pa.binary()))
        >>> carr.take([1, -1, 0]).to_pylist()
        [b'yy', None, b'x']
        """
        return take_rows(self, indices)

    # ------------------------------------------------------------------ statistics
    def stats(self) -> dict:
        """Sizes and compression ratios.

        Returns
        -------
        dict
            ``strings``, ``null_count``, ``blocks``, ``splits``; ``uncompressed_bytes`` (string
            bytes), ``arrow_bytes`` (the original Arrow buffers: data, offsets, validity; view
            types counted as their large type), ``codes_bytes``, ``table_bytes`` (every table
            serialised), ``stored_bytes`` (``len(to_bytes())``); ``ratio`` =
            uncompressed / (codes + tables), the figure FSST papers quote; ``stored_ratio`` =
            uncompressed / stored; ``arrow_ratio`` = arrow / stored.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> s = fsstgpu.compress(pa.array(["abcabcabc"] * 100)).stats()
        >>> s["ratio"] > 2, s["stored_bytes"] > s["codes_bytes"]
        (True, True)
        """
        uncompressed = self.uncompressed_bytes
        codes_bytes = len(self.codes)
        table_bytes = sum(t.nbytes_serialised() for t in self.tables)
        stored = installed_blob_format("dumped_size")(self)  # len(self.to_bytes()), unwritten
        width = 4 if narrow_offsets(self.type) else 8
        chunks = 1 if self.chunk_lengths is None else len(self.chunk_lengths)
        arrow_bytes = (uncompressed + width * (self.length + chunks)
                       + (0 if self.validity is None else len(self.validity)))

        def ratio(a, b):
            return a / b if b else float("nan")

        return {
            "strings": self.length,
            "null_count": self.null_count,
            "blocks": len(self.tables),
            "splits": len(self.split_table),
            "uncompressed_bytes": uncompressed,
            "arrow_bytes": arrow_bytes,
            "codes_bytes": codes_bytes,
            "table_bytes": table_bytes,
            "stored_bytes": stored,
            "ratio": ratio(uncompressed, codes_bytes + table_bytes),
            "stored_ratio": ratio(uncompressed, stored),
            "arrow_ratio": ratio(arrow_bytes, stored),
        }

    # ------------------------------------------------------------------ serialisation
    def to_bytes(self, *, store_code_offsets: bool = False) -> bytes:
        """Serialise to the standalone blob format (``formats/blob.md``).

        Parameters
        ----------
        store_code_offsets : bool
            Also store the per-string code lengths. By default they are left out (about 8%
            smaller on dbtext) and :meth:`from_bytes` recovers them from the codes and lengths
            in one pass over the codes, which its validation makes anyway.

        Raises
        ------
        ValueError
            For a column of more chunks than its blob may hold (more than 65536 plus one per
            16 blob bytes: ``formats/blob.md``); combine the chunks first.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> carr = fsstgpu.compress(pa.array(["abc", None]))
        >>> fsstgpu.CompressedStringArray.from_bytes(carr.to_bytes()).equals(carr)
        True
        """
        return installed_blob_format("dumps")(self, store_code_offsets=store_code_offsets)

    @classmethod
    def from_bytes(cls, data) -> CompressedStringArray:
        """Read a blob written by :meth:`to_bytes`, fully validated.

        Raises
        ------
        CorruptDataError
            If the blob is truncated, mis-sized or altered; the message says what is wrong.

        Examples
        --------
        >>> import fsstgpu
        >>> fsstgpu.CompressedStringArray.from_bytes(b"FSGB")
        Traceback (most recent call last):
        ...
        fsstgpu.errors.CorruptDataError: blob truncated: 4 bytes, the header needs 68
        """
        return installed_blob_format("loads")(data)

    def equals(self, other) -> bool:
        """Whether every field of ``other`` equals this one's.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> col = pa.array(["x", "y"])
        >>> fsstgpu.compress(col).equals(fsstgpu.compress(col))
        True
        >>> fsstgpu.compress(col).equals(fsstgpu.compress(col, split_size=1))
        False
        """
        if not isinstance(other, CompressedStringArray):
            return False
        if (self.type, self.length, self.tables, self.null_count, self.split_size) != (
                other.type, other.length, other.tables, other.null_count, other.split_size):
            return False
        for name in _INT_FIELDS:
            if not np.array_equal(getattr(self, name), getattr(other, name)):
                return False
        for name in ("validity", "chunk_lengths"):
            a, b = getattr(self, name), getattr(other, name)
            if (a is None) != (b is None) or (a is not None and not np.array_equal(a, b)):
                return False
        return True

    # ------------------------------------------------------------------ validation
    def validate(self, *, full: bool = True) -> None:
        """Check every invariant of the contract; raise CorruptDataError naming the first broken.

        Parameters
        ----------
        full : bool
            Also walk every code (O(codes), compiled): each string's codes must decode with its
            block's table to exactly its length, and every split must start on a code boundary
            at its output position. Without it only the O(strings) structural checks run, which
            are what the decoders need to stay inside their buffers (they check the codes of
            each split as they decode it).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> fsstgpu.compress(pa.array(["ok"])).validate()
        """
        full = flag(full, "full")
        if self._validated or (self._checked and not full):
            return
        if not self._checked:
            check_structure(self)
            self._checked = True
        if full:
            code_offsets = self._code_offsets
            derived, _, _ = walk(self.tables, self.block_starts, self.codes,
                                 code_offsets=code_offsets, lengths=self.lengths,
                                 mode=OFFSETS if code_offsets is None else CHECK,
                                 split_codes=self.split_codes, split_out=self.split_out)
            if code_offsets is None:
                self.code_offsets = derived
            self._checked = self._validated = True
