"""A query's result streamed into one Parquet file through a server-side cursor.

The named cursor hands the rows over `synclog.targets.export.CHUNK_ROWS` at a time; each
chunk becomes one Parquet row group, so the driver never holds more than one chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
import pyarrow as pa

from synclog.targets import export

_CURSOR = "synclog_export"


def write_parquet(
    connection: psycopg.Connection[Any], sql: str, params: Sequence[Any], path: str, schema: pa.Schema
) -> int:
    """Write the rows of `sql` (columns in `schema`'s order and types) to `path`; return how many."""
    chunk = export.CHUNK_ROWS
    with (
        connection.transaction(),  # a cursor without HOLD lives inside a transaction
        connection.cursor(name=_CURSOR) as cursor,
    ):
        cursor.execute(sql, list(params) or None)
        chunks = iter(lambda: cursor.fetchmany(chunk), [])
        return export.write_batches(path, schema, (export.rows_batch(rows, schema) for rows in chunks))
