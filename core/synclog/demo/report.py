"""Answer the seeds' questions on what the demo wrote, with SQL any target runs."""

from __future__ import annotations

import pyarrow as pa

from synclog.layouts.census import SOURCE_OBJECTS, SYNC_LOG
from synclog.targets.base import Target


def rejection_reasons(target: Target, limit: int = 5) -> pa.Table:
    """The destination's most common reasons for rejecting records."""
    log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
    return target.query(
        f"SELECT status_message, COUNT(*) AS records FROM {log} "
        "WHERE status = 'rejected' AND invalid_reason IS NULL AND status_message IS NOT NULL "
        f"GROUP BY status_message ORDER BY records DESC, status_message LIMIT {int(limit)}"
    )


def invalid_records(target: Target) -> pa.Table:
    """How many records the identifier checks flagged, by reason."""
    log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
    return target.query(
        f"SELECT invalid_reason, COUNT(*) AS records FROM {log} "
        "WHERE invalid_reason IS NOT NULL GROUP BY invalid_reason ORDER BY invalid_reason"
    )


def segment_changes(target: Target, sync_id: int, sync_run_id: int) -> pa.Table:
    """Who entered and who left a mirrored segment in one run, by the segment's name.

    Entered: sent as an upsert, and new to the sync or deleted by its last run before.
    Left: deleted from the destination.
    """
    log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
    sources = target.relation(SOURCE_OBJECTS).render()
    p = target.placeholder
    return target.query(
        f"WITH ops AS (SELECT record_identifier, sync_run_id, operation, source_object_id, "
        "LAG(operation) OVER (PARTITION BY record_identifier "
        "ORDER BY batch_started_at, sync_run_id) AS previous "
        f"FROM {log} WHERE sync_id = {p} AND status = 'succeeded') "
        "SELECT source.name AS segment, "
        "CASE WHEN ops.operation = 'delete' THEN 'left' ELSE 'entered' END AS change, "
        "COUNT(*) AS people, MIN(ops.record_identifier) AS for_example "
        f"FROM ops LEFT JOIN {sources} source ON ops.source_object_id = source.id "
        f"WHERE ops.sync_run_id = {p} AND (ops.operation = 'delete' "
        "OR ops.previous IS NULL OR ops.previous = 'delete') "
        "GROUP BY source.name, CASE WHEN ops.operation = 'delete' THEN 'left' ELSE 'entered' END "
        "ORDER BY change",
        [sync_id, sync_run_id],
    )
