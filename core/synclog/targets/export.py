"""A query's result written as one Parquet file in bounded driver memory, one row group per chunk.

A target fetches its result `CHUNK_ROWS` rows at a time (a cursor's `fetchmany`, a result
page) and hands the chunks over as Arrow record batches; each is given the wanted schema and
becomes one Parquet row group, so the driver never holds more than one chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

CHUNK_ROWS = 50_000
"""How many rows a target fetches per chunk (`fetchmany`, a result page) when it streams a result."""
"""Rows per fetch and per row group: a few tens of MB of Python values at most."""


def write_batches(sink: Any, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
    """Write each batch, with `schema`'s names and types, as one row group of `sink` (a path or an
    output stream); return the rows.

    Columns are matched by position. No batches (or only empty ones) still make a valid file
    that carries the schema and no row group.
    """
    written = 0
    with pq.ParquetWriter(sink, schema) as writer:
        for batch in batches:
            if batch.num_rows:
                writer.write_batch(conformed(batch, schema))
                written += batch.num_rows
    return written


def conformed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch`'s columns, in order, cast to `schema`'s types and named as it says."""
    if batch.num_columns != len(schema):
        raise ValueError(f"the result has {batch.num_columns} columns, the schema {len(schema)}")
    arrays = [column.cast(field.type) for column, field in zip(batch.columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def rows_batch(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.RecordBatch:
    """`rows` (values in `schema`'s column order) as a record batch of `schema`.

    Aware datetimes land as UTC instants.
    """
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    arrays = [pa.array(values, type=field.type) for values, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
