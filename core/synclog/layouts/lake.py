"""The lake layout (seeds 001, 003): Census' Sync Tracking files in a folder or a bucket.

    sync_tracking_datasets/ORG_ID/SYNC_ID/SYNC_RUN_ID/[batch_type].[batch_number].parquet
    sync_tracking_datasets/ORG_ID/SYNC_ID/SYNC_RUN_ID/metadata.json
    metadata/ORG_ID/{source_objects,destinations,destination_objects}/ID.parquet

Every records file has the same columns. A batch is split into one file per batch type, and the
batch type follows from the record's (lake) operation: `records_updated`, `records_upserted`,
`records_deleted`, `records_appended`, `records_mirrored`.

Statuses: succeeded and rejected as reported; the identifier checks' `NULL` and `DUPLICATE`;
a record the engine `aborted` (never sent, the run ended first) is `rejected`, with the engine's
message or, when it gave none, "Not attempted: the run ended before this record was sent".
Operations: as reported, except `create`, which the lake's vocabulary calls `append`.

Each file is named by a path template over columns of the rows a layout yields: template fields
that are not columns of the table (org_id, batch_type, batch_number, …) place the rows and are
not stored in the file.

A file's path holds its whole key, so every write replaces whole files and none is read and
merged: writers of different runs and syncs never lose each other's rows. A fact table is a
folder with one file per object (`metadata/1/source_objects/7.parquet`), read as one table
(`read_parquet('…/metadata/1/source_objects/*.parquet')`, or the folder in Spark). Two writers
of the same object publish the same row or a newer description of it: the last one stays.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from synclog.layouts import census
from synclog.layouts.base import Layout, LayoutContext, Load
from synclog.model import RecordStatus, Run
from synclog.payload_schema import FieldType, payload_schema
from synclog.targets.lake_files import LakeFiles
from synclog.targets.rows import Rows
from synclog.targets.tables import Column as Col
from synclog.targets.tables import ColumnType as C
from synclog.targets.tables import TableSpec

ABORTED_MESSAGE = census.ABORTED_MESSAGE
STATUSES: Mapping[RecordStatus, str] = {
    RecordStatus.SUCCEEDED: "succeeded",
    RecordStatus.REJECTED: "rejected",
    RecordStatus.ABORTED: "rejected",
}
"""The destination's outcome in the lake's vocabulary (`destination_status`)."""
OPERATIONS: Mapping[str, str] = {"create": "append"}
"""Operations renamed for the lake; the others keep their name."""
BATCH_TYPES: Mapping[str, str] = {
    "update": "records_updated",
    "upsert": "records_upserted",
    "delete": "records_deleted",
    "append": "records_appended",
    "mirror": "records_mirrored",
}
"""The batch type (file name prefix) of each lake operation."""

RECORDS = TableSpec(
    layout="lake",
    schema="sync_tracking_datasets",
    name="records",
    columns=(
        Col("identifier", C.STRING, "The value of the sync key for this record"),
        Col("record_payload", C.JSON, "The record extracted from the source, as JSON text"),
        Col("operation", C.STRING, "update, upsert, delete, append or mirror"),
        Col("status", C.STRING, "succeeded, rejected, NULL or DUPLICATE (the identifier check's flag first)"),
        Col("status_message", C.STRING, "The destination's reason when the record was rejected"),
        Col("batch_started_at", C.TIMESTAMP, "When sending the batch started"),
        Col("batch_ended_at", C.TIMESTAMP, "When sending the batch finished"),
        Col(
            "destination_status",
            C.STRING,
            "succeeded or rejected: the destination's outcome (of invalid ones too)",
        ),
        Col("error_code", C.STRING, "The destination's error code: the engine's, or read from the message"),
    ),
    replace_key=("org_id", "sync_id", "sync_run_id", "batch_number"),
    time_column="batch_started_at",
    retained=True,
)

RUN_METADATA = TableSpec(
    layout="lake",
    schema="sync_tracking_datasets",
    name="metadata",
    columns=(
        Col("organization_id", C.BIGINT),
        Col("workspace_id", C.BIGINT),
        Col("sync_id", C.BIGINT, "The sync configuration"),
        Col("sync_run_id", C.BIGINT),
        Col("sync_behaviour", C.STRING, "update, upsert, create, append, mirror or delete"),
        Col("primary_key", C.STRING, "The sync key: the column `identifier` holds"),
        Col("source_type", C.STRING),
        Col("source_id", C.BIGINT),
        Col("source_object_type", C.STRING),
        Col("source_object_id", C.BIGINT),
        Col("destination_type", C.STRING),
        Col("destination_id", C.BIGINT),
        Col("destination_object_type", C.STRING),
        Col("destination_object_id", C.BIGINT),
        Col("sync_run_started_at", C.TIMESTAMP),
        Col("sync_run_finished_at", C.TIMESTAMP),
        Col("sync_run_status", C.STRING, "running, succeeded, partial or failed (see RunStatus)"),
        Col("record_payload_schema", C.JSON, "Payload field → JSON type"),
        Col("extra", C.JSON, "The engine's own fields of the run (Run.extra), NULL when none"),
    ),
    replace_key=("organization_id", "sync_id", "sync_run_id"),
)


def _fact(table: TableSpec) -> TableSpec:
    """A census fact table as the lake keeps it: per organisation, one file per object."""
    return replace(table, layout="lake", schema="metadata", replace_key=("org_id", "id"))


SOURCE_OBJECTS = _fact(census.SOURCE_OBJECTS)
DESTINATIONS = _fact(census.DESTINATIONS)
DESTINATION_OBJECTS = _fact(census.DESTINATION_OBJECTS)

_RUN_FOLDER = "sync_tracking_datasets/{org_id}/{sync_id}/{sync_run_id}"
FILES: Mapping[TableSpec, str] = {
    RECORDS: _RUN_FOLDER + "/{batch_type}.{batch_number}.parquet",
    RUN_METADATA: "sync_tracking_datasets/{organization_id}/{sync_id}/{sync_run_id}/metadata.json",
    SOURCE_OBJECTS: "metadata/{org_id}/source_objects/{id}.parquet",
    DESTINATIONS: "metadata/{org_id}/destinations/{id}.parquet",
    DESTINATION_OBJECTS: "metadata/{org_id}/destination_objects/{id}.parquet",
}
"""Where each table's rows go, relative to the lake's root; every template holds its table's key."""
FIELD_VALUES: Mapping[str, tuple[str, ...]] = {"batch_type": tuple(BATCH_TYPES.values())}
"""Every value a path field that is not part of its table's key can take."""
LAKE_FILES = LakeFiles(FILES, FIELD_VALUES)
"""What the lake target is opened with: this layout's files."""


