"""Integer randomness for the dataset generators: the same bytes on every machine.

Draws come only from the raw 64-bit output of PCG64 (``numpy.random.Generator(PCG64(...))``'s bit
generator) seeded through a ``SeedSequence`` of ``(crc32(name), seed)``; NumPy guarantees that raw
stream across versions, whereas its distribution methods may change (NEP 19). Every draw is turned
into integers with integer arithmetic only, and bytes are read little-endian.

>>> from fsstgpu.datasets.randomness import Random
>>> Random("x", 1).between(3, 5, 9).tolist() == Random("x", 1).between(3, 5, 9).tolist()
True
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

__all__ = ["Random", "zipf_weights"]


class Random:
    """Integer draws from PCG64's raw output, which NumPy keeps stable across versions."""

    def __init__(self, name: str, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        # crc32, not hash(): Python's str hash is randomised per process.
        sequence = np.random.SeedSequence([zlib.crc32(name.encode()), int(seed)])
        self._bits = np.random.Generator(np.random.PCG64(sequence)).bit_generator

    def raw(self, n: int) -> np.ndarray:
        return self._bits.random_raw(int(n)).astype(np.uint64, copy=False)

    def below(self, n: int, bound) -> np.ndarray:
        """``n`` integers uniform in ``[0, bound)``; ``bound`` (< 2**32) may be an array."""
        if np.any(np.asarray(bound) >= 2**32):
            raise ValueError("bound must be below 2**32")  # the product below would overflow
        high = self.raw(n) >> np.uint64(32)
        return ((high * np.asarray(bound, dtype=np.uint64)) >> np.uint64(32)).astype(np.int64)

    def between(self, n: int, low: int, high: int) -> np.ndarray:
        """``n`` integers uniform in ``[low, high]``."""
        return low + self.below(n, high - low + 1)

    def percent(self, n: int, p: int) -> np.ndarray:
        """``n`` booleans, each true with probability ``p`` percent."""
        return self.below(n, 100) < p

    def weighted(self, n: int, weights: Sequence[int]) -> np.ndarray:
        """``n`` indices drawn with the given integer weights."""
        cumulative = np.cumsum(np.asarray(weights, dtype=np.int64))
        return np.searchsorted(cumulative, self.below(n, int(cumulative[-1])), side="right")

    def zipf(self, n: int, k: int) -> np.ndarray:
        """``n`` indices in ``[0, k)``, index i drawn with weight about 1/(i+1)."""
        return self.weighted(n, zipf_weights(k))

    def bytes(self, n: int) -> np.ndarray:
        """``n`` uniform bytes (uint8), the same on little- and big-endian machines."""
        words = self.raw((n + 7) // 8).astype("<u8", copy=False)
        return words.view(np.uint8)[:n]

    def log_lengths(self, n: int, low_bits: int, high_bits: int) -> np.ndarray:
        """Lengths spread evenly over the octaves ``[2**low_bits, 2**high_bits)``."""
        octave = self.between(n, low_bits, high_bits - 1)
        return (np.int64(1) << octave) + self.below(n, np.uint64(1) << octave.astype(np.uint64))


def zipf_weights(k: int) -> list[int]:
    return [max(1, 1_000_000 // (i + 1)) for i in range(k)]


# --------------------------------------------------------------------------------------------
# Building Arrow arrays without Python loops.
