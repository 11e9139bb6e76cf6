"""Small, deterministic sample runs and record results for tests."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from synclog.model import Behaviour, Connection, DestinationObject, Run, SourceObject
from synclog.records import INPUT_SCHEMA

_OPTIONAL = ("split_group", "fields", "error_code")
RECORD_COLUMNS = [f.name for f in INPUT_SCHEMA.fields if f.name not in _OPTIONAL]
RECORD_DDL = (
    "record_identifier string, operation string, status string, status_message string, "
    "record_payload string, batch_number int, batch_started_at timestamp, "
    "batch_completed_at timestamp"
)
REJECTION = "INVALID_EMAIL_ADDRESS: Email: invalid email address"


def make_run(sync_id: int = 1234, sync_run_id: int = 5678, **changes: Any) -> Run:
    """A mirror sync run from a segment to Salesforce contacts."""
    run = Run(
        org_id=1,
        workspace_id=11,
        sync_id=sync_id,
        sync_run_id=sync_run_id,
        primary_key="email",
        behaviour=Behaviour.MIRROR,
        source=Connection(101, "Snowflake::Connection", "Analytics"),
        source_object=SourceObject(
            201, "DataWarehouse::FilterSegmentSource", "High-value customers", filter_segment_id=31
        ),
        destination=Connection(301, "Salesforce::Connection", "Salesforce"),
        destination_object=DestinationObject(401, "Salesforce::ObjectTypes::Contact", "Contact"),
        model_id=51,
        model_name="High-value customers",
        started_at=datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1),
    )
    return replace(run, **changes)


def record_rows(
    run: Run,
    count: int = 40,
    batches: int = 2,
    *,
    started_at: datetime | None = None,
    null_at: tuple[int, ...] = (3,),
    duplicate_of: dict[int, int] | None = None,
) -> list[tuple[Any, ...]]:
    """Rows in `RECORD_DDL` order: every 4th a delete, every 5th rejected, some invalid.

    `null_at` positions get a NULL identifier; `duplicate_of` maps a position to the position
    whose identifier it repeats (by default position 9 repeats position 8).
    """
    duplicate_of = {9: 8} if duplicate_of is None else duplicate_of
    start = started_at or run.started_at
    rows = []
    for i in range(count):
        batch = i * batches // count
        who = duplicate_of.get(i, i)
        identifier = None if i in null_at else f"user{run.sync_id}-{who}@example.com"
        rejected = i % 5 == 4
        rows.append(
            (
                identifier,
                "delete" if i % 4 == 1 else "upsert",
                "rejected" if rejected else "succeeded",
                REJECTION if rejected else None,
                f'{{"email": "user{who}@example.com", "plan": "pro", "seats": {i}}}',
                batch,
                start + timedelta(minutes=batch),
                start + timedelta(minutes=batch, seconds=30),
            )
        )
    return rows


def make_records(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    """A record-results frame from `record_rows`-shaped tuples."""
    return spark.createDataFrame(rows, RECORD_DDL)


Person = tuple[str | None, str, str, int]
"""(identifier, operation, input status, version of the person's fields)."""


def person_rows(
    run: Run, people: list[Person], *, started_at: datetime | None = None
) -> list[tuple[Any, ...]]:
    """Rows in `RECORD_DDL` order, one batch, whose payload (the model's fields) is the person's version."""
    start = started_at or run.started_at
    return [
        (
            identifier,
            operation,
            status,
            REJECTION if status == "rejected" else None,
            json.dumps({"id": identifier, "version": version}),
            0,
            start,
            start + timedelta(seconds=30),
        )
        for identifier, operation, status, version in people
    ]
