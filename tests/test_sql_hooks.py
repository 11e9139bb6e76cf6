"""The documented SQL hooks of `SqlTarget` and its dialect are the only way the core's SQL reaches a
type name, an identifier quote, a parameter marker or a partition: a target that overrides one hook
changes every statement concerned. Its client tells outages by a test of the driver's error."""

from __future__ import annotations

import sqlite3
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
    Cutoffs,
    Keys,
    Relation,
    SqlTarget,
    TableSpec,
    TargetError,
    TargetSettings,
    TargetURL,
    outages,
)
from synclog.storage.location import Location
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import DuckDBClient, DuckDBDialect, DuckDBTarget
from synclog.targets.rows import Rows
from synclog_sqlite.target import CAPABILITIES, SqliteClient, SqliteDialect, SqliteTarget, is_outage

DECLARED = {**DuckDBDialect.type_names, ColumnType.JSON: "JSON"}


class _HookedDialect(DuckDBDialect):
    """DuckDB whose `type_names` are no types at all: SQL that bypasses `column_sql`, `cast_sql`
    and `stage_type` fails."""

    type_names: ClassVar[dict[ColumnType, str]] = dict.fromkeys(DuckDBDialect.type_names, "NOT_A_TYPE")

    def column_sql(self, column: Column) -> str:
        return f"{self.quote(column.name)} {DECLARED[column.type]}"

    def cast_sql(self, expression: str, type_: ColumnType) -> str:
        return f"CAST({expression} AS {DECLARED[type_]})"

    def stage_type(self, column: Column) -> str:
        return DECLARED[column.type]


def speaking(
    target: DuckDBTarget, dialect: type[DuckDBDialect], client: type[DuckDBClient] = DuckDBClient
) -> None:
    """Give `target` a client of its connection in `dialect`."""
    opened = target.client
    target.client = client(opened.connection, opened.outages, opened.where, dialect(target.capabilities))


class _HookedDuckDB(DuckDBTarget):
    """DuckDB in the hooked dialect. It records the days `ensure_partitions` sees in each stage."""

    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        super().__init__(url, settings, capabilities)
        speaking(self, _HookedDialect)
        self.partitions_made: list[tuple[str, list[date]]] = []

    def ensure_partitions(self, table: TableSpec, relation: Relation, stage: Relation) -> None:
        time = self.dialect.quote(table.time_column or "")
        days = self.client.fetch(f"SELECT DISTINCT CAST({time} AS DATE) FROM {stage.render()} ORDER BY 1")
        self.partitions_made.append((relation.name, [day for (day,) in days]))


@pytest.fixture
def hooked(tmp_path: Path) -> Iterator[_HookedDuckDB]:
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = _HookedDuckDB(TargetURL.parse(f"duckdb:///{tmp_path / 'hooked.duckdb'}"), settings, DUCKDB)
    yield target
    target.close()


def load(target: SqlTarget, table: TableSpec, rows: Rows) -> int:
    """Load rows built on the driver in place of those of their keys."""
    return target.replace_rows(table, rows, Keys.of_rows(table, rows))


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
    assert load(hooked, SYNC_LOG, Rows.local(spark, SYNC_LOG, rows)) == 2
    source = {"id": 1, "name": "segment"}
    assert load(hooked, SOURCE_OBJECTS, Rows.local(spark, SOURCE_OBJECTS, [source])) == 1
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


class _EngineClauseDialect(DuckDBDialect):
    """DuckDB whose CREATE TABLE carries a clause of its own: a table CHECK, standing in for the
    engine clause some warehouses need."""

    def create_table_sql(self, relation: Relation, table: TableSpec) -> str:
        columns = ", ".join(self.column_sql(c) for c in table.columns)
        first = self.quote(table.columns[0].name)
        return f"CREATE TABLE IF NOT EXISTS {relation.render()} ({columns}, CHECK ({first} IS NOT NULL))"


class _EngineClause(DuckDBTarget):
    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        super().__init__(url, settings, capabilities)
        speaking(self, _EngineClauseDialect)


