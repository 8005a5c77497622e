"""``fsstgpu inspect``'s tables: what :func:`fsstgpu.formats.inspect_file` found, for people."""

from __future__ import annotations

from rich.console import Console

from fsstgpu.cli.output import fmt_ratio, human_bytes, kv_table, rows_table

__all__ = ["TABLES_SHOWN", "show_inspection"]

#: Symbol tables listed per column (a file trained per row group can hold many).
TABLES_SHOWN = 8


def show_inspection(console: Console, info: dict, title) -> None:
    """Print ``info`` (an :func:`~fsstgpu.formats.inspect_file` result): the file (an IPC
    file's body codec too), its columns (each fsst leaf of a nested column on a row of its own
    under it; with a line saying what the two ratios divide, when a column is fsst), and the
    first :data:`TABLES_SHOWN` symbol tables of each fsst column or nested fsst leaf.

    Examples
    --------
    >>> import io
    >>> from rich.console import Console
    >>> from fsstgpu.cli.inspect_view import show_inspection
    >>> info = {"format": "parquet", "file_bytes": 10, "rows": 0, "units": 0, "unit_rows": [],
    ...         "schema_metadata": [], "columns": []}
    >>> console = Console(file=io.StringIO(), width=60, record=True)
    >>> show_inspection(console, info, "x.parquet")
    >>> text = console.export_text()
    >>> "x.parquet" in text and "row groups / batches" in text
    True
    """
    rg = info["unit_rows"]
    shown = ", ".join(f"{r:,}" for r in rg[:8]) + (", ..." if len(rg) > 8 else "")
    ipc = info.get("ipc_compression")
    console.print(kv_table(f"{title}", [
        ("format", info["format"]),
        ("file size", human_bytes(info["file_bytes"])),
        ("rows", f"{info['rows']:,}"),
        ("row groups / batches", f"{info['units']} ({shown})" if rg else "0"),
        *([("IPC body compression", ipc or ("(no record batches)" if not rg else "unknown"))]
          if info["format"] != "parquet" else []),
        ("schema metadata keys", ", ".join(info["schema_metadata"]) or "(none)"),
    ]))
    rows = []
    for c in info["columns"]:
        rows.append(_row(c, c["name"], ipc))
        # each fsst leaf of a nested column under it, as a column of its own is shown
        rows.extend(_row(leaf, f"  {leaf['name']}", ipc) for leaf in c.get("leaves", ()))
    console.print(rows_table("columns", ["column", "type", "codec", "stored", "strings",
                                         "fsst ratio", "file ratio", "symbol table",
                                         "nulls"], rows))
    if any(c["codec"].startswith("fsst") for c in info["columns"]):
        # said here: compress's "string / codes ratio" leaves the tables out, so the same file
        # shows two ratios (3.464 there, 3.220 here) with nothing else to tell them apart
        console.print("fsst ratio: string bytes / (codes + symbol table bytes, each distinct "
                      "table once); file ratio: string bytes / stored bytes",
                      markup=False, highlight=False)
    for c in info["columns"]:
        # a nested column's tables are its leaves' (listed per leaf: the column's own list
        # only gathers them, for its ratio)
        for part in c.get("leaves") or [c]:
            _show_tables(console, part)


def _row(c: dict, name: str, ipc: str | None) -> list:
    """A ``columns`` row of column (or nested fsst leaf) ``c``; ``ipc``: the IPC body codec,
    a plain column's codec in an IPC file."""
    fsst = c["codec"].startswith("fsst")
    tables = c.get("tables", [])
    return [
        name, c["type"],
        c["codec"] if fsst else c.get("parquet_codec", ipc or "none"),
        human_bytes(c["stored_bytes"]),
        human_bytes(c["string_bytes"]) if fsst else "-",
        fmt_ratio(c["ratio"]) if fsst else "-",
        fmt_ratio(c["file_ratio"]) if fsst else "-",
        (f"{tables[0]['symbols']} sym, mean {tables[0]['mean_symbol_length']:.2f} B"
         + (f" (+{len(tables) - 1} tables)" if len(tables) > 1 else ""))
        if fsst and tables else "-",
        f"{c['null_count']:,}",
    ]


def _show_tables(console: Console, c: dict) -> None:
    tables = c.get("tables", [])
    for k, t in enumerate(tables[:TABLES_SHOWN]):
        console.print(f"{c['name']} table {k}: {t['symbols']} symbols "
                      f"({t['bytes']} bytes serialised), by length 1-8: "
                      f"{t['by_length']}; longest: {' '.join(t['longest'])}",
                      markup=False, highlight=False)
    if len(tables) > TABLES_SHOWN:
        console.print(f"{c['name']}: {len(tables) - TABLES_SHOWN} more tables (--json "
                      "lists them all)", markup=False, highlight=False)
