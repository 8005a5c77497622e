"""``FsstCodec``: FSST as zarr v3's array-to-bytes codec ("serializer") for fixed-width strings.

In zarr v3 an array's chunks are turned into bytes by one array-to-bytes codec; this class puts
the numcodecs codec :class:`fsstgpu.integrations.numcodecs.FSST` in that place, so every chunk is
stored FSST-compressed (one symbol table per chunk). Its name in the array metadata is
``"numcodecs.fsst"``, following zarr's naming of numcodecs codecs; zarr finds the class through
the entry point ``zarr.codecs: numcodecs.fsst`` that the package declares. Needs zarr >= 3;
nothing in fsstgpu imports this module.

Which arrays: fixed-width strings, numpy dtype ``U`` (zarr's ``fixed_length_utf32``) or ``S``
(``null_terminated_bytes``). Not zarr's variable-length ``str`` dtype: zarr-python 3.1 accepts
only its own ``vlen-utf8`` codec as the serializer of that dtype (it checks the codec's class
name), and in the zarr v2 format it ties object arrays to a fixed list of object codec ids.

>>> import numpy as np, zarr
>>> from fsstgpu.integrations.zarr import FsstCodec
>>> data = np.array(["http://a.example/1", "http://a.example/22", "", "b"])
>>> z = zarr.create_array(store={}, shape=data.shape, chunks=(2,), dtype=data.dtype,
...                       serializer=FsstCodec())
>>> z[:] = data
>>> z[:].tolist()
['http://a.example/1', 'http://a.example/22', '', 'b']
"""

from __future__ import annotations

from dataclasses import dataclass

from zarr.abc.codec import ArrayBytesCodec

from fsstgpu.integrations.numcodecs import FSST

__all__ = ["NAME", "FsstCodec"]

#: The codec's name in zarr v3 array metadata.
NAME = "numcodecs.fsst"


@dataclass(frozen=True)
class FsstCodec(ArrayBytesCodec):
    """zarr v3 array-to-bytes codec: each chunk encoded by
    :class:`~fsstgpu.integrations.numcodecs.FSST` (no parameters). Give it as
    ``serializer=FsstCodec()`` to ``zarr.create_array`` for an array of dtype ``U`` or ``S``."""

    is_fixed_size = False

    @classmethod
    def from_dict(cls, data) -> FsstCodec:
        if not isinstance(data, dict) or data.get("name") != NAME:
            raise ValueError(f"expected the {NAME!r} codec, got {data!r}")
        if data.get("configuration"):
            raise ValueError(f"{NAME} takes no configuration, got {data['configuration']!r}")
        return cls()

    def to_dict(self) -> dict:
        return {"name": NAME, "configuration": {}}

    def validate(self, *, shape, dtype, chunk_grid) -> None:
        """Refuse, when the array is created, a dtype whose chunks FSST cannot encode (an
        integer array was created and failed at its first write)."""
        native = dtype.to_native_dtype()
        if native.kind not in "USOT":
            raise TypeError(f"{NAME} stores arrays of strings (numpy dtype U or S), not {native}")

    def _decode_sync(self, chunk_bytes, chunk_spec):
        decoded = FSST().decode(chunk_bytes.to_bytes()).reshape(chunk_spec.shape)
        # the stored dtype is what was written; zarr's in-memory dtype for strings may differ
        # (object vs StringDType): convert as zarr's own vlen-utf8 codec does
        native = decoded.astype(chunk_spec.dtype.to_native_dtype(), copy=False)
        return chunk_spec.prototype.nd_buffer.from_numpy_array(native)

    def _encode_sync(self, chunk_array, chunk_spec):
        return chunk_spec.prototype.buffer.from_bytes(FSST().encode(chunk_array.as_numpy_array()))

    async def _decode_single(self, chunk_bytes, chunk_spec):
        return self._decode_sync(chunk_bytes, chunk_spec)

    async def _encode_single(self, chunk_array, chunk_spec):
        return self._encode_sync(chunk_array, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec) -> int:
        raise NotImplementedError("FSST output size depends on the data")
