"""What Sync Tracking asks of a layout, the columns it answers with, and the SQL they share.

Each layout turns its own tables into one shape of record rows (`RECORDS`), with every status
mapped to the tracking vocabulary (`Tracked`); records and runs are then filtered, counted and
paged the same way. Filter values are always bound as parameters; limit and offset are integers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum

import pyarrow as pa

from synclog.targets.base import Target

_TIME = pa.timestamp("us", tz="UTC")

RECORDS = pa.schema(
    [
        ("sync_id", pa.int64()),
        ("sync_run_id", pa.int64()),
        ("batch_number", pa.int64()),
        ("record_identifier", pa.string()),
        ("operation", pa.string()),
        ("status", pa.string()),
        ("layout_status", pa.string()),
        ("status_message", pa.string()),
        ("error_code", pa.string()),
        ("batch_started_at", _TIME),
        ("batch_completed_at", _TIME),
        ("record_payload", pa.string()),
    ]
)
"""The columns of `find_records`: `status` in the tracking vocabulary, `layout_status` as stored."""

RUN_COUNTS = pa.schema(
    [
        ("sync_id", pa.int64()),
        ("sync_run_id", pa.int64()),
        ("started_at", _TIME),
        ("finished_at", _TIME),
        ("status", pa.string()),
        ("extra", pa.string()),
        ("records", pa.int64()),
        ("succeeded", pa.int64()),
        ("failed", pa.int64()),
        ("rejected", pa.int64()),
        ("invalid", pa.int64()),
        ("aborted", pa.int64()),
    ]
)
"""What a layout's `runs` answers: one row per run, newest first, records counted by status.
`extra` is the engine's own fields of the run (`Run.extra`: its names, its run id) as JSON text,
where the layout keeps them (the lake's metadata.json, hightouch's `sync_runs`), else NULL."""

RUNS = RUN_COUNTS.append(pa.field("top_error_code", pa.string()))
"""The columns of `find_runs`: one row per run, newest first, records counted by status, and
the most common error code of its rejected records (`synclog.error_codes`)."""

SYNCS = pa.schema(
    [
        ("sync_id", pa.int64()),
        ("runs", pa.int64()),
        ("records", pa.int64()),
        ("last_started_at", _TIME),
    ]
)
"""The columns of `find_syncs`: one row per sync the layout holds, the latest run first."""


class Tracked(StrEnum):
    """A record's state in Sync Tracking, whatever layout it is read from."""

    SUCCEEDED = "succeeded"
    """The destination took the record."""
    REJECTED = "rejected"
    """The destination refused the record."""
    INVALID = "invalid"
    """The identifier checks flagged the record (NULL or DUPLICATE identifier); it was not sent."""
    FAILED = "failed"
    """A filter only: rejected or invalid, what Hightouch calls failed."""
    ABORTED = "aborted"
    """Planned but never sent: the run ended first."""

    def covers(self) -> tuple[str, ...]:
        """The record states this filter selects."""
        return (Tracked.REJECTED, Tracked.INVALID) if self is Tracked.FAILED else (self,)


@dataclass(frozen=True)
class RecordQuery:
    """Which logged records of a sync to show, one page at a time."""

    sync_id: int
    sync_run_id: int | None = None
    status: Tracked | None = None
    identifiers: tuple[str, ...] = ()
    """Records whose identifier is any of these (none: every record)."""
    limit: int = 100
    offset: int = 0


@dataclass(frozen=True)
class RunQuery:
    """Which runs of a sync to list, one page at a time."""

    sync_id: int
    limit: int = 100
    offset: int = 0


@dataclass(frozen=True)
class Source:
    """A layout's records in the `RECORDS` shape: a SELECT (with `tracked_status`, plus the
    columns in `order`, which break ties) and its parameters."""

    sql: str
    params: list[object] = field(default_factory=list)
    order: tuple[str, ...] = ()


