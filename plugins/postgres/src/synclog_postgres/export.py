"""A query's result streamed into one Parquet file in bounded driver memory.

A server-side (named) cursor hands the rows over `CHUNK_ROWS` at a time; each chunk becomes
one Arrow record batch of the given schema and one Parquet row group, so the driver never
holds more than one chunk, however large the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq

CHUNK_ROWS = 50_000
"""Rows per FETCH and per row group: a few tens of MB of Python values at most."""

_CURSOR = "synclog_export"


def write_parquet(
    connection: psycopg.Connection[Any],
    sql: str,
    params: Sequence[Any],
    path: str,
    schema: pa.Schema,
    chunk_rows: int,
) -> int:
    """Write the rows of `sql` (columns in `schema`'s order and types) to `path`; return how many.

    Rows come `chunk_rows` at a time, one row group each. An empty result still makes a
    valid file that carries the schema (and no row group).
    """
    written = 0
    with (
        pq.ParquetWriter(path, schema) as writer,
        connection.transaction(),  # a cursor without HOLD lives inside a transaction
        connection.cursor(name=_CURSOR) as cursor,
    ):
        cursor.execute(sql, list(params) or None)
        while rows := cursor.fetchmany(chunk_rows):
            writer.write_batch(_batch(rows, schema))
            written += len(rows)
    return written


def _batch(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.RecordBatch:
    """`rows` as a record batch of `schema` (aware datetimes land as UTC instants)."""
    columns = zip(*rows, strict=True)
    arrays = [pa.array(values, type=field.type) for values, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
