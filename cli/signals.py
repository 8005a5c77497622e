"""Stopping the command line cleanly: SIGINT, SIGTERM and SIGHUP all end a command the same way.

Python turns SIGINT (Ctrl-C) into KeyboardInterrupt; the other two would end the process on the
spot, leaving a half-written temporary file behind. Inside :func:`stop_signals` each of the
three raises :class:`Stopped` (a KeyboardInterrupt) instead, so the same clean-up runs (the
temporary file is removed, see :mod:`fsstgpu.formats.atomic`) and the command exits with
``128 + signal number``, the shell's convention (130 for Ctrl-C, 143 for SIGTERM, 129 for
SIGHUP).

An interrupt raised where Python cannot pass it on (in a callback or a finaliser: Python prints
"Exception ignored in ..." and carries on) is remembered, so the command still exits as
interrupted rather than 0; such ignored interrupts are not printed.
"""

from __future__ import annotations

import contextlib
import signal
import sys

__all__ = ["STOP_SIGNALS", "Stopped", "stop_signals"]

#: The signals that stop a command cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The command was stopped by signal ``signum``; the process should exit with ``exit_code``.

    Examples
    --------
    >>> import signal
    >>> from fsstgpu.cli.signals import Stopped
    >>> stop = Stopped(signal.SIGTERM)
    >>> stop.exit_code, str(stop)
    (143, 'SIGTERM')
    """

    def __init__(self, signum: int):
        self.signum = int(signum)
        self.exit_code = 128 + self.signum
        super().__init__(signal.Signals(self.signum).name)


@contextlib.contextmanager
def stop_signals():
    """Within the block, the :data:`STOP_SIGNALS` raise :class:`Stopped`; yields the list of
    signal numbers received (also those whose exception Python had to ignore).

    A signal that is ignored when the block starts (``nohup`` ignores SIGHUP, a shell ignores
    SIGINT for background jobs) stays ignored. Only the main thread can set handlers; elsewhere
    the block changes nothing.
    """
    received: list[int] = []

    def handler(signum, frame):
        received.append(signum)
        raise Stopped(signum)

    def unraisable(info):
        if isinstance(info.exc_value, KeyboardInterrupt) and received:
            return  # remembered in ``received``; the command exits as interrupted
        previous_hook(info)

    previous = {}
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread
        pass
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield received
    finally:
        sys.unraisablehook = previous_hook
        for signum, old in previous.items():
            signal.signal(signum, old)
