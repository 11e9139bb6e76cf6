"""Plain-text tables for the terminal, and result files (CSV, JSON lines, Parquet)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from synclog.result_files import encode_rows


def format_table(table: pa.Table, max_width: int = 60) -> str:
    """`table` as aligned columns, long values shortened."""
    rows = [[_cell(v, max_width) for v in row.values()] for row in table.to_pylist()]
    return format_rows(table.column_names, rows)


def format_rows(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Aligned columns under a header."""
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _cell(value: object, max_width: int) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= max_width else text[: max_width - 1] + "…"


def write_rows(table: pa.Table, path: Path) -> None:
    """Write `table` to `path` as CSV, JSON lines or Parquet, by the file's suffix."""
    path.write_bytes(encode_rows(table, path.suffix))
