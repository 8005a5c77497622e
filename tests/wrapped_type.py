"""Shared by tests of walks that must look through an extension type to its storage."""

from __future__ import annotations

import pyarrow as pa


class WrappedType(pa.ExtensionType):
    """An unregistered extension type over ``storage``, serialised as nothing."""

    def __init__(self, storage):
        super().__init__(storage, "fsstgpu.test.wrapped")

    def __arrow_ext_serialize__(self):
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls(storage_type)
