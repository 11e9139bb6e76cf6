"""Bad record results give one clear error naming the column and value; no row is logged or kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.config import Config
from synclog.errors import InputError
from synclog.layouts.census import SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.factories import RECORD_DDL, make_records, make_run, record_rows


@pytest.fixture
def log(tmp_path: Path, spark: SparkSession) -> SyncLog:
    target = registry().open(TargetURL.parse(f"duckdb:///{tmp_path / 'x.duckdb'}"))
    return SyncLog(target, Config(storage=Location.parse(str(tmp_path / "storage"))), spark)


def with_value(position: int, column: int, value: Any) -> list[tuple[Any, ...]]:
    rows = record_rows(make_run())
    row = list(rows[position])
    row[column] = value
    rows[position] = tuple(row)
    return rows


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        (1, "teleport", "column 'operation' has unknown value 'teleport' (expected one of upsert"),
        (2, "maybe", "column 'status' has unknown value 'maybe' (expected one of succeeded"),
        (1, None, "column 'operation' must not be NULL"),
        (4, '{"email": ', "column 'record_payload' holds invalid JSON, first: '{\"email\": '"),
        (5, None, "column 'batch_number' must not be NULL"),
    ],
)
def test_bad_values(log: SyncLog, spark: SparkSession, column: int, value: Any, message: str) -> None:
    records = make_records(spark, with_value(17, column, value))
    with pytest.raises(InputError) as raised:
        log.write_run(make_run(), records)
    assert message in str(raised.value)
    # One job validates and stages: the tables may exist by then, but no row reaches them.
    assert log.target.query("SELECT count(*) AS n FROM census.sync_log").column("n").to_pylist() == [0]
    assert not log.store.has(make_run())
    assert not list(Path(log.config.storage.path("staging")).rglob("*.parquet"))  # staged files removed


def test_missing_column(log: SyncLog, spark: SparkSession) -> None:
    records = make_records(spark, record_rows(make_run())).drop("operation")
    with pytest.raises(InputError, match="missing column 'operation'"):
        log.write_run(make_run(), records)


def test_wrong_type(log: SyncLog, spark: SparkSession) -> None:
    records = make_records(spark, record_rows(make_run()))
    records = records.withColumn("batch_started_at", records["batch_started_at"].cast("string"))
    with pytest.raises(InputError, match="column 'batch_started_at' is string, expected timestamp"):
        log.write_run(make_run(), records)


def test_struct_payloads_and_integer_identifiers(log: SyncLog, spark: SparkSession) -> None:
    ddl = RECORD_DDL.replace("record_identifier string", "record_identifier bigint").replace(
        "record_payload string", "record_payload struct<email:string,seats:int>"
    )
    rows = [
        (i, "upsert", "succeeded", None, (f"u{i}@example.com", i), 0, *record_rows(make_run())[0][6:])
        for i in range(5)
    ]
    log.write_run(make_run(), spark.createDataFrame(rows, ddl))
    view = log.target.relation(SYNC_LOG, SYNC_LOG.view).render()
    got = log.target.query(f"SELECT record_identifier, record_payload FROM {view} ORDER BY 1").to_pylist()
    assert got[1] == {"record_identifier": "1", "record_payload": '{"email":"u1@example.com","seats":1}'}


def test_write_run_reports_each_pass(log: SyncLog, spark: SparkSession) -> None:
    result = log.write_run(make_run(), make_records(spark, record_rows(make_run())))
    view = str(log.target.relation(SYNC_LOG, SYNC_LOG.view))
    steps = list(result.passes)
    assert steps[0] == "validate, store and stage"  # one job: checks, run store and the stage
    assert "validate and store" not in steps  # no second pass over the run
    assert f"load {view}" in steps
    assert all(seconds >= 0 for seconds in result.passes.values())
    assert sum(result.passes.values()) <= result.seconds
