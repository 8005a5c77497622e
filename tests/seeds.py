"""Shared by the tests that draw random inputs: a fresh seed for each test (each names it in
its failure messages, or the ``fresh_rng`` fixture's report does, so that a failing draw can be
run again: ``FSSTGPU_TEST_SEED=<seed> pytest tests/test_x.py::test_y``)."""

from __future__ import annotations

import os


def fresh_seed() -> int:
    """A seed from os.urandom (the tests name it in their failures), or FSSTGPU_TEST_SEED's
    (a failure's draw again)."""
    given = os.environ.get("FSSTGPU_TEST_SEED")
    return int(given) if given else int.from_bytes(os.urandom(8), "little")
