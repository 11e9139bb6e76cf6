"""Answer the seeds' questions on what the demo wrote: SQL per layout, as the seeds write it.

Every selected column has an alias: an engine names a column selected without one its own way
(`r.sync_run_id` or `sync_run_id`), so answers compare across engines only with one.

Counts are COUNTs, never SUMs of 0 and 1: a SUM's type differs between warehouses (fakesnow,
Snowflake on DuckDB, answers it as a float), a COUNT is an integer on every one.
"""

from __future__ import annotations

import pyarrow as pa

from synclog.errors import SynclogError
from synclog.layouts.census import SOURCE_OBJECTS, SYNC_LOG
from synclog.layouts.hightouch import CHANGELOG, RUNS, SNAPSHOT
from synclog.targets.base import Target

SEED_003 = """SELECT status_message, ARRAY_AGG(identifier) AS rejected_records
FROM read_parquet('s3://your_bucket/sync_tracking_datasets/1/2/3/*.parquet', union_by_name=True)
WHERE status = 'rejected'
GROUP BY 1"""
"""Seed 003's DuckDB query over one run's Sync Tracking files."""
SEED_003_PATH = "'s3://your_bucket/sync_tracking_datasets/1/2/3/*.parquet'"


class Unanswerable(SynclogError):
    """A question whose SQL needs a capability the target lacks (`Capabilities.lacking`)."""


def needs(target: Target, *capabilities: str) -> None:
    """Raise `Unanswerable`, naming the first of `capabilities` the target lacks, in one line."""
    missing = target.capabilities.lacking(*capabilities)
    if missing is not None:
        raise Unanswerable(missing)


def rejection_reasons(target: Target, limit: int = 5) -> pa.Table:
    """The destination's most common reasons for rejecting records."""
    log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
    return target.query(
        f"SELECT status_message AS status_message, COUNT(*) AS records FROM {log} "
        "WHERE status = 'rejected' AND invalid_reason IS NULL AND status_message IS NOT NULL "
        f"GROUP BY status_message ORDER BY records DESC, status_message LIMIT {int(limit)}"
    )


def invalid_records(target: Target) -> pa.Table:
    """How many records the identifier checks flagged, by reason."""
    log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
    return target.query(
        f"SELECT invalid_reason AS invalid_reason, COUNT(*) AS records FROM {log} "
        "WHERE invalid_reason IS NOT NULL GROUP BY invalid_reason ORDER BY invalid_reason"
    )


def segment_changes(target: Target, sync_id: int, sync_run_id: int) -> pa.Table:
    """Who entered and who left a mirrored segment in one run, by the segment's name.

    Every alias is a word no warehouse reserves (`change` is reserved in MySQL and MariaDB).

    Entered: sent as an upsert, and new to the sync or deleted by its last run before.
    Left: deleted from the destination. Records the identifier checks flagged say nothing: a
    run that holds an identifier twice gives its records no order. A record's operation before
    is its LAG: `Unanswerable` on a target without WITH queries or window functions.
    """
    needs(target, "ctes", "window_functions")
    log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
    sources = target.relation(SOURCE_OBJECTS).render()
    p = target.dialect.placeholder
    return target.query(
        f"WITH ops AS (SELECT record_identifier, sync_run_id, operation, source_object_id, "
        "LAG(operation) OVER (PARTITION BY record_identifier "
        "ORDER BY batch_started_at, sync_run_id) AS previous "
        f"FROM {log} WHERE sync_id = {p} AND status = 'succeeded' AND invalid_reason IS NULL) "
        "SELECT source.name AS segment, "
        "CASE WHEN ops.operation = 'delete' THEN 'left' ELSE 'entered' END AS movement, "
        "COUNT(*) AS people, MIN(ops.record_identifier) AS for_example "
        f"FROM ops LEFT JOIN {sources} source ON ops.source_object_id = source.id "
        f"WHERE ops.sync_run_id = {p} AND (ops.operation = 'delete' "
        "OR ops.previous IS NULL OR ops.previous = 'delete') "
        "GROUP BY source.name, CASE WHEN ops.operation = 'delete' THEN 'left' ELSE 'entered' END "
        "ORDER BY movement",
        [sync_id, sync_run_id],
    )


