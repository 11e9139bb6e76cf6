"""The lake layout's files (seeds 001 and 003, docs/analysts/layouts.md), in plain Python.

`sync_tracking_datasets/ORG/SYNC/RUN/[batch_type].[batch_number].parquet` holds a batch's
records of one batch type (`records_updated`, `records_upserted`, …, from the lake's operation:
`create` reads `append`); `status` is the identifier check's `NULL` or `DUPLICATE` first, else
the destination's `succeeded` or `rejected` (an aborted record is rejected, with the engine's
message or the "Not attempted" one); `metadata.json` describes a finished run, with the payload
schema (top-level field → JSON type); `metadata/ORG/<table>/<id>.parquet` holds one object.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from synclog.model import Run, as_utc
from synclog_testing.reference.census import ABORTED_MESSAGE
from synclog_testing.reference.records import Logged

OPERATIONS = {"create": "append"}
BATCH_TYPES = {
    "update": "records_updated",
    "upsert": "records_upserted",
    "delete": "records_deleted",
    "append": "records_appended",
    "mirror": "records_mirrored",
}


def record_file(run: Run, r: Logged) -> str:
    """The file a record goes to, relative to the lake's root."""
    operation = OPERATIONS.get(r.record.operation, r.record.operation)
    return (
        f"sync_tracking_datasets/{run.org_id}/{run.sync_id}/{run.sync_run_id}/"
        f"{BATCH_TYPES[operation]}.{r.batch}.parquet"
    )


def record_row(r: Logged) -> dict[str, Any]:
    """A record's row in its file."""
    record = r.record
    outcome = "succeeded" if record.status == "succeeded" else "rejected"
    message = record.status_message
    if record.status == "aborted" and message is None:
        message = ABORTED_MESSAGE
    return {
        "identifier": record.record_identifier,
        "record_payload": record.record_payload,
        "operation": OPERATIONS.get(record.operation, record.operation),
        "status": r.invalid_reason or outcome,
        "status_message": message,
        "batch_started_at": as_utc(record.batch_started_at),
        "batch_ended_at": as_utc(record.batch_completed_at),
        "destination_status": outcome,
        "error_code": r.error_code,
    }


def metadata_file(run: Run) -> str:
    return f"sync_tracking_datasets/{run.org_id}/{run.sync_id}/{run.sync_run_id}/metadata.json"


def metadata(run: Run, payloads: Iterable[str]) -> dict[str, Any]:
    """A finished run's metadata.json."""
    return {
        "organization_id": run.org_id,
        "workspace_id": run.workspace_id,
        "sync_id": run.sync_id,
        "sync_run_id": run.sync_run_id,
        "sync_behaviour": run.behaviour.value,
        "primary_key": run.primary_key,
        "source_type": run.source.type,
        "source_id": run.source.id,
        "source_object_type": run.source_object.type,
        "source_object_id": run.source_object.id,
        "destination_type": run.destination.type,
        "destination_id": run.destination.id,
        "destination_object_type": run.destination_object.type,
        "destination_object_id": run.destination_object.id,
        "sync_run_started_at": as_utc(run.started_at),
        "sync_run_finished_at": None if run.finished_at is None else as_utc(run.finished_at),
        "sync_run_status": run.status.value,
        "record_payload_schema": json.dumps(payload_schema(payloads)),
        "extra": json.dumps(run.extra) if run.extra else None,
    }


def payload_schema(payloads: Iterable[str]) -> dict[str, Any]:
    """Field → JSON type over the payload objects; a field NULL in some records takes the others'
    type, one only ever NULL is "null", one of several types gets their sorted list."""
    found: dict[str, set[str]] = {}
    for text in payloads:
        value = json.loads(text) if text is not None else None
        if not isinstance(value, dict):
            continue
        for name, item in value.items():
            found.setdefault(name, set()).add(_json_type(item))
    schema: dict[str, Any] = {}
    for name, types in sorted(found.items()):
        known = sorted(types - {"null"}) or ["null"]
        schema[name] = known[0] if len(known) == 1 else known
    return schema


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def fact_file(org_id: int, table: str, object_id: int) -> str:
    return f"metadata/{org_id}/{table}/{object_id}.parquet"
