"""The hightouch layout (seeds 002, 004): `sync_changelog`, `sync_snapshot` and `sync_runs`.

All three are written once a run has ended, from a diff of the run against the sync's
previous snapshot (`synclog.diff`):

- `sync_changelog` (append-only; a replayed run replaces its own rows): one row per record
  the engine reported, plus one per row that left a whole-model run (`Run.full_model`), except
  records that repeat their row exactly (same fields hash) and succeed as it did last time: a
  whole-model run sends every row, and those are no operation. op_type `removed` for a delete
  or a row that left, `added` for a row the previous snapshot lacks, `changed` otherwise (the
  fields changed, or a known row was sent again after failing or being aborted: a retry).
- `sync_snapshot` (replaced per sync, atomically): one row per row id of the model, as last
  known. A row the run sent takes its new status (op_type `added`, `changed` when its fields
  hash differs from the previous one, else `unchanged`); a row the run did not send keeps its
  last status, fields and run, with op_type `unchanged`. Removed rows leave the snapshot
  whatever their status; records without a row id are not in it.
- `sync_runs`: one row per run; planned = attempted + aborted, attempted = succeeded + failed,
  per op_type, counted from the changelog rows of the run (invalid records by the destination's
  outcome; rows that left the model with nothing sent are not planned).

Retention: changelog rows expire by `batch_started_at` (per sync and table, as configured);
the snapshot keeps each row's last known state and `sync_runs` every run. Per sync, each table
can be switched off in `synclog.toml`; without `sync_snapshot` a run has no previous state to
diff against, so every record is `added` (or `removed`). `split_group` is added to the changelog
and snapshot (at the end) by the first run whose records, or whose previous snapshot, use splits.

Statuses are the destination's outcomes: succeeded stays succeeded; a rejection is `failed`
with the reason in `failure_reason`; what the engine reports as aborted is `aborted`. The
invalid-record checks (NULL or DUPLICATE identifier) set `invalid_reason` beside the status,
never in its place; `error_code` holds the destination's code (`synclog.error_codes`). A row that
left a whole-model run without a record of the run (no delete sent) is `removed` with status
NULL: it left the model, and the destination was asked nothing.

Replays: before the snapshot is replaced, the previous state of every row the run touches is
kept in `synclog_snapshot_baseline` (replaced per sync, with a marker row naming the run). A run
written again finds its own baseline there and diffs against the state before it, so replaying
the sync's latest run changes nothing. An older run than the snapshot's newest is refused
(InputError): the state before it is gone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from synclog.canonical import COPY_ORDER
from synclog.capabilities import Capabilities
from synclog.diff import Diff, diff, fields_hash, prev
from synclog.errors import InputError
from synclog.layouts.base import Layout, LayoutContext, Load
from synclog.model import RecordStatus, Run, RunStatus, as_utc
from synclog.payloads import fit_json
from synclog.targets.base import Target
from synclog.targets.rows import Rows
from synclog.targets.tables import Column as Col
from synclog.targets.tables import ColumnType as C
from synclog.targets.tables import TableSpec

SCHEMA = "hightouch_audit"
_ID = Col("sync_id", C.BIGINT, "The ID of the sync")
_RUN_ID = Col("sync_run_id", C.BIGINT, "The ID of the sync run")
_ROW_ID = Col("row_id", C.STRING, "The value of the row's primary key (NULL when the record had none)")
_STATUS = Col(
    "status", C.STRING, "succeeded, failed or aborted (never attempted); NULL: left the model, nothing sent"
)
_REASON = Col("failure_reason", C.STRING, "Why the row failed to sync, when it failed")
_FIELDS = Col("fields", C.JSON, "The model's row, as a JSON object")
_INVALID = Col("invalid_reason", C.STRING, "NULL or DUPLICATE when the identifier check failed")
_CODE = Col("error_code", C.STRING, "The destination's error code: the engine's, or read from the message")
SPLIT_GROUP = Col("split_group", C.STRING, "The audience split group; added once a sync uses splits")

CHANGELOG = TableSpec(
    layout="hightouch",
    schema=SCHEMA,
    name="sync_changelog",
    columns=(
        _ID,
        _RUN_ID,
        Col("op_type", C.STRING, "added, changed or removed relative to the sync's previous snapshot"),
        _ROW_ID,
        _STATUS,
        _REASON,
        _FIELDS,
        Col("batch_started_at", C.TIMESTAMP, "When the row's batch started (retention counts from it)"),
        _INVALID,
        _CODE,
    ),
    replace_key=("sync_id", "sync_run_id"),
    time_column="batch_started_at",
    retained=True,
)

SNAPSHOT = TableSpec(
    layout="hightouch",
    schema=SCHEMA,
    name="sync_snapshot",
    columns=(
        _ID,
        Col("op_type", C.STRING, "added, changed or unchanged relative to the sync's previous run"),
        _ROW_ID,
        _STATUS,
        _REASON,
        _FIELDS,
        Col("fields_hash", C.STRING, "Hash of `fields`: recognises unchanged rows in the next run"),
        Col("last_sync_run_id", C.BIGINT, "The last run that sent the row"),
        _INVALID,
        _CODE,
    ),
    replace_key=("sync_id",),
)

_COUNTS = tuple(
    Col(f"num_{stage}_{op}", C.BIGINT, f"Rows planned to {op} that were {stage}")
    for stage in ("planned", "attempted", "succeeded", "failed")
    for op in ("add", "change", "remove")
)
RUNS = TableSpec(
    layout="hightouch",
    schema=SCHEMA,
    name="sync_runs",
    columns=(
        _ID,
        _RUN_ID,
        Col("primary_key", C.STRING, "The model's primary key column"),
        Col("destination", C.STRING, "The destination type, e.g. Salesforce or Braze"),
        Col("model_name", C.STRING, "The name of the model attached to the sync"),
        Col("model_id", C.BIGINT, "The ID of the model attached to the sync"),
        Col("status", C.STRING, "succeeded or failed (the run ended with an error, partial runs too)"),
        Col("error", C.STRING, "The sync-level error if the run ended early"),
        Col("started_at", C.TIMESTAMP, "When the run started"),
        Col("finished_at", C.TIMESTAMP, "When the run finished"),
        *_COUNTS,
        Col("extra", C.JSON, "The engine's own fields of the run (Run.extra: its names, its run id)"),
    ),
    replace_key=("sync_id", "sync_run_id"),
)

BASELINE = TableSpec(
    layout="hightouch",
    schema=SCHEMA,
    name="synclog_snapshot_baseline",
    columns=(
        *SNAPSHOT.columns,
        Col("baseline_run_id", C.BIGINT, "The run this is the state before"),
        Col("existed", C.BOOLEAN, "Whether the snapshot held the row before that run"),
        Col("baseline_started_at", C.TIMESTAMP, "When that run started (on the marker row)"),
    ),
    replace_key=("sync_id",),
)
"""Internal: the snapshot rows of a sync as they were before its latest run, for replays."""

_OPS = {"added": "add", "changed": "change", "removed": "remove"}
_OUTCOME = ("status", "failure_reason", "invalid_reason", "error_code")
"""The columns of a record's outcome: NULL for a row that left the model with nothing sent."""


