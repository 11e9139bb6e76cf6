"""`Target.read_rows`: DuckDB's streaming export and SqlTarget's generic one give the same frame."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog.layouts.base import arrow_rows
from synclog.layouts.table import Column, ColumnType, TableSpec
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import DuckDBTarget
from synclog.targets.sql import SqlTarget
from synclog.urls import TargetURL

TABLE = TableSpec(
    layout="test",
    schema="reads",
    name="rows",
    columns=(
        Column("sync_id", ColumnType.BIGINT),
        Column("row_id", ColumnType.STRING),
        Column("fields", ColumnType.JSON),
        Column("at", ColumnType.TIMESTAMP),
        Column("flag", ColumnType.BOOLEAN),
    ),
    replace_key=("sync_id",),
)
WIDER = replace(TABLE, columns=(*TABLE.columns, Column("added_later", ColumnType.INTEGER)))
AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class GenericTarget(DuckDBTarget):
    """DuckDB read back through SqlTarget's default export (the path plugins inherit)."""

    export_parquet = SqlTarget.export_parquet


@pytest.mark.parametrize("kind", [DuckDBTarget, GenericTarget])
def test_read_rows(kind: type[DuckDBTarget], spark: SparkSession, tmp_path: Path) -> None:
    target = kind(TargetURL.parse(f"duckdb:///{tmp_path / 'target.duckdb'}"), TargetSettings())
    with target.read_rows(TABLE, 1, spark) as missing:
        assert missing is None
    target.ensure([TABLE])
    target.replace_rows(
        TABLE,
        arrow_rows(
            TABLE,
            [
                {"sync_id": 1, "row_id": "a", "fields": '{"x": [1, 2]}', "at": AT, "flag": True},
                {"sync_id": 1, "row_id": "b", "fields": None, "at": None, "flag": None},
            ],
        ),
    )
    target.replace_rows(TABLE, arrow_rows(TABLE, [{"sync_id": 2, "row_id": "c"}]))
    with target.read_rows(WIDER, 1, spark) as rows:
        assert rows is not None
        assert rows.schema == WIDER.spark_schema()
        found = sorted((r.asDict() for r in rows.collect()), key=lambda r: r["row_id"])
    assert [json.loads(r["fields"]) if r["fields"] else None for r in found] == [{"x": [1, 2]}, None]
    picked = [(r["row_id"], r["flag"], r["added_later"]) for r in found]
    assert picked == [("a", True, None), ("b", None, None)]
    assert found[0]["at"].timestamp() == AT.timestamp()  # a naive local time, as Spark collects it
    target.close()
