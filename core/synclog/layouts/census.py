"""The census layout (seed 000): the `sync_log` view and the source/destination metadata tables."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from synclog.layouts.base import Layout, LayoutContext, Load
from synclog.model import RecordStatus
from synclog.payloads import fit_json
from synclog.targets.rows import Rows
from synclog.targets.tables import Column as Col
from synclog.targets.tables import ColumnType as C
from synclog.targets.tables import TableSpec

SCHEMA = "census"

SYNC_LOG = TableSpec(
    layout="census",
    schema=SCHEMA,
    name="sync_log_records",
    view="sync_log",
    columns=(
        Col("log_id", C.STRING, "Unique identifier for the log"),
        Col("sync_id", C.BIGINT, "Unique identifier for the sync configuration"),
        Col("sync_run_id", C.BIGINT, "Unique identifier for the sync run"),
        Col("record_identifier", C.STRING, "The value of the sync's identifier for the record"),
        Col("record_payload", C.JSON, "The data sent to the destination, as a JSON object"),
        Col("batch_started_at", C.TIMESTAMP, "When the batch with this record was sent"),
        Col("batch_completed_at", C.TIMESTAMP, "When the batch with this record completed"),
        Col("operation", C.STRING, "upsert, update, create or delete"),
        Col("status", C.STRING, "succeeded or rejected: the destination's outcome, invalid records too"),
        Col("status_message", C.STRING, "The destination's reason when rejected"),
        Col("_census_logged_at", C.TIMESTAMP, "When this log record was loaded"),
        Col("destination_id", C.BIGINT, "The destination connection", run_metadata=True),
        Col("destination_object_id", C.BIGINT, "The destination object", run_metadata=True),
        Col("source_id", C.BIGINT, "The source connection", run_metadata=True),
        Col("source_object_id", C.BIGINT, "The source object", run_metadata=True),
        Col("batch_number", C.INTEGER, "The batch within the run"),
        Col("invalid_reason", C.STRING, "NULL or DUPLICATE when the identifier check failed"),
        Col("error_code", C.STRING, "The destination's error code: the engine's, or read from the message"),
    ),
    replace_key=("sync_id", "sync_run_id", "batch_number"),
    time_column="batch_started_at",
    retained=True,
)

SOURCE_OBJECTS = TableSpec(
    layout="census",
    schema=SCHEMA,
    name="source_objects",
    columns=(
        Col("id", C.BIGINT, "Joins to sync_log.source_object_id"),
        Col("type", C.STRING, "DataWarehouse::Query, ::Table, ::FilterSegmentSource, …"),
        Col("name", C.STRING, "Name of the data set"),
        Col("model_id", C.BIGINT, "The model behind a DataWarehouse::Query"),
        Col("business_object_id", C.BIGINT, "The dataset behind an entity"),
        Col("filter_segment_id", C.BIGINT, "The segment behind a FilterSegmentSource"),
        Col("cohort_id", C.BIGINT, "The cohort behind a CohortSource"),
    ),
    replace_key=("id",),
    run_metadata=True,
)

DESTINATIONS = TableSpec(
    layout="census",
    schema=SCHEMA,
    name="destinations",
    columns=(
        Col("id", C.BIGINT, "Joins to sync_log.destination_id"),
        Col("type", C.STRING, "<Destination name>::Connection"),
        Col("name", C.STRING, "Name of the destination"),
    ),
    replace_key=("id",),
    run_metadata=True,
)

DESTINATION_OBJECTS = TableSpec(
    layout="census",
    schema=SCHEMA,
    name="destination_objects",
    columns=(
        Col("id", C.BIGINT, "Joins to sync_log.destination_object_id"),
        Col("type", C.STRING, "<Destination name>::ObjectTypes::<Object name>"),
        Col("name", C.STRING, "Name of the destination object"),
    ),
    replace_key=("id",),
    run_metadata=True,
)

RUNS = TableSpec(
    layout="census",
    schema=SCHEMA,
    name="synclog_runs",
    columns=(
        Col("sync_id", C.BIGINT, "The sync configuration"),
        Col("sync_run_id", C.BIGINT, "The sync run (unique within its sync)"),
        Col("status", C.STRING, "succeeded, partial or failed: how the run ended (see RunStatus)"),
        Col("error", C.STRING, "The sync-level error if the run ended early"),
        Col("started_at", C.TIMESTAMP, "When the run started"),
        Col("finished_at", C.TIMESTAMP, "When the run finished"),
        Col("extra", C.JSON, "The engine's own fields of the run (Run.extra), NULL when none"),
    ),
    replace_key=("sync_id", "sync_run_id"),
)
"""synclog's own: one row per finished run, so `synclog runs` shows how each run ended."""

