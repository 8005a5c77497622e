"""A planned launch's argument cells (kernels/driver.py's Launch), on plain memory: no GPU needed.

:class:`~fsstgpu.kernels.driver.Replay` hands a graph node new arguments only when its launch
says one changed; the GPU side (replays whose pointers move and stay, checked against the CPU
twin) is tests/test_gpu_planned_decode.py's.
"""

from __future__ import annotations

import ctypes

from fsstgpu.kernels.driver import Launch


def test_a_cell_set_to_a_new_value_marks_the_launch_changed():
    launch = Launch(None, 1, 32, [(ctypes.c_void_p, 4096), (ctypes.c_int64, 5)])
    assert launch.changed, "a new launch has never been handed to a graph node"
    launch.changed = False  # what a Replay does once the node holds the values
    launch.set(0, 4096)
    launch.set(1, 5)
    assert not launch.changed, "the same values again: nothing for the driver"
    launch.set(1, 6)
    assert launch.changed and launch.cells[1].value == 6
    launch.changed = False
    launch.set(0, 8192)
    assert launch.changed and launch.cells[0].value == 8192
