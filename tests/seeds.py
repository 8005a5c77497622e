"""Shared by the tests that draw random inputs: a fresh seed for each test (each names it in
its failure messages, so that a failing draw can be run again)."""

from __future__ import annotations

import os


def fresh_seed() -> int:
    """A seed from os.urandom (the tests name it in their failures)."""
    return int.from_bytes(os.urandom(8), "little")