def table_for(table: TableSpec, *, fields: bool, splits: bool) -> TableSpec:
    """`table` without `fields` where the target does not write it, with `split_group` once used."""
    columns = tuple(c for c in table.columns if fields or c.name != "fields")
    if splits and table is not RUNS:
        columns = (*columns, SPLIT_GROUP)
    return replace(table, columns=columns)


class HightouchLayout(Layout):
    """Hightouch's Warehouse Sync Logs tables."""

    name: ClassVar[str] = "hightouch"
    tables: ClassVar[tuple[TableSpec, ...]] = (CHANGELOG, SNAPSHOT, RUNS, BASELINE)

    def batch_rows(self, ctx: LayoutContext) -> Iterator[Load]:
        return iter(())

    def admit(self, run: Run, target: Target, ensure: Callable[[TableSpec], None]) -> None:
        """Refuse (InputError) a run that started before the run the sync's snapshot holds last,
        before anything of it is logged (`finish` would refuse it)."""
        ensure(table_for(BASELINE, fields=target.capabilities.fields_column, splits=False))
        refuse_older(run, latest_run(target, run.sync_id))

    def run_rows(self, ctx: LayoutContext) -> Iterator[Load]:
        run, caps = ctx.run, ctx.capabilities
        previous, replay = _previous_snapshot(ctx)
        splits = _uses_splits(ctx.records) or _uses_splits(previous)
        d = diff(run_side(ctx.records), previous, full_model=run.full_model, order=copy_order())
        fields = caps.fields_column
        of_sync = {"sync_id": run.sync_id}
        of_run = {"sync_id": run.sync_id, "sync_run_id": run.sync_run_id}
        if not replay:
            table = table_for(BASELINE, fields=fields, splits=splits)
            yield Load(table, Rows.of(_baseline_rows(d, run, table)), of_sync)
        table = table_for(SNAPSHOT, fields=fields, splits=splits)
        snapshot = _select(d.joined.where(d.kept), table, _snapshot_values(d, run, caps))
        yield Load(table, Rows.of(snapshot), of_sync)
        table = table_for(CHANGELOG, fields=fields, splits=splits)
        changelog = _select(d.joined.where(d.logged), table, _changelog_values(d, run, caps))
        yield Load(table, Rows.of(changelog), of_run)
        counts = {(r[0], r[1]): int(r[2]) for r in changelog.groupBy("op_type", "status").count().collect()}
        yield Load(RUNS, Rows.local(ctx.records.sparkSession, RUNS, [_run_row(run, counts)]), of_run)


