"""Sync Tracking over the census and hightouch layouts of a SQL warehouse.

census (`sync_log`): `invalid_reason` NULL or DUPLICATE is invalid (whatever the destination
said, which `layout_status` keeps); else succeeded as stored; a rejection with the "Not
attempted" message the layout gives aborted records is aborted; any other rejection is
rejected. Runs are those `sync_log` holds records of (a run whose records all expired is gone
from the list, as its records are); a finished run's start, end, status (succeeded, partial or
failed) and the engine's fields come from synclog's own `synclog_runs`; a run without a row there
(not finished yet, or logged by synclog 0.1) starts at its first batch and ends with its last,
and failed when it aborted records, partial when some of its records succeeded all the same
(`RunStatus`).

hightouch (`sync_changelog`, `sync_runs`): `invalid_reason` set is invalid; else succeeded and
aborted as stored, failed is rejected; a row that left the model with no destination operation
(status NULL) has no tracking status. `operation` holds the changelog's op_type (added,
changed, removed) and `record_payload` its `fields`; the changelog has no batch numbers or batch
completion times. Runs come from `sync_runs` (a failed run with succeeded records is partial,
as `RunStatus` says), whose counts outlive the changelog's retention; invalid records (and so
rejected) are counted from the changelog rows still kept, NULL once none are.
"""

from __future__ import annotations

import pyarrow as pa

from synclog.layouts.census import ABORTED_MESSAGE, SYNC_LOG
from synclog.layouts.census import RUNS as CENSUS_RUNS
from synclog.layouts.hightouch import CHANGELOG
from synclog.layouts.hightouch import RUNS as SYNC_RUNS
from synclog.targets.base import Target
from synclog.targets.tables import ColumnType
from synclog.tracking.base import (
    RUN_COUNTS,
    SYNCS,
    LayoutTracking,
    RunQuery,
    Source,
    Tracked,
    conform,
    counts,
    literal,
    page,
    syncs_sql,
)


class CensusTracking(LayoutTracking):
    """Records and runs from the census `sync_log`."""

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.table_name = str(target.relation(SYNC_LOG, SYNC_LOG.view))

    def source(self, sync_id: int, sync_run_id: int | None = None) -> Source:
        view = self.target.relation(SYNC_LOG, SYNC_LOG.view).render()
        payload = self.target.dialect.json_text_sql("record_payload")
        tracked = (
            f"CASE WHEN invalid_reason IS NOT NULL THEN '{Tracked.INVALID}' "
            f"WHEN status = 'succeeded' THEN '{Tracked.SUCCEEDED}' "
            f"WHEN status_message = {literal(ABORTED_MESSAGE)} THEN '{Tracked.ABORTED}' "
            f"ELSE '{Tracked.REJECTED}' END"
        )
        sql = (
            "SELECT sync_id, sync_run_id, batch_number, record_identifier, operation, "
            f"{tracked} AS tracked_status, status AS layout_status, status_message, error_code, "
            f"batch_started_at, batch_completed_at, {payload} AS record_payload, log_id "
            f"FROM {view} WHERE sync_id = {self.p}"
        )
        return Source(sql, [sync_id], ("log_id",))

    def runs(self, query: RunQuery) -> pa.Table:
        """The runs `sync_log` holds records of, each joined with its `synclog_runs` row (derived
        tables, no WITH: it runs where there are no CTEs)."""
        source = self.source(query.sync_id)
        t = self.target
        counted = (
            "SELECT sync_id, sync_run_id, MIN(batch_started_at) AS first_batch, "
            "MAX(batch_completed_at) AS last_batch, "
            f"CASE WHEN {_number_of(Tracked.ABORTED)} = 0 THEN 'succeeded' "
            f"WHEN {_number_of(Tracked.SUCCEEDED)} > 0 THEN 'partial' ELSE 'failed' END AS implied, "
            f"COUNT(*) AS records, {counts()} FROM ({source.sql}) t GROUP BY sync_id, sync_run_id"
        )
        params: list[object] = list(source.params)
        if t.existing_tables([CENSUS_RUNS]):
            ended = (
                "SELECT sync_id, sync_run_id, status, started_at, finished_at, extra "
                f"FROM {t.relation(CENSUS_RUNS).render()} WHERE sync_id = {self.p}"
            )
            params.append(query.sync_id)
        else:
            null = {name: t.dialect.cast_sql("NULL", kind) for name, kind in _ENDED.items()}
            ended = "SELECT " + ", ".join(f"{v} AS {k}" for k, v in null.items()) + " WHERE 1 = 0"
        numbers = ", ".join(f"c.{name}" for name in _NUMBERS)
        sql = (
            "SELECT c.sync_id, c.sync_run_id, COALESCE(r.started_at, c.first_batch) AS started_at, "
            "COALESCE(r.finished_at, c.last_batch) AS finished_at, "
            f"COALESCE(r.status, c.implied) AS status, {t.dialect.json_text_sql('r.extra')} AS extra, "
            f"{numbers} FROM ({counted}) c LEFT JOIN ({ended}) r "
            "ON r.sync_id = c.sync_id AND r.sync_run_id = c.sync_run_id "
            f"ORDER BY started_at DESC, c.sync_run_id DESC{page(query.limit, query.offset)}"
        )
        return conform(self.target.query(sql, params), RUN_COUNTS)

    def syncs(self, limit: int = 1000) -> pa.Table:
        view = self.target.relation(SYNC_LOG, SYNC_LOG.view).render()
        runs = (
            "SELECT sync_id, sync_run_id, COUNT(*) AS records, MIN(batch_started_at) AS started_at "
            f"FROM {view} GROUP BY sync_id, sync_run_id"
        )
        return conform(self.target.query(syncs_sql(runs, limit)), SYNCS)


