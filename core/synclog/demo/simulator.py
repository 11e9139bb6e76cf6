"""Simulate a realistic sync history on Spark: syncs, runs, batches, rejections, segment churn.

Everything is a pure function of (sync, run, person), computed on the executors, so a test can
recompute what the simulator did and compare it with what a target holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from synclog.model import (
    Behaviour,
    Connection,
    DestinationObject,
    Run,
    RunStatus,
    SourceObject,
)

BATCH_SIZE = 5_000
"""People per batch: a batch holds the records of up to this many consecutive people."""
HISTORY_DAYS = 10
RUNS_PER_SYNC = 6
DEMO_ORG_ID = 1
DUPLICATES = 2
"""Records per run sent twice: each pair is flagged DUPLICATE."""
NULLS = 3
"""Records per run without an identifier: flagged NULL."""
WAREHOUSE = Connection(id=101, type="Snowflake::Connection", name="Analytics warehouse")


@dataclass(frozen=True)
class SimulatedSync:
    """One sync of the simulated workspace and the people its model holds."""

    sync_id: int
    first_run_id: int
    behaviour: Behaviour
    source_object: SourceObject
    destination: Connection
    destination_object: DestinationObject
    model_name: str
    people: int
    member_percent: int
    errors: tuple[str, ...]
    full_model: bool = False
    """Each run hands over the whole model (no deletes): who is missing has left it."""
    splits_from: int | None = None
    """From this run on, records carry an audience split group."""


SYNCS: tuple[SimulatedSync, ...] = (
    SimulatedSync(
        sync_id=1234,
        first_run_id=5673,  # its last run is 5678, the run seed 000's example queries ask about
        behaviour=Behaviour.MIRROR,
        source_object=SourceObject(
            id=201,
            type="DataWarehouse::FilterSegmentSource",
            name="High-value customers",
            filter_segment_id=31,
        ),
        destination=Connection(id=301, type="Google Ads::Connection", name="Google Ads"),
        destination_object=DestinationObject(
            id=401, type="Google Ads::ObjectTypes::CustomerMatchList", name="High-value customers"
        ),
        model_name="High-value customers",
        people=30_000,
        member_percent=55,
        errors=(
            "INVALID_USER_IDENTIFIER: hashed_email is not a valid SHA-256 digest",
            "CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE: Customer Match is not enabled",
            "RESOURCE_EXHAUSTED: Too many requests, retry after 30s",
        ),
    ),
    SimulatedSync(
        sync_id=2345,
        first_run_id=7001,
        behaviour=Behaviour.UPSERT,
        source_object=SourceObject(id=202, type="DataWarehouse::Query", name="Active customers", model_id=51),
        destination=Connection(id=302, type="Salesforce::Connection", name="Salesforce"),
        destination_object=DestinationObject(id=402, type="Salesforce::ObjectTypes::Contact", name="Contact"),
        model_name="Active customers",
        people=25_000,
        member_percent=80,
        errors=(
            "INVALID_EMAIL_ADDRESS: Email: invalid email address",
            "DUPLICATE_VALUE: duplicate value found: Email duplicates value on record with id: "
            "0035e00000AbCdE",
            "REQUIRED_FIELD_MISSING: Required fields are missing: [LastName]",
            "STRING_TOO_LONG: Title: data value too large (max length=128)",
            "UNABLE_TO_LOCK_ROW: unable to obtain exclusive access to this record",
        ),
    ),
    SimulatedSync(
        sync_id=3456,
        first_run_id=8101,
        behaviour=Behaviour.UPDATE,
        source_object=SourceObject(id=203, type="DataWarehouse::Table", name="PUBLIC.COMPANIES"),
        destination=Connection(id=303, type="HubSpot::Connection", name="HubSpot"),
        destination_object=DestinationObject(id=403, type="HubSpot::ObjectTypes::Company", name="Company"),
        model_name="Companies",
        people=12_000,
        member_percent=90,
        errors=(
            'PROPERTY_DOESNT_EXIST: Property "arr_band" does not exist',
            "OBJECT_NOT_FOUND: resource not found",
            "RATE_LIMIT: You have reached your secondly limit",
        ),
    ),
    SimulatedSync(
        sync_id=4567,
        first_run_id=9201,
        behaviour=Behaviour.MIRROR,
        source_object=SourceObject(
            id=204, type="DataWarehouse::CohortSource", name="Win-back cohort A", cohort_id=61
        ),
        destination=Connection(id=304, type="Braze::Connection", name="Braze"),
        destination_object=DestinationObject(id=404, type="Braze::ObjectTypes::User", name="User"),
        model_name="Win-back cohort A",
        people=16_000,
        member_percent=40,
        errors=(
            "400 Bad Request: 'external_id' must be a string of at most 512 characters",
            "429 Too Many Requests: rate limit exceeded",
        ),
        full_model=True,
        splits_from=3,
    ),
)

FAILED_RUN = (3456, 3)
"""(sync, run index) of the run that dies part-way: its later batches are aborted."""


@dataclass(frozen=True)
class SimulatedRun:
    """A run of a simulated sync: its description and where it stands in the sync's history."""

    sync: SimulatedSync
    index: int
    run: Run


