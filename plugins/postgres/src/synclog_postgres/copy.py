"""COPY Arrow record batches into a staging table, on a Spark executor or on the driver.

Batches become CSV in Arrow's C++ writer (NULL is an empty unquoted field, an empty string
is `""`, exactly COPY's CSV rules) and stream through psycopg's `cursor.copy()`; Postgres
parses JSONB and TIMESTAMPTZ while it copies, in as many server processes as there are tasks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from synclog_postgres.connection import connect, one_line

DayCounts = Counter[date | None]
"""Rows per UTC day of the time column (None: rows without a time, or a table without one)."""

SUMMARY_SCHEMA = pa.schema([pa.field("day", pa.date32()), pa.field("rows", pa.int64())])
"""What each staging task reports back: a handful of rows, never the data."""
SUMMARY_DDL = "day date, rows long"

FAILURE_MARK = "synclog-postgres COPY failed:"
"""Starts the message of a failed executor COPY, so the driver can report it in one line."""

_CSV = pacsv.WriteOptions(include_header=False, quoting_style="needed")


def copy_sql(stage: str, columns: str) -> str:
    """The COPY statement for `stage` (a rendered relation) and its rendered column list."""
    return f"COPY {stage} ({columns}) FROM STDIN (FORMAT csv)"


def copy_batches(
    cursor: psycopg.Cursor[Any], sql: str, batches: Iterable[pa.RecordBatch], time_index: int | None
) -> DayCounts:
    """Stream `batches` into the COPY `sql`; count their rows per day of column `time_index`."""
    days: DayCounts = Counter()
    with cursor.copy(sql) as copy:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            sink = pa.BufferOutputStream()
            pacsv.write_csv(batch, sink, _CSV)
            copy.write(memoryview(sink.getvalue()))
            days.update(day_counts(batch, time_index))
    return days


def day_counts(batch: pa.RecordBatch | pa.Table, time_index: int | None) -> DayCounts:
    """Rows per UTC day of the timestamp column `time_index` (all under None without one)."""
    if time_index is None:
        return Counter({None: batch.num_rows})
    utc = batch.column(time_index).cast(pa.timestamp("us")).cast(pa.date32())
    counts = pc.value_counts(utc)
    return Counter(
        dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True))
    )


def summary(days: DayCounts) -> pa.RecordBatch:
    """`days` as a record batch of SUMMARY_SCHEMA."""
    return pa.RecordBatch.from_pydict({"day": list(days), "rows": list(days.values())}, schema=SUMMARY_SCHEMA)


def stage_task(
    params: dict[str, Any], stage: str, ledger: str, columns: str, time_index: int | None
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function that COPYs one Spark partition into `stage` and commits it.

    Each partition commits once: its id goes into the `ledger` table (primary key) in the
    same transaction as its rows, so a retried or speculative attempt of a partition that
    already committed copies nothing. A failure rolls the partition's COPY back.
    """
    sql = copy_sql(stage, columns)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        part = context.partitionId() if context is not None else 0
        try:
            with connect(params, where="the staging database") as conn, conn.transaction():
                cursor = conn.cursor()
                cursor.execute(f"INSERT INTO {ledger} VALUES (%s) ON CONFLICT DO NOTHING", [part])
                if cursor.rowcount == 1:
                    days = copy_batches(cursor, sql, batches, time_index)
                else:
                    days = Counter()
                    for batch in batches:
                        days.update(day_counts(batch, time_index))
        except psycopg.Error as exc:
            raise RuntimeError(f"{FAILURE_MARK} {one_line(exc)}") from None
        yield summary(days)

    return run
