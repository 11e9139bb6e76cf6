"""The conformance test class of each target, and what its process needs: the soak and the crash
sweep run one of their tests per target (`python bench/soak.py`, `python bench/crash_sweep.py`)."""

from __future__ import annotations

CLASSES: dict[str, tuple[str, dict[str, str]]] = {
    "duckdb": ("integration/test_duckdb.py::TestDuckDB", {}),
    "postgres": ("integration/test_postgres.py::TestPostgres", {}),
    "lake": ("integration/test_lake.py::TestLakeConformance", {}),
    "duckdb-partitions": ("integration/test_duckdb_partitions.py::TestPartitionedDuckDB", {}),
    "sqlite": ("examples/synclog-sqlite/tests/test_sqlite_conformance.py::TestSqlite", {}),
    "snowflake": ("integration/test_snowflake.py::TestSnowflake", {}),
    "bigquery": ("integration/test_bigquery.py::TestBigQuery", {}),
    "redshift": ("integration/test_redshift.py::TestRedshift", {}),
    "databricks": ("integration/test_databricks.py::TestDatabricksWarehouse", {}),
    "databricks-cluster": (
        "integration/test_databricks_spark.py::TestDatabricksInCluster",
        {"SYNCLOG_DATABRICKS_SPARK": "1"},
    ),
}
LOCAL = ("duckdb", "postgres", "lake", "duckdb-partitions", "sqlite")
"""Targets on this machine's own databases; the others run on the clouds' stand-ins
(`duckdb-partitions` is DuckDB as a warehouse without transactions: partition replace)."""


def node(target: str, test: str) -> tuple[str, dict[str, str]]:
    """The pytest node of `target`'s test `test`, and the environment its process needs."""
    cls, env = CLASSES[target]
    return f"{cls}::{test}", env
