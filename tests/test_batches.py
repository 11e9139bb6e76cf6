"""`write` takes a batch in any form an engine holds it; naive timestamps are taken as UTC."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from datetime import UTC
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from synclog import INPUT_ARROW_SCHEMA, INPUT_SCHEMA, InputError
from synclog.batches import as_arrow, as_frame
from synclog.config import Config
from synclog.storage.location import Location
from synclog.writer import SyncLog
from synclog_testing.factories import RECORD_COLUMNS, make_records, make_run, record_rows

RUN = make_run()
ROWS = record_rows(RUN, count=12, batches=2)
DICTS = [dict(zip(RECORD_COLUMNS, row, strict=True)) for row in ROWS]

FORMS: dict[str, Callable[[SparkSession], Any]] = {
    "spark": lambda spark: make_records(spark, ROWS),
    "pandas": lambda _spark: pd.DataFrame(DICTS),
    "arrow table": lambda _spark: pa.Table.from_pylist(DICTS),
    "arrow record batch": lambda _spark: pa.RecordBatch.from_pylist(DICTS),
    "list of dicts": lambda _spark: DICTS,
}


def collected(frame: DataFrame) -> list[tuple[Any, ...]]:
    """The frame's rows in `RECORD_COLUMNS` order, times as UTC epoch microseconds."""
    rows = frame.selectExpr(
        *RECORD_COLUMNS[:5],
        "cast(batch_number as bigint)",
        "unix_micros(batch_started_at)",
        "unix_micros(batch_completed_at)",
    ).collect()
    return sorted((tuple(r) for r in rows), key=repr)


@pytest.fixture
def log(tmp_path: Path, spark: SparkSession) -> Iterator[SyncLog]:
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    with SyncLog.open(f"duckdb:///{tmp_path / 'logs.duckdb'}", config, spark) as log:
        yield log


@pytest.fixture
def new_york(spark: SparkSession) -> Iterator[None]:
    """The session's time zone is not UTC for the test."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    yield
    spark.conf.set("spark.sql.session.timeZone", before)


def test_every_batch_form_gives_the_same_records(spark: SparkSession) -> None:
    expected = [
        (*row[:6], int(row[6].timestamp() * 1_000_000), int(row[7].timestamp() * 1_000_000)) for row in ROWS
    ]
    for name, form in FORMS.items():
        frame, schema = as_frame(form(spark), lambda: spark)
        assert collected(frame) == sorted(expected, key=repr), name
        assert schema == frame.schema, name  # known without Spark for all but a Spark frame


def test_write_run_takes_a_pandas_batch(log: SyncLog) -> None:
    result = log.write_run(RUN, pd.DataFrame(DICTS))
    assert result.records == len(ROWS) and not result.pending
    invalid = {3, 8, 9}  # record_rows: a NULL identifier at 3, 9 repeats 8's
    rejected = sum(row[2] == "rejected" for i, row in enumerate(ROWS) if i not in invalid)
    assert (result.statuses["rejected"], result.statuses["invalid_null"]) == (rejected, 1)


def test_an_empty_list_is_an_empty_batch(spark: SparkSession) -> None:
    frame, schema = as_frame([], lambda: spark)
    assert frame.count() == 0
    assert frame.schema == schema == INPUT_SCHEMA


def test_the_arrow_schema_matches_the_spark_schema() -> None:
    assert INPUT_ARROW_SCHEMA.names == INPUT_SCHEMA.fieldNames()
    assert INPUT_ARROW_SCHEMA.field("batch_started_at").type == pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (42, "record results must be a Spark or pandas DataFrame, a pyarrow Table or RecordBatch, or a list"),
        ([("a", "upsert")], "record results: a list of records must hold dicts only"),
        ([{"record_identifier": 1}, {"record_identifier": "a"}], "record results: "),
    ],
)
def test_unusable_batches_are_one_line_input_errors(spark: SparkSession, batch: Any, message: str) -> None:
    with pytest.raises(InputError) as raised:
        as_frame(batch, lambda: spark)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_wrong_column_type_names_the_column(log: SyncLog) -> None:
    batch = pd.DataFrame(DICTS).assign(status=7)
    with pytest.raises(InputError, match=r"^record results: column 'status' is bigint, expected string$"):
        log.write(RUN, batch)
    assert not log.store.has(RUN)


@pytest.mark.usefixtures("new_york")
def test_naive_timestamps_are_utc_whatever_the_session_time_zone(
    log: SyncLog, spark: SparkSession, tmp_path: Path
) -> None:
    naive = pd.DataFrame(DICTS).assign(
        batch_started_at=lambda df: df.batch_started_at.dt.tz_convert(None),
        batch_completed_at=lambda df: df.batch_completed_at.dt.tz_convert(None),
    )
    assert naive.batch_started_at.dt.tz is None
    ntz = make_records(spark, ROWS).selectExpr(
        *RECORD_COLUMNS[:6],
        "cast(convert_timezone('UTC', batch_started_at) as timestamp_ntz) as batch_started_at",
        "batch_completed_at",
    )
    first = min(row[6] for row in ROWS)
    for form in (naive, pa.Table.from_pandas(naive), ntz):
        started = {r[6] for r in collected(as_frame(form, lambda: spark)[0])}
        assert min(started) == int(first.timestamp() * 1_000_000), type(form)
    log.write_run(RUN, naive)
    log.close()
    with duckdb.connect(str(tmp_path / "logs.duckdb"), read_only=True) as db:
        (stored,) = db.execute("select min(batch_started_at) from census.sync_log").fetchone()
    assert (stored if stored.tzinfo else stored.replace(tzinfo=UTC)) == first


def test_a_list_of_dicts_needs_no_pandas_even_half_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `BackgroundLog` converts an engine's batch in the engine's thread while its own thread may
    be importing pandas: a module `pandas` without its DataFrame yet must not matter."""
    monkeypatch.setitem(sys.modules, "pandas", types.ModuleType("pandas"))
    table = as_arrow(DICTS)
    assert table.num_rows == len(DICTS) and table.column("batch_number").to_pylist() == [r[5] for r in ROWS]
