"""Turn validated record results into the canonical log frame every layout is built from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from synclog import checks
from synclog.error_codes import DEFAULT_PATTERN, error_code
from synclog.model import InvalidReason, Run
from synclog.payloads import LARGEST_JSON_BYTES, fit_json
from synclog.privacy import PayloadTransform
from synclog.records import VIOLATION, violation

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
WRITE = "_synclog_write"
"""The column saying which write of several (their index) a row of record results belongs to:
one job may hold the writes of many runs (`SyncLog.write_all`). Absent: every row is write 0."""

CANONICAL_COLUMNS = (
    "log_id",
    "sync_id",
    "sync_run_id",
    "record_identifier",
    "operation",
    "status",
    "status_message",
    "invalid_reason",
    "error_code",
    "record_payload",
    "fields",
    "split_group",
    "batch_number",
    "batch_started_at",
    "batch_completed_at",
    "logged_at",
)


COPY_ORDER = (
    "operation",
    "status",
    "record_payload",
    "status_message",
    "error_code",
    "fields",
    "split_group",
    "batch_started_at",
    "batch_completed_at",
)
"""How records of one batch sharing an identifier are numbered (the `occurrence` in their log
ids), NULL first: by everything they hold, so the same records get the same ids on replay and no
id decides which copy a layout keeps."""


def canonical_schema() -> T.StructType:
    """The schema of the canonical frame (without the violation column)."""
    strings = T.StringType()
    types = {"sync_id": T.LongType(), "sync_run_id": T.LongType(), "batch_number": T.IntegerType()}
    times = {"batch_started_at", "batch_completed_at", "logged_at"}
    return T.StructType(
        [
            T.StructField(c, T.TimestampType() if c in times else types.get(c, strings))
            for c in CANONICAL_COLUMNS
        ]
    )


def canonical_frame(
    runs: Run | Mapping[int, Run],
    records: DataFrame,
    logged_at: datetime,
    policy: PayloadTransform | None = None,
    error_code_pattern: str = DEFAULT_PATTERN,
    schema: T.StructType | None = None,
) -> DataFrame:
    """The canonical frame for `records` of `runs` (the run of each write, by its `WRITE` index),
    plus the `VIOLATION` and `WRITE` columns.

    Columns were checked already (`records.check_columns`); values are checked here, in
    the same pass that computes everything else, so a bad frame costs one Spark job.
    `schema` is `records`' schema where the caller knows it (else Spark is asked).
    A payload `policy` rewrites identifiers, payloads and messages first, before the shuffle
    of the identifier checks, so nothing downstream (log ids included) sees the original values;
    the error code is read from the message as the policy left it (`synclog.error_codes`).
    `status` and `status_message` are the engine's; the identifier checks set `invalid_reason`,
    within each write (a run's writes are checked against each other by `SyncLog.finish`).
    """
    writes = {0: runs} if isinstance(runs, Run) else runs
    schema = schema or records.schema
    present = set(schema.fieldNames())
    payload = _json_text(schema, "record_payload")
    # A record without `fields` logs its payload, whether or not other records give them.
    fields = F.coalesce(_json_text(schema, "fields"), payload) if "fields" in present else payload
    split = F.col("split_group") if "split_group" in present else F.lit(None)
    shaped = records.select(
        F.col("record_identifier").cast("string").alias("record_identifier"),
        "operation",
        "status",
        "status_message",
        (F.col("error_code") if "error_code" in present else F.lit(None)).cast("string").alias("error_code"),
        fit_json(payload, LARGEST_JSON_BYTES).alias("record_payload"),
        fit_json(fields, LARGEST_JSON_BYTES).alias("fields"),
        split.cast("string").alias("split_group"),
        F.col("batch_number").cast("int").alias("batch_number"),
        F.col("batch_started_at").cast("timestamp").alias("batch_started_at"),
        F.col("batch_completed_at").cast("timestamp").alias("batch_completed_at"),
        violation(schema, show_payloads=policy is None).alias(VIOLATION),
        (F.col(WRITE) if WRITE in present else F.lit(0)).alias(WRITE),
    )
    if policy is not None:
        shaped = policy.apply(shaped)
    shaped = shaped.withColumn("error_code", error_code(error_code_pattern))
    counted = shaped.withColumn("_identifier_count", checks.identifier_count(WRITE))
    occurrence = F.row_number().over(
        Window.partitionBy(WRITE, "record_identifier", "batch_number").orderBy(*COPY_ORDER)
    )
    sync_id = per_write(writes, lambda run: run.sync_id).cast("bigint")
    sync_run_id = per_write(writes, lambda run: run.sync_run_id).cast("bigint")
    return counted.select(
        _log_id(sync_id, sync_run_id, occurrence).alias("log_id"),
        sync_id.alias("sync_id"),
        sync_run_id.alias("sync_run_id"),
        "record_identifier",
        "operation",
        "status",
        "status_message",
        checks.invalid_reason("_identifier_count").alias("invalid_reason"),
        "error_code",
        "record_payload",
        "fields",
        "split_group",
        "batch_number",
        "batch_started_at",
        "batch_completed_at",
        _instant(logged_at).alias("logged_at"),
        VIOLATION,
        WRITE,
    )


def per_write(writes: Mapping[int, Run], value: Callable[[Run], object]) -> Column:
    """`value` of each row's write's run: a literal where every write gives the same, else a
    CASE on `WRITE`."""
    holders: dict[object, list[int]] = {}
    for index, run in writes.items():
        holders.setdefault(value(run), []).append(index)
    (first, *others) = holders.items()
    if not others:
        return F.lit(first[0])
    chosen = F.when(F.col(WRITE).isin(first[1]), F.lit(first[0]))
    for given, indexes in others:
        chosen = chosen.when(F.col(WRITE).isin(indexes), F.lit(given))
    return chosen


def _json_text(schema: T.StructType, name: str) -> Column:
    """JSON text for a payload given as text (kept as is), a struct or a map."""
    if isinstance(schema[name].dataType, T.StringType):
        return F.col(name)
    return F.to_json(F.col(name))


def _instant(moment: datetime) -> Column:
    """`moment` as a TIMESTAMP literal (`F.lit` of a datetime asks the session which timestamp
    type it prefers: a round trip per call)."""
    return F.timestamp_micros(F.lit((moment - _EPOCH) // timedelta(microseconds=1)))


def _log_id(sync_id: Column, sync_run_id: Column, occurrence: Column) -> Column:
    """A deterministic id: the same record of the same batch gets the same id on replay."""
    return F.sha2(
        F.concat_ws(
            "\x1f",
            sync_id.cast("string"),
            sync_run_id.cast("string"),
            F.col("batch_number").cast("string"),
            F.coalesce(F.col("record_identifier"), F.lit("\x00")),
            occurrence.cast("string"),
        ),
        256,
    ).substr(1, 32)


def repeated_batches(identifiers: DataFrame) -> list[int]:
    """The batches holding an identifier that another batch holds too (`identifiers`:
    `record_identifier`, `batch_number` of every kept batch). Only batch numbers reach the driver."""
    batches = (
        identifiers.where(F.col("record_identifier").isNotNull())
        .groupBy("record_identifier")
        .agg(F.collect_set("batch_number").alias("_batches"))
    )
    holding = batches.where(F.size("_batches") > 1).select(F.explode("_batches").alias("batch_number"))
    return [row["batch_number"] for row in holding.distinct().collect()]


def flag_repeated(records: DataFrame, identifiers: DataFrame) -> DataFrame:
    """`records` (canonical rows of kept batches) with each identifier that more than one batch
    of the run holds (`identifiers`, as for `repeated_batches`) flagged DUPLICATE, as a canonical
    frame to keep again."""
    repeated = _repeated(identifiers).select("record_identifier", F.lit(True).alias("_repeated"))
    # A sort-merge join: a broadcast would collect the run's identifiers to the driver.
    joined = records.join(repeated.hint("merge"), "record_identifier", "left")
    duplicate = F.when(F.col("_repeated"), F.lit(InvalidReason.DUPLICATE.value))
    values = {"invalid_reason": F.coalesce(F.col("invalid_reason"), duplicate)}
    return joined.select(
        *[values.get(c, F.col(c)).alias(c) for c in CANONICAL_COLUMNS],
        F.lit(None).cast("string").alias(VIOLATION),
    )


def _repeated(identifiers: DataFrame) -> DataFrame:
    """The identifiers more than one batch holds (`record_identifier`)."""
    return (
        identifiers.where(F.col("record_identifier").isNotNull())
        .groupBy("record_identifier")
        .agg(F.countDistinct("batch_number").alias("_batches"))
        .where(F.col("_batches") > 1)
    )