class LayoutTracking(ABC):
    """Sync Tracking's queries over one layout's tables on one target."""

    table_name: str
    """Where the layout keeps its records, as a user would name it."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.p = target.dialect.placeholder

    @abstractmethod
    def source(self, sync_id: int, sync_run_id: int | None = None) -> Source | None:
        """The sync's records (of one run, if given), or None when there are none."""

    @abstractmethod
    def runs(self, query: RunQuery) -> pa.Table:
        """The sync's runs, newest first (`RUN_COUNTS`)."""

    def runs_with_errors(self, query: RunQuery) -> pa.Table:
        """`runs`, each with the most common error code of its rejected records (ties: the
        first in order); one query more, grouped by run and code, for the page's runs only."""
        runs = self.runs(query)
        numbers = [n for n in runs.column("sync_run_id").to_pylist() if n is not None]
        source = self.source(query.sync_id) if numbers else None
        top: dict[int, str] = {}
        if source is not None:
            sql = (
                f"SELECT sync_run_id, error_code, COUNT(*) AS n FROM ({source.sql}) t "
                f"WHERE tracked_status = '{Tracked.REJECTED}' AND error_code IS NOT NULL "
                f"AND sync_run_id IN ({', '.join([self.p] * len(numbers))}) "
                "GROUP BY sync_run_id, error_code ORDER BY sync_run_id, n DESC, error_code"
            )
            found = self.target.query(sql, [*source.params, *numbers])  # names' case varies
            for run, code in zip(found.column(0).to_pylist(), found.column(1).to_pylist(), strict=True):
                top.setdefault(int(run), code)
        codes = [top.get(n) for n in runs.column("sync_run_id").to_pylist()]
        return conform(runs.append_column("top_error_code", pa.array(codes, pa.string())), RUNS)

    @abstractmethod
    def syncs(self, limit: int = 1000) -> pa.Table:
        """Every sync the layout holds (`SYNCS`), the one run last first."""

    def records(self, query: RecordQuery) -> pa.Table:
        """The matching records, newest batch first."""
        source = self.source(query.sync_id, query.sync_run_id)
        if source is None:
            return RECORDS.empty_table()
        where, params = [], list(source.params)
        if query.sync_run_id is not None:
            where.append(f"sync_run_id = {self.p}")
            params.append(query.sync_run_id)
        if query.identifiers:
            where.append(f"record_identifier IN ({', '.join([self.p] * len(query.identifiers))})")
            params.extend(query.identifiers)
        if query.status is not None:
            covered = query.status.covers()
            where.append(f"tracked_status IN ({', '.join([self.p] * len(covered))})")
            params.extend(str(s) for s in covered)
        columns = ", ".join("tracked_status AS status" if c == "status" else c for c in RECORDS.names)
        order = ", ".join(
            ["batch_started_at DESC", "sync_run_id DESC", "batch_number", "record_identifier", *source.order]
        )
        sql = (
            f"SELECT {columns} FROM ({source.sql}) t"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + f" ORDER BY {order}{page(query.limit, query.offset)}"
        )
        return conform(self.target.query(sql, params), RECORDS)


def counts() -> str:
    """SUMs of records per tracking state over `tracked_status`, named as in `RUNS`."""

    def n(*states: Tracked) -> str:
        listed = ", ".join(f"'{s}'" for s in states)
        return f"SUM(CASE WHEN tracked_status IN ({listed}) THEN 1 ELSE 0 END)"

    named = {
        "succeeded": n(Tracked.SUCCEEDED),
        "failed": n(Tracked.REJECTED, Tracked.INVALID),
        "rejected": n(Tracked.REJECTED),
        "invalid": n(Tracked.INVALID),
        "aborted": n(Tracked.ABORTED),
    }
    return ", ".join(f"{sql} AS {name}" for name, sql in named.items())


def syncs_sql(runs: str, limit: int) -> str:
    """The `SYNCS` rows of `runs`, a SELECT of one row per run with `sync_id, sync_run_id,
    records, started_at`: a sync's last run is the one that started last."""
    return (
        "SELECT sync_id, COUNT(*) AS runs, SUM(records) AS records, MAX(started_at) AS last_started_at "
        f"FROM ({runs}) r GROUP BY sync_id ORDER BY last_started_at DESC, sync_id{page(limit, 0)}"
    )


def literal(text: str) -> str:
    """One of synclog's own constants as a SQL string literal (never a user's value)."""
    return "'" + text.replace("'", "''") + "'"


def page(limit: int, offset: int) -> str:
    """LIMIT and OFFSET, from integers."""
    return f" LIMIT {int(limit)} OFFSET {int(offset)}"


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` (a query's answer, columns in `schema`'s order) with `schema`'s names and types."""
    return table.rename_columns(schema.names).cast(schema)