_ORDERED = "_copy_"
"""Prefix of the canonical columns that order a run's copies of one row (`run_side`)."""


def copy_order() -> list[Column]:
    """Which of a run's records of one row stands for it in the snapshot: the latest batch's, and
    in it the first in the order of their log ids' occurrence (never the ids themselves)."""
    return [F.col("batch_number").desc(), *(F.col(_ORDERED + name) for name in COPY_ORDER)]


def run_side(records: DataFrame) -> DataFrame:
    """The canonical records in the hightouch vocabulary, with the hash of their fields (and the
    canonical columns `_COPY_ORDER` reads)."""
    status = F.col("status")
    failed = status == RecordStatus.REJECTED.value
    return records.select(
        F.col("record_identifier").alias("row_id"),
        "log_id",
        "batch_number",
        *(F.col(name).alias(_ORDERED + name) for name in COPY_ORDER),
        (F.col("operation") == "delete").alias("removes"),
        F.when(status == RecordStatus.SUCCEEDED.value, F.lit("succeeded"))
        .when(status == RecordStatus.ABORTED.value, F.lit("aborted"))
        .otherwise(F.lit("failed"))
        .alias("status"),
        F.when(failed, F.col("status_message")).alias("failure_reason"),
        "invalid_reason",
        "error_code",
        "fields",
        fields_hash(F.col("fields")).alias("fields_hash"),
        "split_group",
        "batch_started_at",
    )


def _changelog_values(d: Diff, run: Run, caps: Capabilities) -> dict[str, Column]:
    """A row that left the model without a record of the run has no status: the destination
    was not asked to do anything with it (a delete the engine sent is a record of its own)."""
    return {
        "sync_id": F.lit(run.sync_id),
        "sync_run_id": F.lit(run.sync_run_id),
        "op_type": d.change,
        "row_id": d.row_id,
        **{c: F.when(d.in_run, F.col(c)) for c in _OUTCOME},
        "fields": _fields(d, caps),
        "batch_started_at": d.pick("batch_started_at", F.lit(run.started_at)),
        "split_group": d.pick("split_group"),
    }


def _snapshot_values(d: Diff, run: Run, caps: Capabilities) -> dict[str, Column]:
    return {
        "sync_id": F.lit(run.sync_id),
        "op_type": d.state,
        "row_id": d.row_id,
        "status": d.pick("status"),
        **{c: d.pick(c) for c in ("failure_reason", "invalid_reason", "error_code", "fields_hash")},
        "fields": _fields(d, caps),
        "last_sync_run_id": F.when(d.in_run, F.lit(run.sync_run_id)).otherwise(prev("last_sync_run_id")),
        "split_group": d.pick("split_group"),
    }


def _fields(d: Diff, caps: Capabilities) -> Column:
    """The run's fields, fitted to the target's JSON size limit; previous rows keep theirs."""
    return F.when(d.in_run, fit_json(F.col("fields"), caps.max_json_bytes)).otherwise(prev("fields"))


def _baseline_rows(d: Diff, run: Run, table: TableSpec) -> DataFrame:
    """The previous state of the rows the run touches, and a marker row naming the run."""
    values: dict[str, Column] = {c: prev(c) for c in table.column_names()}
    values |= {
        "sync_id": F.lit(run.sync_id),
        "row_id": d.row_id,
        "baseline_run_id": F.lit(run.sync_run_id),
        "existed": d.was_there,
        "baseline_started_at": F.lit(None),
    }
    rows = _select(d.joined.where(d.touched), table, values)
    spark = d.joined.sparkSession
    marker = {
        "sync_id": F.lit(run.sync_id),
        "baseline_run_id": F.lit(run.sync_run_id),
        "baseline_started_at": F.lit(as_utc(run.started_at)).cast("timestamp"),
    }
    return rows.unionByName(_select(spark.range(1), table, marker))


