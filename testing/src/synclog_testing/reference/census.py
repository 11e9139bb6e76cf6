"""The census layout's rows (seed 000, docs/analysts/layouts.md), in plain Python.

`sync_log`: one row per record; statuses are the destination's (`succeeded` or `rejected`,
an aborted record is rejected with the "Not attempted" message), operations `append` and
`mirror` read `create` and `upsert`; `invalid_reason` and `error_code` follow the seed's
columns. The metadata tables hold one row per object id. `synclog_runs` holds one row per
finished run with the status `synclog runs` shows.
"""

from __future__ import annotations

import json
from typing import Any

from synclog.model import Run, as_utc
from synclog_testing.reference.payloads import fit_json
from synclog_testing.reference.records import Logged

ABORTED_MESSAGE = "Not attempted: the run ended before this record was sent"
OPERATIONS = {"append": "create", "mirror": "upsert"}


def sync_log_row(r: Logged, run: Run, *, run_metadata: bool, max_json_bytes: int | None) -> dict[str, Any]:
    """The `sync_log` row of a record (without `_census_logged_at`, the time of the load), its
    payload fitted to the target's JSON size limit."""
    record = r.record
    row: dict[str, Any] = {
        "log_id": r.log_id,
        "sync_id": r.sync_id,
        "sync_run_id": r.sync_run_id,
        "record_identifier": record.record_identifier,
        "record_payload": fit_json(record.record_payload, max_json_bytes),
        "batch_started_at": as_utc(record.batch_started_at),
        "batch_completed_at": as_utc(record.batch_completed_at),
        "operation": OPERATIONS.get(record.operation, record.operation),
        "status": "succeeded" if record.status == "succeeded" else "rejected",
        "status_message": ABORTED_MESSAGE if record.status == "aborted" else record.status_message,
        "batch_number": record.batch_number,
        "invalid_reason": r.invalid_reason,
        "error_code": r.error_code,
    }
    if run_metadata:
        row |= {
            "destination_id": run.destination.id,
            "destination_object_id": run.destination_object.id,
            "source_id": run.source.id,
            "source_object_id": run.source_object.id,
        }
    return row


def facts(run: Run) -> dict[str, dict[str, Any]]:
    """The run's rows of `source_objects`, `destinations` and `destination_objects`."""
    source, destination, target = run.source_object, run.destination, run.destination_object
    return {
        "source_objects": {
            "id": source.id,
            "type": source.type,
            "name": source.name,
            "model_id": source.model_id,
            "business_object_id": source.business_object_id,
            "filter_segment_id": source.filter_segment_id,
            "cohort_id": source.cohort_id,
        },
        "destinations": {"id": destination.id, "type": destination.type, "name": destination.name},
        "destination_objects": {"id": target.id, "type": target.type, "name": target.name},
    }


def runs_row(run: Run) -> dict[str, Any]:
    """The run's `synclog_runs` row (its status as `finish` logged it)."""
    return {
        "sync_id": run.sync_id,
        "sync_run_id": run.sync_run_id,
        "status": run.status.value,
        "error": run.error,
        "started_at": as_utc(run.started_at),
        "finished_at": None if run.finished_at is None else as_utc(run.finished_at),
        "extra": json.dumps(run.extra) if run.extra else None,
    }
