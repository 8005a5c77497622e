"""Launch geometry and arguments that the driver's unsigned and fixed-width parameters cannot
hold are refused on the host (kernels/driver.py's Launch): ctypes wraps them without a word, so
a grid of 2**32 + 5 blocks launched 5 and left the rest of the output unwritten. No GPU needed.
"""

from __future__ import annotations

import ctypes

import pytest

from fsstgpu.kernels.driver import MAX_BLOCK, MAX_GRID, Launch


@pytest.mark.parametrize("grid", [MAX_GRID + 1, 2**32, 2**32 + 5, -1])
def test_a_grid_the_driver_cannot_take_is_refused(grid):
    with pytest.raises(ValueError, match="blocks"):
        Launch(None, grid, 256, [(ctypes.c_void_p, 0)])


@pytest.mark.parametrize("block", [MAX_BLOCK + 1, 2**32 + 32, -32])
def test_a_block_the_driver_cannot_take_is_refused(block):
    with pytest.raises(ValueError, match="threads"):
        Launch(None, 1, block, [(ctypes.c_void_p, 0)])


@pytest.mark.parametrize(("ctype", "value"), [
    (ctypes.c_int64, 2**63), (ctypes.c_int32, 2**31), (ctypes.c_int32, -2**31 - 1),
    (ctypes.c_uint32, 2**32), (ctypes.c_uint32, -1), (ctypes.c_uint64, 2**64),
    (ctypes.c_uint64, -1), (ctypes.c_void_p, -1), (ctypes.c_void_p, 2**64)])
def test_an_argument_its_type_cannot_hold_is_refused(ctype, value):
    with pytest.raises(ValueError, match="does not fit"):
        Launch(None, 1, 32, [(ctype, value)])


def test_the_largest_launch_and_arguments_are_taken():
    launch = Launch(None, MAX_GRID, MAX_BLOCK,
                    [(ctypes.c_void_p, 0), (ctypes.c_void_p, 2**64 - 1), (ctypes.c_int64, -2**63),
                     (ctypes.c_uint64, 2**64 - 1), (ctypes.c_int32, 2**31 - 1),
                     (ctypes.c_uint32, 2**32 - 1)])
    assert launch.grid == MAX_GRID and launch.block == MAX_BLOCK
    assert [c.value or 0 for c in launch.cells] == [0, 2**64 - 1, -2**63, 2**64 - 1, 2**31 - 1,
                                                    2**32 - 1]
