"""COPY Arrow record batches into a staging table, from each Spark task (or the driver).

Batches become binary COPY rows (`binary.encode`, vectorised) and stream through psycopg's
`cursor.copy()`; the server parses the JSONB while it copies, in one process per task.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc

from synclog.plugin_api import ColumnType, TargetError, by_name, first_line
from synclog_postgres import binary
from synclog_postgres.connection import OUTAGES, connect

DayCounts = Counter[date | None]
"""Rows per UTC day of the time column (None: rows without a time, or a table without one)."""

FAILURE_MARK = "synclog-postgres COPY failed:"
"""Starts the message of an executor COPY the server failed (an outage), so the driver can report it."""
REFUSED_MARK = "synclog-postgres COPY refused:"
"""Starts the message of an executor COPY whose rows the server refused (bad data, not an outage)."""


def copy_sql(stage: str, columns: str) -> str:
    """The COPY statement for `stage` (a rendered relation) and its rendered column list."""
    return f"COPY {stage} ({columns}) FROM STDIN (FORMAT binary)"


def day_counts(batch: pa.RecordBatch | pa.Table, time_index: int | None) -> DayCounts:
    """Rows per UTC day of the timestamp column `time_index` (all under None without one)."""
    if time_index is None:
        return Counter({None: batch.num_rows})
    utc = batch.column(time_index).cast(pa.timestamp("us")).cast(pa.date32())
    counts = pc.value_counts(utc)
    return Counter(
        dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True))
    )


@dataclass(frozen=True)
class CopyStageWriter:
    """The task-side writer of a PostgreSQL stage: each Spark task COPYs its rows into `stage`.

    Each partition commits once: its id goes into the `ledger` table (primary key) in the
    same transaction as its rows, so a retried or speculative attempt of a partition that
    already committed copies nothing. A failure rolls the partition's COPY back. A task reports
    its rows per UTC day of the time column, never the rows.
    """

    params: dict[str, Any]
    stage: str
    ledger: str
    columns: str
    schema: pa.Schema
    types: tuple[ColumnType, ...]
    time_index: int | None

    def open(self, part: int) -> CopyStage:
        return CopyStage(self, part)


class CopyStage:
    """One Spark partition's COPY into the stage, inside one transaction (see `CopyStageWriter`)."""

    def __init__(self, writer: CopyStageWriter, part: int) -> None:
        self.writer = writer
        self.days: DayCounts = Counter()
        self._open = contextlib.ExitStack()
        self._copy: Any = None
        self._started = False
        with _marked():
            conn = self._open.enter_context(connect(writer.params, where="the staging database"))
            self._open.enter_context(conn.transaction())
            cursor = conn.cursor()
            cursor.execute(f"INSERT INTO {writer.ledger} VALUES (%s) ON CONFLICT DO NOTHING", [part])
            if cursor.rowcount == 1:  # else an earlier attempt of this partition committed already
                self._copy = self._open.enter_context(cursor.copy(copy_sql(writer.stage, writer.columns)))

    def write(self, batch: pa.RecordBatch) -> None:
        batch = by_name(batch, self.writer.schema)
        if self._copy is not None and batch.num_rows:
            with _marked():
                if not self._started:
                    self._copy.write(binary.SIGNATURE)
                    self._started = True
                self._copy.write(memoryview(binary.encode(batch, self.writer.types)))
        self.days.update(day_counts(batch, self.writer.time_index))

    def close(self) -> list[str]:
        with _marked():
            if self._started:
                self._copy.write(binary.TRAILER)
            self._open.close()
        return [json.dumps({"day": day and day.isoformat(), "rows": n}) for day, n in self.days.items()]

    def abort(self) -> None:
        with contextlib.suppress(BaseException):
            self._open.__exit__(RuntimeError, RuntimeError("aborted"), None)


def day_totals(reports: Iterable[str]) -> DayCounts:
    """The tasks' reports (`CopyStage.close`) added up per day."""
    days: DayCounts = Counter()
    for report in reports:
        data = json.loads(report)
        days[date.fromisoformat(data["day"]) if data["day"] else None] += int(data["rows"])
    return days


@contextlib.contextmanager
def _marked() -> Iterator[None]:
    """A failed COPY as an error whose message the driver recognises in the failed Spark job."""
    try:
        yield
    except (*OUTAGES, TargetError) as exc:
        raise RuntimeError(f"{FAILURE_MARK} {first_line(exc)}") from None
    except psycopg.DataError as exc:
        raise RuntimeError(f"{REFUSED_MARK} {first_line(exc)}") from None
