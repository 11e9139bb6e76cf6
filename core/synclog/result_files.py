"""A query's rows as the bytes of a result file: CSV, JSON lines or Parquet (the CLI and serve)."""

from __future__ import annotations

import io
import json
from datetime import datetime

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

OUT_SUFFIXES = (".csv", ".jsonl", ".parquet")


def encode_rows(table: pa.Table, suffix: str) -> bytes:
    """`table` as the bytes of a CSV, JSON lines or Parquet file (`suffix`: .csv, .jsonl, .parquet)."""
    suffix = suffix.lower()
    buffer = io.BytesIO()
    if suffix == ".parquet":
        pq.write_table(table, buffer)
    elif suffix == ".csv":
        pa_csv.write_csv(table, buffer)
    elif suffix == ".jsonl":
        for row in table.to_pylist():
            buffer.write((json.dumps(row, default=_iso, ensure_ascii=False) + "\n").encode("utf-8"))
    else:
        raise ValueError(f"{suffix}: expected one of {', '.join(OUT_SUFFIXES)}")
    return buffer.getvalue()


def _iso(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
