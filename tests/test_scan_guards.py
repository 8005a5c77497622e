"""fsstgpu.scan's checks of what it is handed, each on its own (test_scan.py's reference walk
takes them as given; a mutation campaign found none of them failing a test)."""

from __future__ import annotations

import numpy as np
import pytest

from fsstgpu import CorruptDataError, SymbolTable
from fsstgpu.scan import CHECK, LENGTHS, LONG, OFFSETS, check_codes, walk

AB = SymbolTable([b"ab"])
CODES = np.array([0, 0], np.uint8)  # "abab" as one string, or "ab" "ab"


@pytest.mark.parametrize("block_starts", [[0, 1, 1], [0], np.array([[0], [1]]), []])
def test_block_starts_of_the_wrong_shape(block_starts):
    with pytest.raises(CorruptDataError, match=r"block_starts has \d+ entries, expected 2"):
        check_codes([AB], block_starts, CODES, np.array([0, 2]), np.array([4]))


@pytest.mark.parametrize("block_starts", [[1, 1], [0, 0], [0, 2], [-1, 1]])
def test_block_starts_not_from_0_to_the_strings(block_starts):
    with pytest.raises(CorruptDataError, match="block_starts must run from 0 to the 1 strings"):
        check_codes([AB], block_starts, CODES, np.array([0, 2]), np.array([4]))


@pytest.mark.parametrize("mode", [CHECK, OFFSETS, LENGTHS, LONG])
def test_block_starts_decreasing_between_right_ends(mode):
    offsets, lengths = np.array([0, 1, 2]), np.array([2, 2])
    with pytest.raises(CorruptDataError, match="block_starts must be non-decreasing"):
        walk([AB] * 3, [0, 2, 1, 2], CODES, code_offsets=offsets, lengths=lengths, mode=mode,
             cut_size=1)


def test_block_starts_at_their_bounds_are_accepted():
    # an empty block first and last, and one equal start after another
    offsets, lengths = np.array([0, 1, 2]), np.array([2, 2])
    check_codes([AB] * 4, [0, 0, 1, 2, 2], CODES, offsets, lengths)
    assert walk([AB] * 3, [0, 1, 1, 2], CODES, code_offsets=offsets,
                mode=LENGTHS)[1].tolist() == [2, 2]


@pytest.mark.parametrize("mode, lengths", [(CHECK, [2]), (CHECK, [2, 2, 0]), (LONG, [2])])
def test_lengths_of_another_count_than_the_offsets(mode, lengths):
    with pytest.raises(CorruptDataError, match=rf"^{len(lengths)} lengths for 2 strings$"):
        walk([AB], [0, 2], CODES, code_offsets=np.array([0, 1, 2]), lengths=np.array(lengths),
             mode=mode, cut_size=1 if mode == LONG else 0)


@pytest.mark.parametrize("mode, lengths", [(OFFSETS, [-2, 6]), (CHECK, [-1, 5]),
                                           (CHECK, [6, -2]), (LONG, [0, -1])])
def test_a_negative_length_is_refused_without_cuts(mode, lengths):
    # (with cuts asked for, native length_sums refuses it: test_scan.py)
    offsets = None if mode == OFFSETS else np.array([0, 1, 2])
    with pytest.raises(CorruptDataError, match="^lengths must be non-negative$"):
        walk([AB], [0, 2], CODES, code_offsets=offsets, lengths=np.array(lengths), mode=mode)
