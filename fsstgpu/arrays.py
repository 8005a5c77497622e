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
                                               ``[0] == 0``, ``[-1] == ncodes``
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
=================  ==========================  ================================================

Split points: a split starts at every block start and at the first code boundary at or after
every multiple of S uncompressed bytes (inside long strings too), so that decoding the codes
``split_codes[k]:split_codes[k+1]`` with table ``split_table[k]`` yields exactly the output bytes
``split_out[k]:split_out[k+1]`` of the Arrow data buffer. Codes of consecutive strings decode to
consecutive output, so a split needs no string index: this is what lets the GPU give every thread
equal *uncompressed* work whatever the string lengths. A code boundary is never between an escape
(255) and its literal byte. Splits never cross a block boundary.
"""

from __future__ import annotations


class CompressedStringArray:
    """PLACEHOLDER: implemented by the core issue (fields per the contract above)."""
