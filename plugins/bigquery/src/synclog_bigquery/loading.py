"""Get rows to BigQuery in bulk: a staging table filled by one load job, or inline for a few rows.

A load job per Parquet part file would spend BigQuery's load-job quota (1,500 per table per
day) on one busy sync. Instead the parts the executors wrote are streamed, a record batch at a
time, into one Parquet file with the staging table's exact types (Spark's INT96 timestamps
become UTC microseconds), which one `load_table_from_file` job loads. The few rows a layout
builds on the driver (run metadata) travel as one array-of-structs query parameter instead.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from google.cloud import bigquery
from pyspark.sql import DataFrame

from synclog.staging import parquet_stage
from synclog.targets.tables import ColumnType, Rows, TableSpec

_BATCH_ROWS = 65_536
INLINE_ROWS = 1_000
"""Driver-built tables up to this many rows are sent as a query parameter, not a load job."""

STAGE_TYPES: dict[ColumnType, tuple[str, pa.DataType]] = {
    ColumnType.BIGINT: ("INT64", pa.int64()),
    ColumnType.INTEGER: ("INT64", pa.int64()),
    ColumnType.STRING: ("STRING", pa.string()),
    ColumnType.JSON: ("STRING", pa.string()),
    ColumnType.TIMESTAMP: ("TIMESTAMP", pa.timestamp("us", tz="UTC")),
    ColumnType.BOOLEAN: ("BOOL", pa.bool_()),
}
"""Staging column types: JSON travels as text and is parsed by the INSERT into the log table."""


def stage_schema(table: TableSpec) -> list[bigquery.SchemaField]:
    """The staging table's BigQuery schema."""
    return [bigquery.SchemaField(c.name, STAGE_TYPES[c.type][0]) for c in table.columns]


def arrow_schema(table: TableSpec) -> pa.Schema:
    """The Arrow schema of the Parquet file that is loaded into the staging table."""
    return pa.schema([pa.field(c.name, STAGE_TYPES[c.type][1]) for c in table.columns])


def load_parquet(
    client: bigquery.Client,
    stage: bigquery.TableReference,
    table: TableSpec,
    rows: Rows,
    staging_dir: str | None,
) -> int:
    """Load `rows` into the (existing, empty) table `stage` with one load job; return the row count."""
    schema = arrow_schema(table)
    with tempfile.TemporaryDirectory(prefix="synclog-bigquery-", dir=staging_dir) as folder:
        merged = Path(folder) / "stage.parquet"
        if isinstance(rows, DataFrame):
            with parquet_stage(rows.select(*schema.names), staging_dir) as files:
                count = _write(merged, schema, _file_batches(files, schema))
        else:
            count = _write(merged, schema, rows.select(schema.names).to_batches(_BATCH_ROWS))
        if count == 0:
            return 0
        config = bigquery.LoadJobConfig(
            source_format=bigquery.SourceFormat.PARQUET,
            schema=stage_schema(table),
            write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
        )
        with merged.open("rb") as handle:
            job = client.load_table_from_file(handle, stage, job_config=config)
        job.result()
        return int(job.output_rows or 0)


def _file_batches(files: Iterable[str], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for file in files:
        parquet = pq.ParquetFile(file, coerce_int96_timestamp_unit="us")
        yield from parquet.iter_batches(batch_size=_BATCH_ROWS, columns=schema.names)


def _write(path: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
    """Write `batches`, cast to `schema`, into one Parquet file; return the row count."""
    count = 0
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for batch in batches:
            if batch.num_rows:
                writer.write_table(pa.Table.from_batches([batch]).select(schema.names).cast(schema))
                count += batch.num_rows
    return count


def inline_rows(name: str, table: TableSpec, rows: pa.Table) -> bigquery.ArrayQueryParameter:
    """`rows` as the named ARRAY<STRUCT> parameter `name`, typed like the staging table."""
    types = {c.name: STAGE_TYPES[c.type][0] for c in table.columns}
    cast = rows.select(list(types)).cast(arrow_schema(table))
    structs = [
        bigquery.StructQueryParameter(
            None, *(bigquery.ScalarQueryParameter(k, types[k], v) for k, v in row.items())
        )
        for row in cast.to_pylist()
    ]
    return bigquery.ArrayQueryParameter(name, "STRUCT", structs)
