"""The core's load protocol on DuckDB: the swap by transaction and by MERGE replace the same rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog.capabilities import Capabilities
from synclog.storage.location import Location
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import CAPABILITIES, DuckDBTarget
from synclog.targets.keys import MAX_KEY_PARAMETERS, KeyGroup, Keys, RunBatches, match_sql
from synclog.targets.rows import Rows
from synclog.targets.tables import Column, ColumnType, TableSpec
from synclog.urls import TargetURL

TABLE = TableSpec(
    layout="probe",
    schema="probe",
    name="rows",
    columns=(
        Column("sync_id", ColumnType.BIGINT),
        Column("sync_run_id", ColumnType.BIGINT),
        Column("batch_number", ColumnType.INTEGER),
        Column("row_id", ColumnType.STRING),
        Column("payload", ColumnType.JSON),
    ),
    replace_key=("sync_run_id", "batch_number"),
)


MERGING = replace(CAPABILITIES, transactions=False, merge=True)
"""DuckDB declaring no multi-statement transactions: the core swaps with one MERGE."""


def row(sync_id: int, run: int, batch: int, row_id: str) -> dict[str, object]:
    return {"sync_id": sync_id, "sync_run_id": run, "batch_number": batch, "row_id": row_id, "payload": "{}"}


def open_target(capabilities: Capabilities, tmp_path: Path) -> DuckDBTarget:
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = DuckDBTarget(TargetURL.parse(f"duckdb:///{tmp_path / 'load.duckdb'}"), settings, capabilities)
    target.ensure([TABLE])
    return target


def contents(target: DuckDBTarget) -> list[tuple[object, ...]]:
    sql = "SELECT sync_id, sync_run_id, batch_number, row_id FROM probe.rows ORDER BY ALL"
    return target.client.fetch(sql)


@pytest.mark.parametrize("capabilities", [CAPABILITIES, MERGING])
def test_replace_by_key_and_by_scope(capabilities: Capabilities, spark: SparkSession, tmp_path: Path) -> None:
    target = open_target(capabilities, tmp_path)
    first = [row(1, 10, 0, "a"), row(1, 10, 0, "b"), row(1, 10, 1, "c"), row(2, 20, 0, "d")]
    loaded = Rows.local(spark, TABLE, first)
    assert target.replace_rows(TABLE, loaded, Keys.of_rows(TABLE, loaded)) == 4
    # Batch 0 of run 10 again, with one row: its other row goes, batch 1 and run 20 stay.
    again = Rows.of(spark.createDataFrame([row(1, 10, 0, "x")]))
    assert target.replace_rows(TABLE, again, Keys.of_values(TABLE.replace_key, [(10, 0)])) == 1
    assert contents(target) == [(1, 10, 0, "x"), (1, 10, 1, "c"), (2, 20, 0, "d")]
    # A scope replaces all of sync 1, even with no rows at all.
    assert target.replace_rows(TABLE, Rows.local(spark, TABLE, []), Keys.scope({"sync_id": 1})) == 0
    assert contents(target) == [(2, 20, 0, "d")]
    sync_2 = Keys.scope({"sync_id": 2})
    assert target.replace_rows(TABLE, Rows.local(spark, TABLE, [row(2, 21, 0, "e")]), sync_2) == 1
    assert contents(target) == [(2, 21, 0, "e")]
    stages = "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '_synclog_stage%'"
    assert target.client.fetch(stages) == [(0,)]
    assert not list((tmp_path / "storage").rglob("*.parquet")), "staged files are removed after the load"
    target.close()


def test_keys_are_constants_grouped_per_run_with_ranges() -> None:
    """Many runs of many syncs in one `Keys`: a group per run, consecutive batches as a range, the
    rest in one IN; every value a parameter."""
    runs = [RunBatches(9, 1, 10, (0, 1, 2, 3, 7)), RunBatches(9, 2, 20, (5,)), RunBatches(9, 1, 11, (0, 2))]
    keys = Keys.of_batches(("sync_id", "sync_run_id", "batch_number"), runs)
    assert [(g.fixed, g.last) for g in keys.groups] == [
        ((1, 10), (0, 1, 2, 3, 7)),
        ((1, 11), (0, 2)),
        ((2, 20), (5,)),
    ]
    sql, params = match_sql(keys, "t", lambda name: f'"{name}"', "?")
    assert sql == (
        '(t."sync_id" = ? AND t."sync_run_id" = ? '
        'AND (t."batch_number" BETWEEN ? AND ? OR t."batch_number" = ?))'
        ' OR (t."sync_id" = ? AND t."sync_run_id" = ? AND t."batch_number" IN (?, ?))'
        ' OR (t."sync_id" = ? AND t."sync_run_id" = ? AND t."batch_number" = ?)'
    )
    assert params == [1, 10, 0, 3, 7, 1, 11, 0, 2, 2, 20, 5]
    assert match_sql(Keys(("id",)), "", str, "?") == ("1 = 0", [])
    assert Keys.of_values(("id",), [(None,), (4,)]).groups == (
        KeyGroup((), (4,)),
    )  # a NULL key matches nothing


def test_keys_past_the_parameter_budget_are_integer_literals() -> None:
    scattered = tuple(range(0, 2 * (MAX_KEY_PARAMETERS + 10), 2))  # no two consecutive: no range
    sql, params = match_sql(Keys.of_values(("b",), [(v,) for v in scattered]), "", str, "?")
    assert len(params) == MAX_KEY_PARAMETERS
    assert sql.endswith(f", {scattered[-1]}))") and sql.count("?") == MAX_KEY_PARAMETERS
    with pytest.raises(ValueError, match="cannot be written as a literal"):
        match_sql(Keys.of_values(("b",), [(f"k{v}",) for v in scattered]), "", str, "?")


@pytest.mark.parametrize("capabilities", [CAPABILITIES, MERGING], ids=["delete-insert", "merge"])
def test_one_swap_replaces_the_batches_of_several_runs_and_nothing_else(
    capabilities: Capabilities, spark: SparkSession, tmp_path: Path
) -> None:
    """A stage holding batches of several runs of several syncs (a loader that coalesces queued
    batches) swaps in place of exactly those batches, by one `Keys`; across the parameter budget
    too (batches as literals)."""
    target = open_target(capabilities, tmp_path)
    table = replace(TABLE, replace_key=("sync_id", "sync_run_id", "batch_number"))
    first = [
        row(1, 10, 0, "a"),
        row(1, 10, 1, "b"),
        row(1, 11, 0, "c"),
        row(2, 20, 0, "d"),
        row(2, 20, 4, "e"),
    ]
    loaded = Rows.local(spark, table, first)
    target.replace_rows(table, loaded, Keys.of_rows(table, loaded))
    carried = [RunBatches(7, 1, 10, (0,)), RunBatches(7, 2, 20, tuple(range(0, 2 * MAX_KEY_PARAMETERS, 2)))]
    again = Rows.local(spark, table, [row(1, 10, 0, "x"), row(2, 20, 2, "y")])
    assert target.replace_rows(table, again, Keys.of_batches(table.replace_key, carried)) == 2
    assert contents(target) == [(1, 10, 0, "x"), (1, 10, 1, "b"), (1, 11, 0, "c"), (2, 20, 2, "y")]
    target.close()
