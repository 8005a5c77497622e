"""Deterministic dataset generators and loaders (``fsstgpu.datasets``)."""

from fsstgpu.datasets.dbtext import DBTEXT_FILES, dbtext_dir, dbtext_files

__all__ = ["DBTEXT_FILES", "dbtext_dir", "dbtext_files"]
