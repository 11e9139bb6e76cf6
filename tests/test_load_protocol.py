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
from synclog.targets.keys import Keys
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
