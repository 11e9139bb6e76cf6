"""What the soak and the crash sweep share (`python bench/soak.py`, `python bench/crash_sweep.py`):
the conformance test class of each target and what its process needs (each runs one of its tests
per target), their `--until`, and their reports' run sections.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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


def deadline(text: str | None) -> datetime | None:
    """The next `HH:MM` UTC (tomorrow's when today's has passed), or None."""
    if not text:
        return None
    hour, minute = map(int, text.split(":"))
    now = datetime.now(UTC)
    at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return at + timedelta(days=1) if at <= now else at


def run_heading(script: str) -> list[str]:
    """A run section's first lines: when it ended, at which commit, and the command (`script`
    with this process's arguments)."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    quoted = shlex.join(["python", script, *sys.argv[1:]])
    ended = f"## Run of {datetime.now(UTC):%Y-%m-%d %H:%M} UTC at {commit or 'an unknown commit'}"
    return [ended, "", f"`{quoted}`"]


def earlier_runs(report: Path, add: bool) -> str:
    """The run sections of `report` to keep above this run's (with `--add`), or none."""
    if not add or not report.exists():
        return ""
    text = report.read_text(encoding="utf-8")
    earlier = text[text.index("## Run of") :] if "## Run of" in text else ""
    return earlier.rstrip() + "\n\n" if earlier else ""


def chosen_targets(parser: argparse.ArgumentParser, targets: str) -> list[str]:
    """The targets `--targets` names (comma-separated); the parser's one-line error for one that
    has no test class."""
    names = [n for n in targets.split(",") if n]
    unknown = sorted(set(names) - set(CLASSES))
    if unknown:
        parser.error(f"unknown target {unknown[0]!r}")
    return names