def test_every_framework_table_is_created_through_create_table_sql(tmp_path: Path) -> None:
    """synclog_versions too: a warehouse whose CREATE TABLE needs a clause adapts it once."""
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = _EngineClause(TargetURL.parse(f"duckdb:///{tmp_path / 'clause.duckdb'}"), settings, DUCKDB)
    try:
        target.ensure([SYNC_LOG, SOURCE_OBJECTS])
        checked = target.client.fetch(
            "SELECT schema_name, table_name FROM duckdb_constraints() "
            "WHERE constraint_type = 'CHECK' ORDER BY ALL"
        )
        assert checked == [
            ("census", "source_objects"),
            ("census", "sync_log_records"),
            ("census", "synclog_versions"),
        ]
        versions = target.client.fetch("SELECT table_name, version FROM census.synclog_versions ORDER BY ALL")
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
        target.replace_rows(narrow, Rows.local(spark, narrow, [row]), Keys.scope({"sync_id": 7}))
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
        assert target.dialect.quote("odd`name") == "`odd``name`"
        target.ensure([SYNC_LOG])
        rows = [log_row(0, datetime(2026, 3, 1, tzinfo=UTC))]
        assert load(target, SYNC_LOG, Rows.local(spark, SYNC_LOG, rows)) == 1
        assert target.query("SELECT `log_id` FROM `census`.`sync_log`").column(0).to_pylist() == ["l0"]
    finally:
        target.close()


# -- the client and the dialect a SQL target is composed of ------------------------------------


def test_an_outage_is_told_by_a_test_of_the_drivers_error(tmp_path: Path) -> None:
    """sqlite3 raises one OperationalError for a locked file and for SQL it rejects: by type alone
    both would be outages; the SQLite plugin's test of the error's name tells them apart."""
    path = tmp_path / "locked.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (a INTEGER)")
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the file's write lock
    connection = sqlite3.connect(path, isolation_level=None, timeout=0)
    client = SqliteClient(connection, (is_outage,), "SQLite x", SqliteDialect(CAPABILITIES))
    try:
        with pytest.raises(TargetError, match=r"^SQLite x: database is locked$"):
            client.execute("INSERT INTO t VALUES (?)", [1])
        with pytest.raises(sqlite3.OperationalError, match="no such table: missing"):  # a bug of ours
            client.execute("INSERT INTO missing VALUES (1)")
        with pytest.raises(TargetError), outages((sqlite3.OperationalError,), "by type"):
            client.connection.execute("INSERT INTO missing VALUES (1)")  # the type alone cannot tell
        holder.execute("COMMIT")
        client.execute("INSERT INTO t VALUES (?)", [1])
        with pytest.raises(ZeroDivisionError), client.transaction():
            client.execute("INSERT INTO t VALUES (?)", [2])
            raise ZeroDivisionError  # the block fails: its row is rolled back, the committed one stays
        assert client.fetch("SELECT a FROM t") == [(1,)]
    finally:
        client.close()
        holder.close()


class _ClickHouseLike(DuckDBDialect):
    """Named, typed markers as ClickHouse writes them: `{p0:Int64}`."""

    named = True

    def marker(self, name: str, value: Any) -> str:
        kind = {int: "Int64", str: "String"}[type(value)]
        return f"{{{name}:{kind}}}"


def test_named_typed_markers_are_written_by_the_dialect() -> None:
    sql = "SELECT ? AS a, '?' AS b, \"?\" AS c -- ?\nFROM t WHERE d = ? /* ? */"
    assert _ClickHouseLike(DUCKDB).bind(sql, [7, "x"]) == (
        "SELECT {p0:Int64} AS a, '?' AS b, \"?\" AS c -- ?\nFROM t WHERE d = {p1:String} /* ? */",
        {"p0": 7, "p1": "x"},
    )
    assert DuckDBDialect(DUCKDB).bind(sql, [7, "x"]) == (sql, [7, "x"])  # positional: as it is
    with pytest.raises(ValueError, match="more markers than its 1 parameters"):
        _ClickHouseLike(DUCKDB).bind(sql, [7])
    with pytest.raises(ValueError, match="2 markers for 3 parameters"):
        _ClickHouseLike(DUCKDB).bind(sql, [7, "x", 9])


_DUCKDB_TYPES = {bool: "BOOLEAN", int: "BIGINT", str: "VARCHAR", datetime: "TIMESTAMPTZ", list: "VARCHAR[]"}