def run_files(org_id: int, sync_id: int, sync_run_id: int) -> str:
    """The lake path of one run's records files, as seed 003 globs them."""
    return f"sync_tracking_datasets/{org_id}/{sync_id}/{sync_run_id}/*.parquet"


def rejected_records(target: Target, org_id: int, sync_id: int, sync_run_id: int) -> pa.Table:
    """Seed 003's query on one run of the lake, unchanged but for its path (bound as a parameter)."""
    sql = SEED_003.replace(SEED_003_PATH, target.dialect.placeholder)
    return target.query(sql, [target.uri(run_files(org_id, sync_id, sync_run_id))])


def lake_statuses(target: Target) -> pa.Table:
    """Records per status across every run the lake holds."""
    return target.query(
        "SELECT status AS status, COUNT(*) AS records FROM read_parquet(?, union_by_name=True) "
        "GROUP BY status ORDER BY status",
        [target.uri("sync_tracking_datasets/*/*/*/*.parquet")],
    )


def lake_payload_schema(target: Target, org_id: int, sync_id: int, sync_run_id: int) -> pa.Table:
    """The record payload schema of one run, from its metadata.json."""
    return target.query(
        "SELECT field.key AS field, field.value ->> '$' AS json_type "
        "FROM read_json_objects(?) AS metadata, "
        "json_each(metadata.json -> 'record_payload_schema') AS field ORDER BY 1",
        [target.uri(f"sync_tracking_datasets/{org_id}/{sync_id}/{sync_run_id}/metadata.json")],
    )


def sync_errors(target: Target, limit: int = 5) -> pa.Table:
    """Seed 002: the most common sync errors among the rows' latest statuses."""
    snapshot = target.relation(SNAPSHOT).render()
    return target.query(
        f"SELECT failure_reason AS failure_reason, COUNT(*) AS c FROM {snapshot} "
        "WHERE failure_reason IS NOT NULL "
        f"GROUP BY failure_reason ORDER BY c DESC, failure_reason LIMIT {int(limit)}"
    )


def audience_moves(target: Target) -> pa.Table:
    """Seed 002: how many rows entered, changed in and left each model, run by run."""
    changelog, runs = target.relation(CHANGELOG).render(), target.relation(RUNS).render()
    counted = {"added": "entered", "changed": "changed", "removed": "left_"}
    sums = ", ".join(
        f"COUNT(CASE WHEN c.op_type = '{op}' THEN 1 END) AS {name}" for op, name in counted.items()
    )
    moves = target.query(
        f"SELECT r.model_name AS audience, r.sync_run_id AS sync_run_id, r.status AS run_status, {sums}, "
        "COUNT(CASE WHEN c.status = 'failed' THEN 1 END) AS failed, "
        "COUNT(CASE WHEN c.status = 'aborted' THEN 1 END) AS aborted "
        f"FROM {changelog} c JOIN {runs} r ON c.sync_run_id = r.sync_run_id "
        "GROUP BY r.model_name, r.sync_run_id, r.status, r.started_at ORDER BY r.model_name, r.started_at"
    )
    return moves.rename_columns([name.rstrip("_") for name in moves.column_names])


def current_members(target: Target) -> pa.Table:
    """Seed 002: the rows each model holds now that did not fail, and those that did."""
    snapshot, runs = target.relation(SNAPSHOT).render(), target.relation(RUNS).render()
    return target.query(
        "SELECT m.model_name AS audience, "
        "COUNT(CASE WHEN s.status <> 'failed' THEN 1 END) AS current_rows, "
        "COUNT(CASE WHEN s.status = 'failed' THEN 1 END) AS failed_rows "
        f"FROM {snapshot} s JOIN (SELECT DISTINCT sync_id, model_name FROM {runs}) m "
        "ON s.sync_id = m.sync_id GROUP BY m.model_name ORDER BY m.model_name"
    )
