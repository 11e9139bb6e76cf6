"""Local Parquet files of rows to load, in the shape the COPY transform reads.

Spark frames are written by the executors (`synclog.staging.parquet_stage`); the small Arrow
tables that layouts build on the driver are written with pyarrow. Timestamps travel as epoch
microseconds (BIGINT), which COPY turns back with TO_TIMESTAMP_TZ(…, 6): that spelling means
the same on every Parquet reader, unlike Spark's INT96 or unit-annotated timestamps.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from synclog.staging import parquet_stage
from synclog.targets.tables import ColumnType, Rows, TableSpec


@contextmanager
def parquet_files(table: TableSpec, rows: Rows, staging_dir: str | None) -> Iterator[list[str]]:
    """Write `rows` (exactly `table`'s columns) as Parquet files; yield their paths; remove them."""
    if isinstance(rows, DataFrame):
        with parquet_stage(_spark_shape(table, rows), staging_dir) as files:
            yield files
        return
    folder = Path(tempfile.mkdtemp(prefix="synclog-stage-", dir=staging_dir))
    try:
        path = folder / "part-00000.parquet"
        pq.write_table(_arrow_shape(table, rows), path)
        yield [str(path)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _spark_shape(table: TableSpec, frame: DataFrame) -> DataFrame:
    return frame.select(
        *[
            (F.unix_micros(F.col(c.name)) if c.type is ColumnType.TIMESTAMP else F.col(c.name)).alias(c.name)
            for c in table.columns
        ]
    )


def _arrow_shape(table: TableSpec, rows: pa.Table) -> pa.Table:
    columns = []
    for c in table.columns:
        column = rows.column(c.name)
        if c.type is ColumnType.TIMESTAMP:
            column = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
        columns.append(column)
    return pa.table(columns, names=table.column_names())
