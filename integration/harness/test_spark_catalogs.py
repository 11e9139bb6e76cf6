"""Three-part names on local Spark through the session-catalog alias, in a Spark process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .errors import ServerUnavailable
from .spark_catalogs import CATALOG_CLASS, ensure_catalog_jar, unity_catalog_confs

# Runs in a fresh Python so the confs apply (spark.jars is static). Each step records
# ["ok", rows] or ["error", first line of the message].
_SCRIPT = textwrap.dedent(
    """
    import datetime, json, sys
    from pyspark.sql import SparkSession

    confs = json.loads(sys.argv[1])
    builder = SparkSession.builder.master("local[1]").appName("synclog-catalogs-test")
    for key, value in confs.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    results = {}

    def step(name, fn):
        try:
            out = fn()
            rows = [list(r) for r in out.collect()] if out is not None else None
            results[name] = ["ok", json.loads(json.dumps(rows, default=str))]
        except Exception as exc:
            results[name] = ["error", str(exc).strip().splitlines()[0]]

    sql = spark.sql
    step("create_schemas", lambda: sql("CREATE SCHEMA census.census") and sql(
        "CREATE SCHEMA IF NOT EXISTS mycatalog.hightouch_audit"))
    step("create_partitioned", lambda: sql(
        "CREATE TABLE census.census.sync_log_records (log_id STRING, sync_id BIGINT, day DATE) "
        "USING parquet PARTITIONED BY (day)"))
    step("create_plain", lambda: sql(
        "CREATE TABLE mycatalog.hightouch_audit.sync_changelog (id INT, op_type STRING) USING parquet"))
    step("insert", lambda: sql("INSERT INTO census.census.sync_log_records VALUES "
                               "('a', 1, DATE'2024-01-01'), ('b', 1, DATE'2024-01-02')"))
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    step("overwrite_dynamic", lambda: sql(
        "INSERT OVERWRITE census.census.sync_log_records VALUES ('c', 1, DATE'2024-01-02')"))
    step("after_overwrite", lambda: sql(
        "SELECT log_id, CAST(day AS STRING) FROM census.census.sync_log_records ORDER BY log_id"))
    step("create_view", lambda: sql("CREATE OR REPLACE VIEW census.census.sync_log AS "
                                    "SELECT * FROM census.census.sync_log_records"))
    step("read_view", lambda: sql("SELECT count(*) FROM census.census.sync_log"))
    step("add_columns", lambda: sql(
        "ALTER TABLE census.census.sync_log_records ADD COLUMNS (split_group STRING)"))
    step("columns_after_add", lambda: spark.createDataFrame(
        [[c] for c in sql("SELECT * FROM census.census.sync_log_records").columns], "c STRING"))
    step("drop_partition", lambda: sql(
        "ALTER TABLE census.census.sync_log_records DROP IF EXISTS PARTITION (day = DATE'2024-01-01')"))
    step("show_partitions", lambda: sql("SHOW PARTITIONS census.census.sync_log_records"))
    step("delete", lambda: sql("DELETE FROM census.census.sync_log_records WHERE day < DATE'2024-01-02'"))
    step("merge", lambda: sql(
        "MERGE INTO census.census.sync_log_records t USING (SELECT 'z' AS log_id, 9L AS sync_id, "
        "DATE'2024-01-03' AS day, CAST(NULL AS STRING) AS split_group) s ON t.log_id = s.log_id "
        "WHEN NOT MATCHED THEN INSERT *"))
    df = spark.createDataFrame([(5, "added")], "id INT, op_type STRING")
    step("insert_into", lambda: df.write.insertInto("mycatalog.hightouch_audit.sync_changelog"))
    changelog = "mycatalog.hightouch_audit.sync_changelog"
    step("save_as_table", lambda: df.write.mode("append").saveAsTable(changelog))
    step("write_to_append", lambda: df.writeTo("mycatalog.hightouch_audit.sync_changelog").append())
    step("write_to_create", lambda: df.writeTo("mycatalog.hightouch_audit.created").using("parquet").create())
    step("changelog", lambda: sql("SELECT id, op_type FROM mycatalog.hightouch_audit.sync_changelog"))
    step("same_table_other_names", lambda: sql(
        "SELECT (SELECT count(*) FROM spark_catalog.census.sync_log_records), "
        "(SELECT count(*) FROM mycatalog.census.sync_log_records), "
        "(SELECT count(*) FROM hightouch_audit.sync_changelog)"))
    step("two_part_name_shadowed", lambda: sql("SELECT * FROM census.sync_log_records"))
    step("unknown_catalog", lambda: sql("SELECT * FROM other.census.sync_log_records"))
    step("use", lambda: sql("USE census.census") and sql("SELECT count(*) FROM sync_log_records"))
    # The census layout's catalog and schema share a name: census.census.sync_log_records.
    records = spark.createDataFrame(
        [("d", 2, None, datetime.date(2024, 1, 2))],
        "log_id STRING, sync_id BIGINT, split_group STRING, day DATE")
    step("insert_into_same_names", lambda: records.write.insertInto("census.census.sync_log_records"))
    step("save_as_table_same_names", lambda: records.write.mode("append").partitionBy("day").saveAsTable(
        "census.census.sync_log_records"))
    records.createOrReplaceTempView("staged_records")
    step("insert_select_same_names", lambda: sql(
        "INSERT INTO census.census.sync_log_records SELECT * FROM staged_records"))
    step("insert_into_session_name", lambda: records.write.insertInto(
        "spark_catalog.census.sync_log_records"))
    step("count_after_inserts", lambda: sql("SELECT count(*) FROM census.census.sync_log_records"))
    print(json.dumps(results))
    """
)


@pytest.fixture(scope="module")
def session_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    base = tmp_path_factory.mktemp("catalogs")
    try:
        confs = unity_catalog_confs(["census", "mycatalog"])
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    confs.update(
        {
            "spark.driver.memory": "512m",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "1",
            "spark.sql.warehouse.dir": str(base / "warehouse"),
        }
    )
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(confs)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=base,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ok(results: dict[str, list[Any]], name: str) -> Any:
    status, value = results[name]
    assert status == "ok", f"{name}: {value}"
    return value


def _error(results: dict[str, list[Any]], name: str) -> str:
    status, value = results[name]
    assert status == "error", f"{name} was expected to fail, got {value}"
    return str(value)


@pytest.fixture
def cache_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "cache"


def test_jar_is_built_once_and_holds_the_class(cache_dir: Path) -> None:
    try:
        jar = ensure_catalog_jar(cache_dir)
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    built_at = jar.stat().st_mtime_ns
    assert ensure_catalog_jar(cache_dir) == jar
    assert jar.stat().st_mtime_ns == built_at
    with zipfile.ZipFile(jar) as archive:
        assert CATALOG_CLASS.replace(".", "/") + ".class" in archive.namelist()


@pytest.mark.parametrize("name", ["spark_catalog", "a.b", "", "1x"])
def test_refuses_names_that_are_no_alias(name: str) -> None:
    with pytest.raises(ValueError, match="not a catalog name"):
        unity_catalog_confs([name])


def test_three_part_ddl_insert_and_dynamic_overwrite(session_results: dict[str, list[Any]]) -> None:
    for name in ("create_schemas", "create_partitioned", "create_plain", "insert", "overwrite_dynamic"):
        _ok(session_results, name)
    # Dynamic mode replaced only the day of the new row.
    assert _ok(session_results, "after_overwrite") == [["a", "2024-01-01"], ["c", "2024-01-02"]]


def test_views_add_columns_and_partition_drop(session_results: dict[str, list[Any]]) -> None:
    _ok(session_results, "create_view")
    assert _ok(session_results, "read_view") == [[2]]
    _ok(session_results, "add_columns")
    # New columns go before the partition columns of a partitioned Parquet table.
    assert _ok(session_results, "columns_after_add") == [["log_id"], ["sync_id"], ["split_group"], ["day"]]
    _ok(session_results, "drop_partition")
    assert _ok(session_results, "show_partitions") == [["day=2024-01-02"]]


def test_dataframe_writes(session_results: dict[str, list[Any]]) -> None:
    _ok(session_results, "insert_into")
    _ok(session_results, "save_as_table")
    _ok(session_results, "write_to_create")
    assert _ok(session_results, "changelog") == [[5, "added"], [5, "added"]]
    # DataFrameWriterV2.append needs a v2 table; Parquet tables are v1 (also under spark_catalog).
    assert "Cannot write into v1 table" in _error(session_results, "write_to_append")


def test_delete_and_merge_are_refused_on_parquet(session_results: dict[str, list[Any]]) -> None:
    assert "does not support DELETE" in _error(session_results, "delete")
    assert "does not support MERGE INTO TABLE" in _error(session_results, "merge")


def test_aliases_share_the_session_catalog(session_results: dict[str, list[Any]]) -> None:
    assert _ok(session_results, "same_table_other_names") == [[1, 1, 2]]
    # A catalog named census shadows the database census in two-part names.
    assert "REQUIRES_SINGLE_PART_NAMESPACE" in _error(session_results, "two_part_name_shadowed")
    assert "REQUIRES_SINGLE_PART_NAMESPACE" in _error(session_results, "unknown_catalog")
    assert _ok(session_results, "use") == [[1]]


def test_dataframe_writer_with_catalog_named_like_the_schema(session_results: dict[str, list[Any]]) -> None:
    # insertInto turns census.census.t (and spark_catalog.census.t) into the two-part census.t,
    # which the catalog named census then shadows; saveAsTable and SQL INSERT … SELECT work.
    assert "REQUIRES_SINGLE_PART_NAMESPACE" in _error(session_results, "insert_into_same_names")
    assert "REQUIRES_SINGLE_PART_NAMESPACE" in _error(session_results, "insert_into_session_name")
    _ok(session_results, "save_as_table_same_names")
    _ok(session_results, "insert_select_same_names")
    assert _ok(session_results, "count_after_inserts") == [[3]]
