"""Where the FSST paper's dbtext corpus is, when it is on this machine.

The corpus is never copied into the repository: it is found through ``FSSTGPU_DBTEXT``, or as
``shared/datasets/dbtext`` beside (or inside) the current directory or one of its parents, or as
``.data/dbtext`` there (the git-ignored copy carried to the GPU machine).
"""

from __future__ import annotations

import os
from pathlib import Path

DBTEXT_FILES = (
    "c_name", "chinese", "city", "credentials", "email", "faust", "firstname", "genome",
    "hamlet", "hex", "japanese", "l_comment", "lastname", "location", "movies", "ps_comment",
    "street", "urls2", "uuid", "wiki", "wikipedia", "yago",
)


def dbtext_dir() -> Path | None:
    """Return the dbtext folder, or None when it is not on this machine.

    Examples
    --------
    >>> from fsstgpu.datasets import dbtext_dir
    >>> d = dbtext_dir()
    >>> d is None or (d / "uuid").is_file()
    True
    """
    env = os.environ.get("FSSTGPU_DBTEXT")
    if env:
        path = Path(env)
        return path if path.is_dir() else None
    here = Path.cwd().resolve()
    for base in (here, *here.parents):
        for candidate in (base / "shared" / "datasets" / "dbtext", base / ".data" / "dbtext"):
            if (candidate / "uuid").is_file():
                return candidate
    return None


def dbtext_files() -> list[Path]:
    """Return the paths of the dbtext files present (empty when the corpus is absent)."""
    root = dbtext_dir()
    if root is None:
        return []
    return [root / name for name in DBTEXT_FILES if (root / name).is_file()]
