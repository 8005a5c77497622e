"""The runs inside a column's pages decoded with one code for NumPy (the host's twins) and
CuPy (the device's kernels), and the checks of what they hold, read back at once: shared by
:mod:`fsstgpu.formats.page_columns` and :mod:`fsstgpu.formats.page_prefixes`.

>>> import numpy as np
>>> from fsstgpu.formats.page_runs import Checks, decode_runs
>>> checks = Checks(np, "f: column s")
>>> data = np.frombuffer(bytes([3 << 1, 7]), np.uint8)  # a run of three 7s
>>> decode_runs("rle", data, np, checks, [0], [2], [3], [1], 5, ["page 0"], [3])[0].tolist()
[0, 7, 7, 7, 0]
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import host_array
from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.page_decode import (
    Jobs,
    check_jobs,
    delta_binary_packed_jobs,
    delta_binary_packed_jobs_cpu,
    rle_hybrid_jobs,
    rle_hybrid_jobs_cpu,
)

__all__ = ["Checks", "decode_runs"]


class Checks:
    """The decode's checks, read back at once: the runs' error codes (with their pages'
    names) and boolean flags (with what each says).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.formats.page_runs import Checks
    >>> checks = Checks(np, "f: column s")
    >>> checks.flag(np.array([False, True]), "a bad value")
    >>> checks.raise_first()
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: f: column s: a bad value
    """

    def __init__(self, xp, where: str):
        self.xp, self.where = xp, where
        self.runs, self.flags = [], []

    def run(self, errors, names) -> None:
        if errors is not None:
            self.runs.append((errors, names))

    def flag(self, bad, what: str) -> None:
        self.flag_hit(self.xp.any(bad), what)

    def flag_hit(self, hit, what: str) -> None:
        """A flag already reduced to one value (an ``xp`` bool array of one)."""
        self.flags.append((hit.reshape(1), [what]))

    def flag_each(self, bad, whats) -> None:
        """A flag a row of the 2-D ``bad``, each saying its ``whats``' entry (one pass, and
        kept as one array: no device call a row)."""
        self.flags.append((self.xp.any(bad, axis=1), list(whats)))

    def raise_first(self, values=()) -> list[int]:
        """Raise the first run's error, else the first flag's; else return ``values`` (device
        or host integer scalars) as host ints. All read back in one copy: each read back on
        its own waits for the device."""
        xp = self.xp
        parts = [xp.asarray(errors, xp.int64).reshape(-1) for errors, _ in self.runs]
        parts += [hits.astype(xp.int64) for hits, _ in self.flags]
        parts += [xp.asarray(v, xp.int64).reshape(1) for v in values]
        got = host_array(xp.concatenate(parts)).tolist() if parts else []
        at = 0
        for errors, names in self.runs:  # (host: the twins raised already)
            check_jobs(np.asarray(got[at : at + int(errors.size)], np.int32), names=names)
            at += int(errors.size)
        whats = [what for _, group in self.flags for what in group]
        for hit, what in zip(got[at : at + len(whats)], whats, strict=True):
            if hit:
                raise CorruptDataError(f"{self.where}: {what}")
        self.runs, self.flags = [], []
        return got[at + len(whats) :]


def decode_runs(kind: str, data, xp, checks: Checks, start, size, counts, at, total: int,
                 names, width=None):
    """The runs ``start``/``size`` (host int64 a page) of ``counts`` values each (host or
    device), placed at ``at`` of an output of ``total`` values (``width``: an RLE run's bit
    widths): ``(values, ends)``, the device's errors handed to ``checks`` (the twins raise).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.formats.page_runs import Checks, decode_runs
    >>> run = np.frombuffer(bytes([128, 1, 4, 2, 2, 0, 0, 0, 0, 0]), np.uint8)  # 1, 1
    >>> decode_runs("delta", run, np, Checks(np, "x"), [0], [10], [2], [0], 2, ["p"])[0]
    array([1, 1])
    """
    if xp is np:
        jobs = Jobs(start, size, counts, width=width)
        twin = rle_hybrid_jobs_cpu if kind == "rle" else delta_binary_packed_jobs_cpu
        values, ends = twin(data, jobs, names=names)
        out = np.zeros(total, values.dtype)
        out[np.repeat(np.asarray(at, np.int64) - jobs.at, jobs.count) +
            np.arange(jobs.total)] = values
        return out, ends
    jobs = Jobs(start, size, np.zeros(len(start), np.int64), width=width)
    device = rle_hybrid_jobs if kind == "rle" else delta_binary_packed_jobs
    values, ends, errors = device(data, jobs, placed=(counts, at, total))  # (host or device:
    #                                                   the host's uploaded with the jobs')
    checks.run(errors, names)
    return values, ends
