"""The compiled kernels' cache key covers the headers their sources include.

CuPy keys a compiled module by its source text and options; the headers a source includes are
read by the compiler, not hashed. The loader puts the headers' digest in the source's first line
(``module_source``), so a changed header compiles anew instead of reusing a stale binary."""

from __future__ import annotations

from fsstgpu.kernels.loader import SOURCE_DIR, cuda_source, headers_digest, module_source


def test_a_changed_header_changes_the_digest(tmp_path):
    (tmp_path / "a.cuh").write_text("#define X 1\n")
    (tmp_path / "k.cu").write_text('#include "a.cuh"\n')
    before = headers_digest(tmp_path)
    (tmp_path / "k.cu").write_text('#include "a.cuh" // edited\n')  # sources are keyed anyway
    assert headers_digest(tmp_path) == before
    (tmp_path / "a.cuh").write_text("#define X 2\n")
    changed = headers_digest(tmp_path)
    (tmp_path / "b.cuh").write_text("")
    assert len({before, changed, headers_digest(tmp_path)}) == 3


def test_every_source_is_compiled_with_the_digest_of_its_headers():
    digest = headers_digest(SOURCE_DIR)
    for path in sorted(SOURCE_DIR.glob("*.cu")):
        text = module_source(path.name)
        first, line, rest = text.split("\n", 2)
        assert digest in first and line == f'#line 1 "{path.name}"'
        assert rest == cuda_source(path.name)