def _previous_snapshot(ctx: LayoutContext) -> tuple[DataFrame, bool]:
    """The sync's snapshot before this run, and whether the run is being replayed."""
    # Read every column back (a column the target lacks reads NULL).
    schema = table_for(SNAPSHOT, fields=True, splits=True)
    current = ctx.previous(schema)
    if current is None:
        current = ctx.records.sparkSession.createDataFrame([], schema.spark_schema())
    baseline = ctx.previous(table_for(BASELINE, fields=True, splits=True))
    marker = None
    if baseline is not None:
        found = baseline.where(F.col("row_id").isNull()).select("baseline_run_id", "baseline_started_at")
        marker = found.first()
    latest = None if marker is None else LatestRun(marker[0], marker[1])
    if latest is not None and latest.sync_run_id == ctx.run.sync_run_id:
        assert baseline is not None
        return _before(current, baseline), True
    refuse_older(ctx.run, latest)
    return current, False


@dataclass(frozen=True)
class LatestRun:
    """The run a sync's snapshot holds last: the one its baseline marker names."""

    sync_run_id: int
    started_at: datetime | None
    """None for a marker written before synclog kept it."""


def refuse_older(run: Run, latest: LatestRun | None) -> None:
    """Raise InputError for a run that started before the run the snapshot holds last (another
    run than it): the state before it is gone, and diffing it against a later snapshot would log
    changes that never happened and put old values back. Runs are ordered by the time they
    started, never by their ids (`stable_id` of a name does not grow with time)."""
    if latest is None or latest.sync_run_id == run.sync_run_id or latest.started_at is None:
        return
    started, before = as_utc(run.started_at), as_utc(latest.started_at)
    if started < before:
        raise InputError(
            f"sync {run.sync_id}: run {run.sync_run_id} started at {started:%Y-%m-%d %H:%M:%S} UTC, "
            f"before run {latest.sync_run_id} ({before:%Y-%m-%d %H:%M:%S} UTC), "
            "which its hightouch snapshot already holds; of a sync's runs only the latest can be "
            "written again"
        )


def latest_run(target: Target, sync_id: int) -> LatestRun | None:
    """The run `sync_id`'s snapshot holds last, read from the baseline's marker row (one small
    query; the baseline table must exist with its `baseline_started_at`)."""
    relation = target.relation(BASELINE).render()
    found = target.query(
        f"SELECT baseline_run_id, baseline_started_at FROM {relation} "
        f"WHERE sync_id = {target.dialect.placeholder} AND row_id IS NULL",
        [sync_id],
    ).to_pylist()
    if not found:
        return None
    values = list(found[0].values())
    started = values[1]
    if isinstance(started, str):  # a target whose timestamps read back as ISO text
        started = datetime.fromisoformat(started)
    return LatestRun(int(values[0]), started)


def _before(current: DataFrame, baseline: DataFrame) -> DataFrame:
    """The snapshot as it was before the baseline's run: its touched rows put back as they were."""
    touched = baseline.where(F.col("row_id").isNotNull())
    kept = current.hint("merge").join(touched.select("row_id"), "row_id", "left_anti")  # never broadcast
    return kept.unionByName(touched.where(F.col("existed")).select(*current.columns))


def _uses_splits(frame: DataFrame) -> bool:
    return not frame.where(F.col("split_group").isNotNull()).isEmpty()


def _select(frame: DataFrame, table: TableSpec, values: dict[str, Column]) -> DataFrame:
    """`table`'s columns in order, typed; columns `values` lacks are NULL."""
    return frame.select(
        *[values.get(c.name, F.lit(None)).cast(c.type.spark()).alias(c.name) for c in table.columns]
    )


def _run_row(run: Run, counts: dict[tuple[str, str], int]) -> dict[str, Any]:
    """The run's `sync_runs` row; `counts` are changelog rows by (op_type, status)."""
    row: dict[str, Any] = {
        "sync_id": run.sync_id,
        "sync_run_id": run.sync_run_id,
        "primary_key": run.primary_key,
        "destination": run.destination.type.split("::")[0],
        "model_name": run.model_name,
        "model_id": run.model_id,
        "status": "succeeded" if run.status is RunStatus.SUCCEEDED else "failed",  # the seed's two
        "error": run.error,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "extra": json.dumps(run.extra) if run.extra else None,
    }
    for op_type, op in _OPS.items():

        def n(*statuses: str, op_type: str = op_type) -> int:
            return sum(counts.get((op_type, s), 0) for s in statuses)

        row[f"num_planned_{op}"] = n("succeeded", "failed", "aborted")
        row[f"num_attempted_{op}"] = n("succeeded", "failed")
        row[f"num_succeeded_{op}"] = n("succeeded")
        row[f"num_failed_{op}"] = n("failed")
    return row
