"""PLACEHOLDER: FSST symbol-table training (core issue)."""


def train(strings, *, sample_bytes=None):
    raise NotImplementedError