_OPERATIONS = {"append": "create", "mirror": "upsert"}
ABORTED_MESSAGE = "Not attempted: the run ended before this record was sent"


class CensusLayout(Layout):
    """Census' Warehouse Writeback tables."""

    name: ClassVar[str] = "census"
    tables: ClassVar[tuple[TableSpec, ...]] = (
        SYNC_LOG,
        SOURCE_OBJECTS,
        DESTINATIONS,
        DESTINATION_OBJECTS,
        RUNS,
    )

    def batch_rows(self, ctx: LayoutContext) -> Iterator[Load]:
        run, caps = ctx.run, ctx.capabilities
        ids = {
            "destination_id": run.destination.id,
            "destination_object_id": run.destination_object.id,
            "source_id": run.source.id,
            "source_object_id": run.source_object.id,
        }
        values: dict[str, Column] = {
            "record_payload": fit_json(F.col("record_payload"), caps.max_json_bytes),
            "operation": _census_operation(),
            "status": _census_status(),
            "status_message": _census_message(),
            "_census_logged_at": F.col("logged_at"),
            **{name: F.lit(value).cast("bigint") for name, value in ids.items()},
        }
        spec = SYNC_LOG if caps.run_metadata_columns else SYNC_LOG.without_run_metadata()
        columns = [values.get(c, F.col(c)).alias(c) for c in spec.column_names()]
        yield Load(SYNC_LOG, Rows.select(ctx.records, *columns))
        yield from _metadata(ctx)

    def run_rows(self, ctx: LayoutContext) -> Iterator[Load]:
        """The metadata tables again (a run whose batches held no record has them too), and the
        run's row in `synclog_runs`."""
        yield from _metadata(ctx)
        run = ctx.run
        row = {
            "sync_id": run.sync_id,
            "sync_run_id": run.sync_run_id,
            "status": run.status.value,
            "error": run.error,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "extra": json.dumps(run.extra) if run.extra else None,
        }
        scope = {"sync_id": run.sync_id, "sync_run_id": run.sync_run_id}
        yield Load(RUNS, Rows.local(ctx.records.sparkSession, RUNS, [row]), scope)


def _metadata(ctx: LayoutContext) -> Iterator[Load]:
    """The run's source object, destination and destination object (where the target has them).

    Loading the same rows again is free: the writer skips a load equal to the table's last one.
    """
    if not ctx.capabilities.run_metadata_columns:
        return
    run, spark = ctx.run, ctx.records.sparkSession
    facts = (
        (SOURCE_OBJECTS, run.source_object),
        (DESTINATIONS, run.destination),
        (DESTINATION_OBJECTS, run.destination_object),
    )
    for table, fact in facts:
        yield Load(table, Rows.local(spark, table, [vars(fact)]))


def _census_operation() -> Column:
    op = F.col("operation")
    for given, shown in _OPERATIONS.items():
        op = F.when(F.col("operation") == given, F.lit(shown)).otherwise(op)
    return op


def _census_status() -> Column:
    return F.when(F.col("status") == RecordStatus.SUCCEEDED.value, F.lit("succeeded")).otherwise(
        F.lit("rejected")
    )


def _census_message() -> Column:
    aborted = F.col("status") == RecordStatus.ABORTED.value
    return F.when(aborted, F.lit(ABORTED_MESSAGE)).otherwise(F.col("status_message"))
