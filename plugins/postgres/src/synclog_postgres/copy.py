"""COPY Arrow record batches into a staging table, on a Spark executor or on the driver.

Batches become binary COPY rows (`binary.encode`, vectorised) and stream through psycopg's
`cursor.copy()`; the server parses the JSONB while it copies, in one process per task.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc

from synclog.errors import TargetError, first_line
from synclog.targets.tables import ColumnType
from synclog_postgres import binary
from synclog_postgres.connection import OUTAGES, connect

DayCounts = Counter[date | None]
"""Rows per UTC day of the time column (None: rows without a time, or a table without one)."""

SUMMARY_SCHEMA = pa.schema([pa.field("day", pa.date32()), pa.field("rows", pa.int64())])
"""What each staging task reports back: a handful of rows, never the data."""
SUMMARY_DDL = "day date, rows long"

FAILURE_MARK = "synclog-postgres COPY failed:"
"""Starts the message of an executor COPY the server failed (an outage), so the driver can report it."""
REFUSED_MARK = "synclog-postgres COPY refused:"
"""Starts the message of an executor COPY whose rows the server refused (bad data, not an outage)."""


def copy_sql(stage: str, columns: str) -> str:
    """The COPY statement for `stage` (a rendered relation) and its rendered column list."""
    return f"COPY {stage} ({columns}) FROM STDIN (FORMAT binary)"


def copy_batches(
    cursor: psycopg.Cursor[Any],
    sql: str,
    batches: Iterable[pa.RecordBatch],
    types: Sequence[ColumnType],
    time_index: int | None,
) -> DayCounts:
    """Stream `batches` (columns of `types`) into the binary COPY `sql`; count rows per day."""
    days: DayCounts = Counter()
    with cursor.copy(sql) as copy:
        started = False
        for batch in batches:
            if batch.num_rows == 0:
                continue
            if not started:
                copy.write(binary.SIGNATURE)
                started = True
            copy.write(memoryview(binary.encode(batch, types)))
            days.update(day_counts(batch, time_index))
        if started:
            copy.write(binary.TRAILER)
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
    params: dict[str, Any],
    stage: str,
    ledger: str,
    columns: str,
    types: Sequence[ColumnType],
    time_index: int | None,
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
                    days = copy_batches(cursor, sql, batches, types, time_index)
                else:
                    days = Counter()
                    for batch in batches:
                        days.update(day_counts(batch, time_index))
        except (*OUTAGES, TargetError) as exc:
            raise RuntimeError(f"{FAILURE_MARK} {first_line(exc)}") from None
        except psycopg.DataError as exc:
            raise RuntimeError(f"{REFUSED_MARK} {first_line(exc)}") from None
        yield summary(days)

    return run
