"""The demo on SQLite, the seeds' census and hightouch queries on what it wrote, and the plugin's
one rule: its source imports no synclog module but the public plugin API."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import synclog_sqlite
from synclog.cli.main import main
from synclog.plugin_api import Target, TargetSettings, TargetURL
from synclog.plugins.manager import registry
from synclog.testing.conformance import SEED_000_BY_SYNC, SEED_000_DELETES
from synclog.testing.seed_queries import SEED_002_ENTER_EXIT, SEED_002_ERRORS

SEED_NAMES = {
    "CENSUS.CENSUS.SYNC_LOG": "census.sync_log",
    "CENSUS.CENSUS.SOURCE_OBJECTS": "census.source_objects",
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Iterator[Target]:
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    assert main(["demo", "--scale", "0.02", "--target", f"sqlite:///{db}"]) == 0
    with registry().open(TargetURL.parse(f"sqlite:///{db}"), TargetSettings(read_only=True)) as target:
        yield target


def seed(sql: str) -> str:
    for snowflake_name, own in SEED_NAMES.items():
        sql = sql.replace(snowflake_name, own)
    return sql


def test_the_demo_answers_the_census_seed_queries(demo: Target) -> None:
    assert demo.query(seed(SEED_000_BY_SYNC)).num_rows > 0
    assert demo.query(seed(SEED_000_DELETES)).num_rows > 0
    statuses = demo.query("SELECT status, COUNT(*) AS n FROM census.sync_log GROUP BY 1").to_pylist()
    assert {r["status"] for r in statuses} == {"succeeded", "rejected"}
    reasons = demo.query("SELECT DISTINCT invalid_reason FROM census.sync_log").column(0).to_pylist()
    assert {"NULL", "DUPLICATE"} <= set(reasons)


def test_the_demo_answers_the_hightouch_seed_queries(demo: Target) -> None:
    errors = demo.query(SEED_002_ERRORS).to_pylist()
    assert errors and all(r["c"] > 0 for r in errors)
    moves = {r["type"] for r in demo.query(SEED_002_ENTER_EXIT).to_pylist()}
    assert {"added", "removed"} <= moves


def test_records_command_reads_the_demo(demo: Target, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["records", "--target", str(demo.url), "--sync", "1234", "--status", "rejected"]) == 0
    assert "rejected" in capsys.readouterr().out


def test_the_plugin_imports_only_the_public_plugin_api() -> None:
    imported = set()
    for source in Path(synclog_sqlite.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = (
                    [f"{node.module}.{a.name}" for a in node.names]
                    if node.module == "synclog"
                    else [node.module]
                )
                imported.update(names)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
    assert {name for name in imported if name.split(".")[0] == "synclog"} == {"synclog.plugin_api"}
