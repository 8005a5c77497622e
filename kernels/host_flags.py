"""Slots of pinned host memory that kernels write a decode's error flags into.

A decode's flags used to come back by a device-to-host copy after the kernels: a driver call and
a round trip over the bus (~11 us on the H200 host, a third of a 1 MiB call). Instead the planned
call's kernel (the last of its blocks to finish: ``decode_planned`` in ``fsst_decode.cu``)
writes them into a slot of host memory the device can address, and the host reads the slot
after its one stream sync.

A slot belongs to one decode from :meth:`FlagSlots.acquire` until :meth:`FlagSlots.release`,
which its owner calls once it has synchronised with the stream the kernel ran on (the kernel
has then written the slot, and writes nothing after). A decode dropped unchecked hands its slot
back through :meth:`FlagSlots.release_after`: the slot is reused only once an event recorded on
the decode's stream has completed. When every slot is taken, :meth:`acquire` returns None and
the caller reads its flags back the old way.

The memory is allocated once per process through the CUDA driver (portable and mapped, so every
device and context can write it) and never freed: :data:`NSLOTS` slots of :data:`SLOT_INTS`
int32.

>>> from fsstgpu.kernels.host_flags import NSLOTS, SLOT_INTS
>>> NSLOTS * SLOT_INTS * 4
16384
"""

from __future__ import annotations

import ctypes
import functools
import threading

from fsstgpu.kernels.driver import alloc_host_mapped

__all__ = ["NSLOTS", "SLOT_INTS", "FlagSlots", "flag_slots"]

#: slots in the process: decodes in flight and not yet checked at once
NSLOTS = 256
#: int32 flags a slot holds (a batch has one per column and one for the decode)
SLOT_INTS = 16


class FlagSlots:
    """``nslots`` slots of :data:`SLOT_INTS` int32 in pinned, device-mapped host memory.

    Parameters
    ----------
    nslots : int
        Slots in the block.
    allocate : callable, optional
        ``allocate(nbytes) -> (host address, device address)`` of the block (default: pinned,
        portable, mapped memory from the CUDA driver, never freed).

    Attributes
    ----------
    host, device : int
        The block's host address and the address kernels write it through (equal under
        unified addressing).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.host_flags import FlagSlots
    >>> block = np.arange(32, dtype=np.int32)  # two slots of 16 in plain memory
    >>> slots = FlagSlots(2, allocate=lambda n: (block.ctypes.data, 0))
    >>> a, b, c = slots.acquire(), slots.acquire(), slots.acquire()
    >>> (a, b, c), slots.read(b, 3)
    ((0, 1, None), [16, 17, 18])
    """

    def __init__(self, nslots: int = NSLOTS, *, allocate=None):
        self.host, self.device = (allocate or alloc_host_mapped)(nslots * SLOT_INTS * 4)
        self._free = list(range(nslots - 1, -1, -1))
        self._waiting = []  # (event, slot): dropped decodes' slots, free once the event is done
        # reentrant: a decode dropped by the garbage collector while this thread holds the lock
        # (an allocation inside acquire) hands its slot back from inside
        self._lock = threading.RLock()

    def acquire(self) -> int | None:
        """A free slot's index, or None when every slot is taken."""
        with self._lock:
            if not self._free and self._waiting:
                waiting, self._waiting = self._waiting, []
                for event, slot in waiting:  # CuPy events: done queries the driver
                    if event.done:
                        self._free.append(slot)
                    else:
                        self._waiting.append((event, slot))
            return self._free.pop() if self._free else None

    def release(self, slot: int) -> None:
        """Hand ``slot`` back (its owner has synchronised with the kernel's stream)."""
        with self._lock:
            self._free.append(slot)

    def release_after(self, slot: int, event) -> None:
        """Hand ``slot`` back once ``event`` (recorded on the kernel's stream after it) is done."""
        with self._lock:
            self._waiting.append((event, slot))

    def host_address(self, slot: int) -> int:
        return self.host + 4 * SLOT_INTS * slot

    def device_address(self, slot: int) -> int:
        return self.device + 4 * SLOT_INTS * slot

    def read(self, slot: int, count: int) -> list[int]:
        """The first ``count`` flags of ``slot`` (after the stream sync)."""
        return list((ctypes.c_int32 * count).from_address(self.host_address(slot)))


@functools.cache
def flag_slots() -> FlagSlots:
    """The process's slots, allocated at the first call (the caller has a CUDA context)."""
    return FlagSlots()