class _NamedDialect(DuckDBDialect):
    """DuckDB's named parameters (`$p0`), each cast to the type of its value: a driver with named,
    typed parameters, which takes no `?`."""

    named = True

    def marker(self, name: str, value: Any) -> str:
        return f"${name}" if value is None else f"${name}::{_DUCKDB_TYPES[type(value)]}"


class _Recording(DuckDBClient):
    """Records the parameters each statement reached the driver with."""

    bound: ClassVar[list[Any]] = []

    def driver_params(self, params: Any) -> Any:
        type(self).bound.append(params)
        return super().driver_params(params)


class _NamedDuckDB(DuckDBTarget):
    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        super().__init__(url, settings, capabilities)
        speaking(self, _NamedDialect, _Recording)


def test_a_driver_with_named_typed_parameters_needs_no_rewrite_of_the_cores_sql(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DDL and versions, a keyed and a scoped swap, retention and a read-back bind their values
    through the dialect: the driver sees `$p0::BIGINT` markers and a mapping, never a `?`."""
    monkeypatch.setattr(_Recording, "bound", [])
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = _NamedDuckDB(TargetURL.parse(f"duckdb:///{tmp_path / 'named.duckdb'}"), settings, DUCKDB)
    try:
        target.ensure([SYNC_LOG])
        days = [datetime(2026, 3, 1, 8, tzinfo=UTC), datetime(2026, 3, 2, 9, tzinfo=UTC)]
        rows = [log_row(n, started) for n, started in enumerate(days)]
        assert load(target, SYNC_LOG, Rows.local(spark, SYNC_LOG, rows)) == 2
        read = "SELECT log_id FROM census.sync_log WHERE sync_id = ? AND log_id <> '?' ORDER BY 1"
        assert target.query(read, [7]).column(0).to_pylist() == ["l0", "l1"]
        assert target.delete_expired(SYNC_LOG, Cutoffs(default=datetime(2026, 3, 2, tzinfo=UTC))) == 1
        with target.read_rows(SYNC_LOG, 7, spark) as frame:
            assert frame is not None
            assert [r["log_id"] for r in frame.collect()] == ["l1"]
        assert target.replace_rows(SYNC_LOG, Rows.local(spark, SYNC_LOG, []), Keys.scope({"sync_id": 7})) == 0
        assert target.query(read, [7]).num_rows == 0
        assert target.client.fetch("SELECT max(version) FROM census.synclog_versions")[0][0] == 1
    finally:
        target.close()
    with_values = [params for params in _Recording.bound if params]
    assert len(with_values) >= 6
    assert all(isinstance(params, dict) for params in with_values)


class _NamedSqliteDialect(SqliteDialect):
    """sqlite3 in its `named` paramstyle: the dialect's default marker, `:p0`."""

    named = True


class _NamedSqlite(SqliteTarget):
    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        super().__init__(url, settings, capabilities)
        opened = self.client
        self.client = SqliteClient(
            opened.connection, opened.outages, opened.where, _NamedSqliteDialect(capabilities)
        )


def test_the_default_named_marker_is_the_db_apis_named_style(tmp_path: Path, spark: SparkSession) -> None:
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = _NamedSqlite(TargetURL.parse(f"sqlite:///{tmp_path / 'named.sqlite'}"), settings, CAPABILITIES)
    try:
        assert target.dialect.bind("SELECT ? + ?", [1, 2]) == ("SELECT :p0 + :p1", {"p0": 1, "p1": 2})
        table = replace(SYNC_LOG, view=None)
        target.ensure([table])
        rows = [log_row(n, datetime(2026, 3, n + 1, tzinfo=UTC)) for n in range(3)]
        assert load(target, table, Rows.local(spark, table, rows)) == 3
        assert load(target, table, Rows.local(spark, table, rows[:1])) == 1  # replaces l0 only
        assert target.delete_expired(table, Cutoffs(default=datetime(2026, 3, 2, tzinfo=UTC))) == 1
        read = "SELECT log_id FROM census.sync_log_records WHERE sync_id = ? ORDER BY 1"
        assert target.query(read, [7]).column(0).to_pylist() == ["l1", "l2"]
    finally:
        target.close()