def history(now: datetime, scale: float = 1.0, days: int = HISTORY_DAYS) -> list[SimulatedRun]:
    """Every run of every simulated sync over the last ten days, oldest first; with `days`, only
    the runs of the last `days` of them (the same runs, ids and outcomes: fewer of them)."""
    if not 0 < scale <= 100:
        raise ValueError(f"scale must be in (0, 100], got {scale}")
    if not 1 <= days <= HISTORY_DAYS:
        raise ValueError(f"days must be from 1 to {HISTORY_DAYS}, got {days}")
    runs: list[SimulatedRun] = []
    step = timedelta(days=HISTORY_DAYS) / RUNS_PER_SYNC
    for offset, sync in enumerate(SYNCS):
        for index in range(RUNS_PER_SYNC):
            started = now - timedelta(days=HISTORY_DAYS) + step * (index + 0.5)
            started += timedelta(hours=3 * offset)
            failed = (sync.sync_id, index) == FAILED_RUN
            run = Run(
                org_id=DEMO_ORG_ID,
                workspace_id=11,
                sync_id=sync.sync_id,
                sync_run_id=sync.first_run_id + index,
                primary_key="email" if sync.behaviour is Behaviour.MIRROR else "customer_id",
                behaviour=sync.behaviour,
                source=WAREHOUSE,
                source_object=sync.source_object,
                destination=sync.destination,
                destination_object=sync.destination_object,
                model_id=sync.source_object.model_id,
                model_name=sync.model_name,
                started_at=started.replace(microsecond=0),
                finished_at=(started + timedelta(minutes=12)).replace(microsecond=0),
                status=RunStatus.FAILED if failed else RunStatus.SUCCEEDED,
                error="Destination API quota exhausted; run stopped" if failed else None,
                full_model=sync.full_model,
            )
            if started >= now - timedelta(days=days):
                runs.append(SimulatedRun(sync, index, run))
    return sorted(runs, key=lambda r: r.run.started_at)


def people(sync: SimulatedSync, scale: float) -> int:
    """How many people the sync's model holds at this scale."""
    return max(200, int(sync.people * scale))


def _hash(*parts: Column | str | int) -> Column:
    """A stable non-negative hash of the parts, 0 ≤ h < 1,000,000."""
    cols = [p if isinstance(p, Column) else F.lit(str(p)) for p in parts]
    return F.pmod(F.xxhash64(*cols), F.lit(1_000_000))


def member(sync: SimulatedSync, index: int) -> Column:
    """Whether person `id` is in the sync's model at run `index` (base membership plus churn)."""
    base = _hash(sync.sync_id, "base", F.col("id")) < sync.member_percent * 10_000
    churn = _hash(sync.sync_id, "churn", index, F.col("id")) < 40_000  # 4 % flip each run
    return base != churn


def planned(spark: SparkSession, sim: SimulatedRun, scale: float) -> DataFrame:
    """The people the run sends, with the operation it plans for each (before any check)."""
    sync, index = sim.sync, sim.index
    people_df = spark.range(1, people(sync, scale) + 1)
    now_in = member(sync, index)
    if index == 0 or sync.full_model:
        return people_df.where(now_in).withColumn("operation", F.lit(_upsert_op(sync)))
    before = member(sync, index - 1)
    changed = _changed(sync, index)
    entered = now_in & ~before
    left = ~now_in & before
    op = F.when(entered | (now_in & changed), F.lit(_upsert_op(sync)))
    if sync.behaviour is Behaviour.MIRROR:
        op = op.when(left, F.lit("delete"))
    return people_df.withColumn("operation", op).where(F.col("operation").isNotNull())


