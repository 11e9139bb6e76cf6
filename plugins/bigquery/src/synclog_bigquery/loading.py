"""Fill a staging table in bulk: one load job per load, or one INSERT for a few small rows.

Load jobs count against a project's daily load-job quota, so a load job per staged file would
spend it on one busy sync: every load is one job over all its files. With `storage` on GCS
that job reads the files where the executors wrote them (`load_table_from_uri`, explicit
URIs, never a wildcard), and no row passes through the driver. With a local `storage` the
manifest's files are streamed, a record batch at a time, into one local Parquet file, which
one `load_table_from_file` job loads; there, up to INLINE_ROWS rows of at most INLINE_BYTES
(run metadata, a `sync_runs` row, a small batch) travel as one array-of-structs query
parameter of an INSERT instead, and no file is uploaded.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
from google.cloud import bigquery

from synclog.plugin_api import write_batches
from synclog_bigquery.connection import Retries

INLINE_ROWS = 1_000
"""Loads of up to this many rows go inline, as a query parameter, not as a load job…"""
INLINE_BYTES = 1024 * 1024
"""…when their Arrow data is no larger than this (a query request holds 10 MB at most)."""
URIS_PER_JOB = 10_000
"""BigQuery's limit on the source URIs of one load job."""


def load_job(
    client: bigquery.Client,
    retries: Retries,
    stage: bigquery.TableReference,
    fields: Sequence[bigquery.SchemaField],
    schema: pa.Schema,
    batches: Iterable[pa.RecordBatch],
) -> int:
    """Append `batches` (of `schema`) to the table `stage` with one load job; return the rows loaded."""
    with tempfile.TemporaryDirectory(prefix="synclog-bigquery-") as folder:
        merged = Path(folder) / "stage.parquet"
        write_batches(str(merged), schema, batches)
        with merged.open("rb") as handle:
            job = client.load_table_from_file(
                handle, stage, job_config=job_config(fields), timeout=retries.seconds
            )
        job.result(retry=retries.call)
    return int(job.output_rows or 0)


def uri_load_job(
    client: bigquery.Client,
    retries: Retries,
    stage: bigquery.TableReference,
    fields: Sequence[bigquery.SchemaField],
    uris: Sequence[str],
) -> int:
    """Append the Parquet files at `uris` (gs://…) to `stage` with one load job per URIS_PER_JOB
    files (one for any write of fewer); return the rows loaded."""
    loaded = 0
    for start in range(0, len(uris), URIS_PER_JOB):
        chunk = list(uris[start : start + URIS_PER_JOB])
        job = client.load_table_from_uri(
            chunk, stage, job_config=job_config(fields), retry=retries.call, timeout=retries.seconds
        )
        job.result(retry=retries.call)
        loaded += int(job.output_rows or 0)
    return loaded


def job_config(fields: Sequence[bigquery.SchemaField]) -> bigquery.LoadJobConfig:
    """Parquet appended to a staging table of `fields`."""
    return bigquery.LoadJobConfig(
        source_format=bigquery.SourceFormat.PARQUET,
        schema=list(fields),
        write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
    )


def inline_rows(
    name: str, fields: Sequence[bigquery.SchemaField], rows: pa.Table
) -> bigquery.ArrayQueryParameter:
    """`rows` as the ARRAY<STRUCT> query parameter `name`, typed like the staging table's `fields`."""
    structs = [
        bigquery.StructQueryParameter(
            None, *(bigquery.ScalarQueryParameter(f.name, f.field_type, row[f.name]) for f in fields)
        )
        for row in rows.to_pylist()
    ]
    return bigquery.ArrayQueryParameter(name, "STRUCT", structs)
