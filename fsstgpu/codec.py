"""PLACEHOLDER: compress / decompress / Codec (core issue)."""


def compress(array, table=None):
    raise NotImplementedError


def decompress(carr, device="auto", stream=None):
    raise NotImplementedError


class Codec:
    pass
