"""The documented SQL hooks of `SqlTarget` are the only way the core's SQL reaches a type name, an
identifier quote or a partition: a target that overrides one hook changes every statement concerned."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pyspark.sql import SparkSession

from synclog.layouts.census import SOURCE_OBJECTS, SYNC_LOG
from synclog.plugin_api import (
    Capabilities,
    Column,
    ColumnType,
    Relation,
    TableSpec,
    TargetSettings,
    TargetURL,
)
from synclog.storage.location import Location
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import DuckDBTarget
from synclog.targets.rows import Rows
from synclog_sqlite.target import CAPABILITIES, SqliteTarget

DECLARED = {**DuckDBTarget.type_names, ColumnType.JSON: "JSON"}


class _HookedDuckDB(DuckDBTarget):
    """DuckDB whose `type_names` are no types at all: SQL that bypasses `column_sql` and
    `cast_sql` fails. It records the days `ensure_partitions` sees in each stage."""

    type_names: ClassVar[dict[ColumnType, str]] = dict.fromkeys(DuckDBTarget.type_names, "NOT_A_TYPE")

    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        super().__init__(url, settings, capabilities)
        self.partitions_made: list[tuple[str, list[date]]] = []

    def column_sql(self, column: Column) -> str:
        return f"{self.quote(column.name)} {DECLARED[column.type]}"

    def cast_sql(self, expression: str, type_: ColumnType) -> str:
        return f"CAST({expression} AS {DECLARED[type_]})"

    def ensure_partitions(self, table: TableSpec, relation: Relation, stage: Relation) -> None:
        time = self.quote(table.time_column or "")
        days = self.fetch(f"SELECT DISTINCT CAST({time} AS DATE) FROM {stage.render()} ORDER BY 1")
        self.partitions_made.append((relation.name, [day for (day,) in days]))


@pytest.fixture
def hooked(tmp_path: Path) -> Iterator[_HookedDuckDB]:
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = _HookedDuckDB(TargetURL.parse(f"duckdb:///{tmp_path / 'hooked.duckdb'}"), settings, DUCKDB)
    yield target
    target.close()


def log_row(n: int, started: datetime) -> dict[str, Any]:
    return {
        "log_id": f"l{n}",
        "sync_id": 7,
        "sync_run_id": 70,
        "batch_number": n,
        "batch_started_at": started,
    }


def test_declarations_casts_and_partitions_go_through_their_hooks(
    hooked: _HookedDuckDB, spark: SparkSession
) -> None:
    hooked.ensure([SYNC_LOG, SOURCE_OBJECTS])  # tables, views and synclog_versions: column_sql only
    days = [datetime(2026, 3, 1, 8, tzinfo=UTC), datetime(2026, 3, 2, 9, tzinfo=UTC)]
    rows = [log_row(n, started) for n, started in enumerate(days)]
    assert hooked.replace_rows(SYNC_LOG, Rows.local(spark, SYNC_LOG, rows)) == 2
    source = {"id": 1, "name": "segment"}
    assert hooked.replace_rows(SOURCE_OBJECTS, Rows.local(spark, SOURCE_OBJECTS, [source])) == 1
    # Only the table with a time column asks for partitions, for the days its stage holds.
    assert hooked.partitions_made == [("sync_log_records", [date(2026, 3, 1), date(2026, 3, 2)])]

    older = replace(SYNC_LOG, name="older_log", columns=SYNC_LOG.columns[:3])  # lacks most columns
    hooked.ensure([older])
    with hooked.read_rows(replace(SYNC_LOG, name="older_log"), 7, spark) as read:  # casts: cast_sql only
        assert read is not None
        assert read.count() == 0
    with hooked.read_rows(SYNC_LOG, 7, spark) as read:
        assert read is not None
        assert sorted(r["log_id"] for r in read.collect()) == ["l0", "l1"]


class _EngineClause(DuckDBTarget):
    """DuckDB whose CREATE TABLE carries a clause of its own: a table CHECK, standing in for the
    engine clause some warehouses need."""

    def create_table_sql(self, relation: Relation, table: TableSpec) -> str:
        columns = ", ".join(self.column_sql(c) for c in table.columns)
        first = self.quote(table.columns[0].name)
        return f"CREATE TABLE IF NOT EXISTS {relation.render()} ({columns}, CHECK ({first} IS NOT NULL))"


def test_every_framework_table_is_created_through_create_table_sql(tmp_path: Path) -> None:
    """synclog_versions too: a warehouse whose CREATE TABLE needs a clause adapts it once."""
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = _EngineClause(TargetURL.parse(f"duckdb:///{tmp_path / 'clause.duckdb'}"), settings, DUCKDB)
    try:
        target.ensure([SYNC_LOG, SOURCE_OBJECTS])
        checked = target.fetch(
            "SELECT schema_name, table_name FROM duckdb_constraints() "
            "WHERE constraint_type = 'CHECK' ORDER BY ALL"
        )
        assert checked == [
            ("census", "source_objects"),
            ("census", "sync_log_records"),
            ("census", "synclog_versions"),
        ]
        versions = target.fetch("SELECT table_name, version FROM census.synclog_versions ORDER BY ALL")
        assert versions == [("source_objects", 1), ("sync_log_records", 1)]
    finally:
        target.close()


def test_without_read_casts_a_read_back_casts_nothing(tmp_path: Path, spark: SparkSession) -> None:
    """SQLite (`read_casts = no`): a column the stored table lacks reads as a bare NULL."""
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = SqliteTarget(TargetURL.parse(f"sqlite:///{tmp_path / 'x.sqlite'}"), settings, CAPABILITIES)
    try:
        narrow = replace(SYNC_LOG, view=None, columns=SYNC_LOG.columns[:3])
        target.ensure([narrow])
        row = {"log_id": "a", "sync_id": 7, "sync_run_id": 1}
        target.replace_rows(narrow, Rows.local(spark, narrow, [row]))
        with target.read_rows(replace(SYNC_LOG, view=None), 7, spark) as read:
            assert read is not None
            (row,) = read.collect()
            assert (row["log_id"], row["status"], row["batch_started_at"]) == ("a", None, None)
    finally:
        target.close()


def test_the_identifier_quote_is_a_capability(tmp_path: Path, spark: SparkSession) -> None:
    """SQLite also reads MySQL's backticks: the whole write and read path quotes with the capability."""

    backticks = replace(CAPABILITIES, identifier_quote="`")
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = SqliteTarget(TargetURL.parse(f"sqlite:///{tmp_path / 'tick.sqlite'}"), settings, backticks)
    try:
        assert target.relation(SYNC_LOG).render() == "`census`.`sync_log_records`"
        assert target.quote("odd`name") == "`odd``name`"
        target.ensure([SYNC_LOG])
        rows = [log_row(0, datetime(2026, 3, 1, tzinfo=UTC))]
        assert target.replace_rows(SYNC_LOG, Rows.local(spark, SYNC_LOG, rows)) == 1
        assert target.query("SELECT `log_id` FROM `census`.`sync_log`").column(0).to_pylist() == ["l0"]
    finally:
        target.close()
