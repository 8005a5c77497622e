"""GSST word-interleaved code layout (fsstgpu.kernels.gsst_decode): the NumPy twin everywhere;
on a GPU, the device layout equal to the twin byte for byte and the thread-per-split decode equal
to the CPU decoder byte for byte (output poisoned first, decoded into a longer buffer so that a
byte written past the end shows), and its error bits on corrupt input.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.datasets import generate, load_lines
from fsstgpu.gpu_layout import HostBatch
from fsstgpu.kernels.fsst_decode import error_message
from fsstgpu.kernels.gsst_decode import (
    BAD_SPLIT,
    STREAM_ALIGN,
    interleave_codes_cpu,
    layout_shape,
    stream_codes,
)

POISON = 0xAB
KINDS = ("emails", "urls", "log_lines", "long_strings", "multilingual", "binary", "null_heavy")


def _columns(seed: int) -> list:
    """Compressed columns of several kinds with random split sizes (splits start anywhere)."""
    rng = np.random.default_rng(seed)
    out = []
    for kind in KINDS:
        col = generate(kind, 1500, int(rng.integers(1 << 30)))
        out.append(fsstgpu.compress(col, split_size=int(rng.choice([16, 77, 1000, 4096]))))
    raw = [bytes(rng.integers(0, 256, int(rng.integers(0, 60)), dtype=np.uint8))
           for _ in range(1500)]  # escapes everywhere, 0xFF literals included
    out.append(fsstgpu.compress(pa.array(raw, pa.binary()), split_size=64))
    return out


def _codes(carrs) -> tuple[HostBatch, np.ndarray]:
    batch = HostBatch(carrs)
    codes = np.concatenate([c.codes for c in carrs]) if batch.ncodes else np.zeros(0, np.uint8)
    return batch, codes


# ---------------------------------------------------------------- CPU twin (runs everywhere)
@pytest.mark.parametrize("seed", [0, 1])
def test_twin_gives_back_every_split(seed):
    for carr in _columns(seed):
        sc = carr.split_codes
        layout = interleave_codes_cpu(carr.codes, sc)
        wmax, nstreams = layout_shape(sc)
        assert layout.words.shape == (wmax, nstreams) and layout.words.dtype == np.uint32
        assert nstreams % STREAM_ALIGN == 0 and wmax % 2 == 0
        assert 4 * wmax >= int(np.diff(sc).max()) > 4 * (wmax - 2)
        for s in range(layout.nsplits):
            assert bytes(stream_codes(layout, s)) == bytes(carr.codes[sc[s] : sc[s + 1]])
        # the padding is zeros: every byte past a stream's count, and the empty streams
        flat = np.ascontiguousarray(layout.words.T).view(np.uint8)
        for s in range(nstreams):
            assert not flat[s, int(layout.nbytes[s]) :].any()
        assert not layout.nbytes[layout.nsplits :].any()


def test_twin_word_position():
    """Word w of stream s is at w * nstreams + s in the flat buffer."""
    codes = np.arange(200, dtype=np.uint8)
    sc = np.array([0, 7, 7, 40, 41, 200])
    layout = interleave_codes_cpu(codes, sc)
    flat = layout.words.reshape(-1)
    for s in range(5):
        n = int(sc[s + 1] - sc[s])
        for w in range(-(-n // 4)):
            chunk = codes[sc[s] + 4 * w : min(sc[s] + 4 * w + 4, sc[s + 1])]
            word = int.from_bytes(bytes(chunk), "little")
            assert int(flat[w * layout.nstreams + s]) == word


def test_twin_empty_and_bad_splits():
    empty = interleave_codes_cpu(np.zeros(0, np.uint8), np.array([0]))
    assert empty.words.shape == (0, 0) and empty.nsplits == 0
    codes = np.arange(64, dtype=np.uint8)
    # reversed, past the codes, longer than the layout: marked bad, left empty
    layout = interleave_codes_cpu(codes, np.array([0, 10, 5, 30, 70]))
    assert layout.nbytes[:4].tolist() == [10, BAD_SPLIT, 25, BAD_SPLIT]
    assert not layout.words[:, 1].any() and not layout.words[:, 3].any()
    short = interleave_codes_cpu(codes, np.array([0, 10, 30]), wmax=4)
    assert short.nbytes[:2].tolist() == [10, BAD_SPLIT]
    with pytest.raises(ValueError, match="bad split"):
        stream_codes(short, 1)


# ---------------------------------------------------------------- GPU
def _gpu_layout_matches_twin(carrs):
    import cupy as cp

    from fsstgpu.kernels.gsst_decode import interleave_codes, interleave_device

    batch, codes = _codes(carrs)
    twin = interleave_codes_cpu(codes, batch.split_codes)
    dev = fsstgpu.to_device(carrs)
    for layout in (interleave_device(dev), interleave_codes(dev.codes, dev.split_codes,
                                                            dev.ncodes)):
        assert layout.words.shape == twin.words.shape and layout.nsplits == twin.nsplits
        assert bytes(layout.words.get()) == bytes(twin.words)
        assert np.array_equal(layout.nbytes.get(), twin.nbytes)
    # a buffer that is not the device column's own (only GATHER_PAD bytes of padding)
    tight = cp.zeros(batch.ncodes + 8, cp.uint8)
    tight[: batch.ncodes] = cp.asarray(codes)
    layout = interleave_codes(tight, cp.asarray(batch.split_codes), batch.ncodes)
    assert bytes(layout.words.get()) == bytes(twin.words)
    return dev, layout


def _decode_matches_cpu(carrs, dev, layout):
    import cupy as cp

    from fsstgpu.kernels.gsst_decode import decode_device

    expect = np.concatenate([from_arrow(fsstgpu.decompress(c, device="cpu")).data
                             for c in carrs])
    for shift in (0, 3):  # an output that starts off 16-byte alignment
        buf = cp.full(dev.total + shift + 64, POISON, dtype=cp.uint8)
        out = buf[shift : shift + dev.total]
        err = cp.zeros(1, dtype=cp.int32)
        decode_device(dev, layout, out, err)
        bits = int(err.get()[0])
        assert bits == 0, error_message(bits)
        got = buf.get()
        assert bytes(got[shift : shift + dev.total]) == bytes(expect[: dev.total])
        assert (got[:shift] == POISON).all() and (got[shift + dev.total :] == POISON).all()


@pytest.mark.gpu
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gpu_layout_and_decode_random(seed):
    for carr in _columns(seed):
        dev, layout = _gpu_layout_matches_twin([carr])
        _decode_matches_cpu([carr], dev, layout)


@pytest.mark.gpu
def test_gpu_batch_and_tiny_columns():
    carrs = _columns(7)
    dev, layout = _gpu_layout_matches_twin(carrs)  # many tables: the global-memory table path
    _decode_matches_cpu(carrs, dev, layout)
    for col in (pa.array(["a"]), pa.array(["", None, "xyz"]), pa.array([b"\xff"], pa.binary())):
        carr = fsstgpu.compress(col)
        dev, layout = _gpu_layout_matches_twin([carr])
        _decode_matches_cpu([carr], dev, layout)


@pytest.mark.gpu
def test_gpu_dbtext(dbtext_paths):
    carrs = []
    for path in dbtext_paths:
        carr = fsstgpu.compress(load_lines(path))
        dev, layout = _gpu_layout_matches_twin([carr])
        _decode_matches_cpu([carr], dev, layout)
        carrs.append(carr)
    dev, layout = _gpu_layout_matches_twin(carrs)  # every file, one batch
    _decode_matches_cpu(carrs, dev, layout)


@pytest.mark.gpu
def test_gpu_decode_reports_corrupt_input():
    import cupy as cp

    from fsstgpu.kernels.gsst_decode import InterleavedCodes, decode_interleaved, interleave_device

    carr = fsstgpu.compress(generate("emails", 2000, 5), split_size=200)
    dev = fsstgpu.to_device(carr)
    layout = interleave_device(dev)

    def bits(nbytes=None, split_out=None, split_table=None, tab_len=None, words=None):
        lay = InterleavedCodes(layout.words if words is None else words,
                               layout.nbytes if nbytes is None else nbytes, layout.nsplits)
        buf = cp.full(dev.total + 64, POISON, dtype=cp.uint8)
        err = cp.zeros(1, dtype=cp.int32)
        decode_interleaved(lay, dev.split_out if split_out is None else split_out,
                           dev.split_table if split_table is None else split_table, dev.tab_sym,
                           dev.tab_len if tab_len is None else tab_len, dev.ntables,
                           buf[: dev.total], dev.total, err)
        assert (buf[dev.total :].get() == POISON).all()  # never past the output
        return int(err.get()[0])

    nb = layout.nbytes.copy()
    nb[3] = 4 * layout.wmax + 1
    assert bits(nbytes=nb) == 1
    nb = layout.nbytes.copy()
    nb[3] -= 1
    assert bits(nbytes=nb) & (4 | 16)
    st = dev.split_table.copy()
    st[2] = 9
    assert bits(split_table=st) == 32
    assert bits(tab_len=cp.zeros_like(dev.tab_len)) & 2
    so = dev.split_out.copy()
    so[4] += 3
    assert bits(split_out=so) == 8 | 16
    so = dev.split_out.copy()
    so[-1] += 1
    assert bits(split_out=so) & 1
    rng = np.random.default_rng(3)
    for _ in range(20):  # garbage words: any bits, but nothing outside the buffers
        bits(words=cp.asarray(rng.integers(0, 2**32, layout.words.shape, dtype=np.uint32)))
