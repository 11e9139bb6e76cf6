"""`Target.read_rows` on DuckDB: its streamed export and SqlTarget's default export, through storage."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog.storage.location import Location
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import CAPABILITIES, DuckDBClient, DuckDBTarget
from synclog.targets.sql_client import SqlClient
from synclog.urls import TargetURL
from synclog_testing.read_back import READS, check_empty_read_back, check_read_back, read_back_rows


class GenericClient(DuckDBClient):
    """DuckDB read back through SqlClient's default result (the path clients inherit)."""

    batches_bound = SqlClient.batches_bound


def open_target(kind: type[DuckDBClient], tmp_path: Path) -> DuckDBTarget:
    """A DuckDB target whose client is of `kind`."""
    settings = TargetSettings(storage=Location.parse(str(tmp_path / "storage")))
    target = DuckDBTarget(TargetURL.parse(f"duckdb:///{tmp_path / 'target.duckdb'}"), settings, CAPABILITIES)
    opened = target.client
    target.client = kind(opened.connection, opened.outages, opened.where, opened.dialect)
    return target


@pytest.mark.parametrize(("kind", "row_groups"), [(DuckDBClient, [3, 3, 2]), (GenericClient, [8])])
def test_read_rows(
    kind: type[DuckDBClient],
    row_groups: list[int],
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DuckDB streams the result in `chunk_rows` batches; the default holds it whole (one row group)."""
    monkeypatch.setattr(kind, "chunk_rows", 3)
    target = open_target(kind, tmp_path)
    with target.read_rows(READS, 1, spark) as missing:
        assert missing is None
    check_read_back(target, spark, read_back_rows(), row_groups=row_groups)
    assert not any((tmp_path / "storage").rglob("*.parquet")), "the export is removed afterwards"
    target.close()


@pytest.mark.parametrize("kind", [DuckDBClient, GenericClient])
def test_empty_read_back(kind: type[DuckDBClient], spark: SparkSession, tmp_path: Path) -> None:
    target = open_target(kind, tmp_path)
    check_empty_read_back(target, spark)
    target.close()
