"""The host flag slots' bookkeeping (kernels/host_flags.py), on plain memory: no GPU needed.

The GPU side (a planned decode's last kernel writing a slot, more decodes in flight than slots)
is tests/test_gpu_planned_decode.py's.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.kernels.host_flags import SLOT_INTS, FlagSlots


class _Event:
    """A stand-in for a CUDA event: done once the test says so."""

    def __init__(self):
        self.done = False


def _slots(n: int):
    block = np.zeros(n * SLOT_INTS, np.int32)
    return block, FlagSlots(n, allocate=lambda nbytes: (block.ctypes.data, 0))


def test_every_slot_once_then_none():
    _, slots = _slots(4)
    taken = [slots.acquire() for _ in range(5)]
    assert sorted(taken[:4]) == [0, 1, 2, 3] and taken[4] is None
    slots.release(taken[2])
    assert slots.acquire() == taken[2]


def test_a_dropped_decode_slot_waits_for_its_event():
    _, slots = _slots(2)
    a, b = slots.acquire(), slots.acquire()
    first, second = _Event(), _Event()
    slots.release_after(a, first)
    slots.release_after(b, second)
    assert slots.acquire() is None, "no slot is free before its event is done"
    second.done = True
    assert slots.acquire() == b
    assert slots.acquire() is None
    first.done = True
    assert slots.acquire() == a


def test_read_returns_a_slot_flags():
    block, slots = _slots(3)
    block[SLOT_INTS * 2 : SLOT_INTS * 2 + 3] = [5, 0, 64]
    assert slots.read(2, 3) == [5, 0, 64]
    assert slots.host_address(2) - slots.host_address(0) == 8 * SLOT_INTS