def _changed(sync: SimulatedSync, index: int) -> Column:
    """Whether the person's fields change at run `index` (6 % of people each run)."""
    return _hash(sync.sync_id, "change", index, F.col("id")) < 60_000


def _version(sync: SimulatedSync, index: int) -> Column:
    """The version of a person's fields at run `index`: the run itself, or for a whole-model
    sync the last run that changed them, so unchanged people are sent again unchanged."""
    if not sync.full_model:
        return F.lit(index)
    version = F.lit(0)
    for k in range(1, index + 1):
        version = F.when(_changed(sync, k), F.lit(k)).otherwise(version)
    return version


def split_group(sync: SimulatedSync, index: int) -> Column | None:
    """The person's audience split group at run `index`, once the sync uses splits."""
    if sync.splits_from is None or index < sync.splits_from:
        return None
    return F.when(_hash(sync.sync_id, "split", F.col("id")) < 800_000, "Treatment").otherwise("Holdout")


def _upsert_op(sync: SimulatedSync) -> str:
    return "upsert" if sync.behaviour is Behaviour.MIRROR else sync.behaviour.value


def records(spark: SparkSession, sim: SimulatedRun, scale: float) -> DataFrame:
    """The record results the engine reports for the run, batch by batch."""
    sync, index, run = sim.sync, sim.index, sim.run
    plan = planned(spark, sim, scale).withColumn("copy", F.lit(0))
    # Every run has a few model bugs: records sharing an identifier, records without one.
    doubled = plan.orderBy(_hash(sync.sync_id, "dup", index, F.col("id"))).limit(DUPLICATES)
    nameless = plan.orderBy(_hash(sync.sync_id, "null", index, F.col("id"))).limit(NULLS)
    rows = plan.unionByName(doubled.withColumn("copy", F.lit(1))).unionByName(
        nameless.withColumn("copy", F.lit(2))
    )
    batch = ((F.col("id") - 1) / BATCH_SIZE).cast("int")
    batch_start = F.lit(run.started_at) + F.make_dt_interval(secs=batch * 45)
    error_pick = _hash(sync.sync_id, "which", index, F.col("id")) % len(sync.errors)
    errors = F.array(*[F.lit(e) for e in sync.errors])
    rejected = _hash(sync.sync_id, "reject", index, F.col("id")) < 35_000
    aborted = F.lit((sync.sync_id, index) == FAILED_RUN) & (batch >= 2)
    status = F.when(aborted, "aborted").when(rejected, "rejected").otherwise("succeeded")
    identifier = F.when(F.col("copy") == 2, F.lit(None)).otherwise(
        F.format_string("user%06d@example.com", F.col("id"))
    )
    split = split_group(sync, index)
    return rows.select(
        identifier.alias("record_identifier"),
        F.col("operation"),
        status.alias("status"),
        F.when(rejected & ~aborted, F.element_at(errors, error_pick.cast("int") + 1))
        .cast("string")
        .alias("status_message"),
        _payload(sync, _version(sync, index)).alias("record_payload"),
        batch.alias("batch_number"),
        batch_start.alias("batch_started_at"),
        (batch_start + F.make_dt_interval(secs=F.lit(30))).alias("batch_completed_at"),
        *([] if split is None else [split.alias("split_group")]),
    )


def _payload(sync: SimulatedSync, version: Column) -> Column:
    plans = F.array(F.lit("free"), F.lit("starter"), F.lit("pro"), F.lit("enterprise"))
    index = version.cast("string")
    pick = (_hash(sync.sync_id, "plan", index, F.col("id")) % 4).cast("int") + 1
    return F.struct(
        F.format_string("user%06d@example.com", F.col("id")).alias("email"),
        F.format_string("Person %d", F.col("id")).alias("name"),
        F.element_at(plans, pick).alias("plan"),
        (_hash(sync.sync_id, "ltv", index, F.col("id")) / 100).alias("lifetime_value"),
        (_hash(sync.sync_id, "opt", F.col("id")) < 700_000).alias("marketing_opt_in"),
        F.array(F.lit("newsletter"), F.element_at(plans, pick)).alias("tags"),
        version.alias("model_version"),
    )


def iter_history(
    spark: SparkSession, now: datetime, scale: float = 1.0
) -> Iterator[tuple[SimulatedRun, DataFrame]]:
    """Each run of the history with its record results, oldest first."""
    for sim in history(now, scale):
        yield sim, records(spark, sim, scale)