class LakeLayout(Layout):
    """Census' Sync Tracking datasets: records files per batch, metadata.json per run, fact tables."""

    name: ClassVar[str] = "lake"
    tables: ClassVar[tuple[TableSpec, ...]] = tuple(FILES)
    needs_payload_schema: ClassVar[bool] = True

    def batch_rows(self, ctx: LayoutContext) -> Iterator[Load]:
        operation = _lookup(OPERATIONS, F.col("operation"))
        outcome = _lookup(STATUSES, F.col("status"))
        aborted = F.col("status") == RecordStatus.ABORTED.value
        message = F.when(aborted, F.coalesce("status_message", F.lit(ABORTED_MESSAGE))).otherwise(
            F.col("status_message")
        )
        records = Rows.select(
            ctx.records,
            F.lit(ctx.run.org_id).cast("bigint").alias("org_id"),
            F.col("sync_id"),
            F.col("sync_run_id"),
            F.col("batch_number"),
            _lookup(BATCH_TYPES, operation, keep=False).alias("batch_type"),
            F.col("record_identifier").alias("identifier"),
            F.col("record_payload"),
            operation.alias("operation"),
            F.coalesce("invalid_reason", outcome).alias("status"),
            message.alias("status_message"),
            F.col("batch_started_at"),
            F.col("batch_completed_at").alias("batch_ended_at"),
            outcome.alias("destination_status"),
            F.col("error_code"),
        )
        yield Load(RECORDS, records)

    def run_rows(self, ctx: LayoutContext) -> Iterator[Load]:
        run, spark = ctx.run, ctx.records.sparkSession
        schema = ctx.payload_schema
        metadata = metadata_row(run, payload_schema(ctx.records) if schema is None else schema)
        yield Load(RUN_METADATA, Rows.local(spark, RUN_METADATA, [metadata]))
        facts = (
            (SOURCE_OBJECTS, run.source_object),
            (DESTINATIONS, run.destination),
            (DESTINATION_OBJECTS, run.destination_object),
        )
        for table, fact in facts:
            placed = replace(table, columns=(*table.columns, Col("org_id", C.BIGINT)))
            yield Load(table, Rows.local(spark, placed, [{**vars(fact), "org_id": run.org_id}]))


def metadata_row(run: Run, schema: Mapping[str, FieldType]) -> dict[str, Any]:
    """The one row of a run's metadata.json (JSON columns as text)."""
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
        "sync_run_started_at": run.started_at,
        "sync_run_finished_at": run.finished_at,
        "sync_run_status": run.status.value,
        "record_payload_schema": json.dumps(schema),
        "extra": json.dumps(run.extra) if run.extra else None,
    }


def _lookup(mapping: Mapping[Any, str], column: Column, *, keep: bool = True) -> Column:
    """`mapping[column]` as a Spark expression; unmapped values kept (or NULL when `keep` is false)."""
    pairs = [F.lit(str(part)) for item in mapping.items() for part in item]
    found = F.create_map(*pairs)[column]
    return F.coalesce(found, column) if keep else found