_NUMBERS = tuple(RUN_COUNTS.names[RUN_COUNTS.names.index("records") :])
"""The counts of `RUN_COUNTS`: records, then records per state."""
_ENDED = {
    "sync_id": ColumnType.BIGINT,
    "sync_run_id": ColumnType.BIGINT,
    "status": ColumnType.STRING,
    "started_at": ColumnType.TIMESTAMP,
    "finished_at": ColumnType.TIMESTAMP,
    "extra": ColumnType.STRING,
}
"""The columns read from `synclog_runs` (NULL where the table does not exist)."""


def _number_of(state: Tracked) -> str:
    """How many of a group's records are in `state`."""
    return f"SUM(CASE WHEN tracked_status = '{state}' THEN 1 ELSE 0 END)"


class HightouchTracking(LayoutTracking):
    """Records from `sync_changelog`, runs from `sync_runs`."""

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.table_name = str(target.relation(CHANGELOG))

    def source(self, sync_id: int, sync_run_id: int | None = None) -> Source:
        t = self.target
        tracked = (
            f"CASE WHEN invalid_reason IS NOT NULL THEN '{Tracked.INVALID}' "
            f"WHEN status = 'succeeded' THEN '{Tracked.SUCCEEDED}' "
            f"WHEN status = 'aborted' THEN '{Tracked.ABORTED}' "
            f"WHEN status = 'failed' THEN '{Tracked.REJECTED}' END"
        )
        fields = (
            t.dialect.json_text_sql("fields")
            if t.capabilities.fields_column
            else t.dialect.cast_sql("NULL", ColumnType.STRING)
        )
        sql = (
            f"SELECT sync_id, sync_run_id, {t.dialect.cast_sql('NULL', ColumnType.BIGINT)} AS batch_number, "
            f"row_id AS record_identifier, op_type AS operation, {tracked} AS tracked_status, "
            "status AS layout_status, failure_reason AS status_message, error_code, batch_started_at, "
            f"{t.dialect.cast_sql('NULL', ColumnType.TIMESTAMP)} AS batch_completed_at, "
            f"{fields} AS record_payload "
            f"FROM {t.relation(CHANGELOG).render()} WHERE sync_id = {self.p}"
        )
        return Source(sql, [sync_id], ("operation", "layout_status", "status_message", "record_payload"))

    def runs(self, query: RunQuery) -> pa.Table:
        source = self.source(query.sync_id)

        def total(stage: str) -> str:
            return "(" + " + ".join(f"r.num_{stage}_{op}" for op in ("add", "change", "remove")) + ")"

        def invalid(status: str) -> str:
            return f"COALESCE(c.invalid_{status}, 0)"

        flagged = ", ".join(
            f"SUM(CASE WHEN tracked_status = '{Tracked.INVALID}' AND layout_status = '{status}' "
            f"THEN 1 ELSE 0 END) AS invalid_{status}"
            for status in ("succeeded", "failed", "aborted")
        )
        partial = f"r.status = 'failed' AND {total('succeeded')} > 0"
        sql = (
            "SELECT r.sync_id, r.sync_run_id, r.started_at, r.finished_at, "
            f"CASE WHEN {partial} THEN 'partial' ELSE r.status END AS status, "
            f"{self.target.dialect.json_text_sql('r.extra')} AS extra, "
            f"{total('planned')} AS records, {total('succeeded')} - {invalid('succeeded')} AS succeeded, "
            f"{total('failed')} + {invalid('succeeded')} + {invalid('aborted')} AS failed, "
            f"{total('failed')} - c.invalid_failed AS rejected, c.invalid AS invalid, "
            f"{total('planned')} - {total('attempted')} - {invalid('aborted')} AS aborted "
            f"FROM {self.target.relation(SYNC_RUNS).render()} r LEFT JOIN ("
            "SELECT sync_id, sync_run_id, "
            f"SUM(CASE WHEN tracked_status = '{Tracked.INVALID}' THEN 1 ELSE 0 END) AS invalid, "
            f"{flagged} FROM ({source.sql}) t GROUP BY sync_id, sync_run_id) c "
            "ON c.sync_id = r.sync_id AND c.sync_run_id = r.sync_run_id "
            f"WHERE r.sync_id = {self.p} "
            f"ORDER BY r.started_at DESC, r.sync_run_id DESC{page(query.limit, query.offset)}"
        )
        return conform(self.target.query(sql, [*source.params, query.sync_id]), RUN_COUNTS)

    def syncs(self, limit: int = 1000) -> pa.Table:
        planned = " + ".join(f"num_planned_{op}" for op in ("add", "change", "remove"))
        sql = (
            f"SELECT sync_id, COUNT(*) AS runs, SUM({planned}) AS records, "
            f"MAX(started_at) AS last_started_at FROM {self.target.relation(SYNC_RUNS).render()} "
            f"GROUP BY sync_id ORDER BY last_started_at DESC, sync_id{page(limit, 0)}"
        )
        return conform(self.target.query(sql), SYNCS)
