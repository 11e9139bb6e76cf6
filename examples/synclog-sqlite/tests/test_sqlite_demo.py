"""The demo on SQLite through the `synclog` command, the seeds' census queries on what it wrote,
and the plugin's one rule: it imports no synclog module but the public plugin API.

Like any third party's tests, these use only public entry points: the `synclog` command (a
subprocess), `synclog.plugin_api`, the plugin's own classes and the test kit (`synclog_testing`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import synclog_sqlite
from synclog.plugin_api import Column, ColumnType, TableSpec, TargetSettings, TargetURL
from synclog_sqlite.plugin import TARGET_TYPE
from synclog_sqlite.target import SqliteTarget
from synclog_testing.conformance import SEED_000_BY_SYNC, SEED_000_DELETES

SYNCLOG = Path(sys.executable).with_name("synclog")
"""The `synclog` command of the environment the tests run in."""
SEED_NAMES = {
    "CENSUS.CENSUS.SYNC_LOG": "census.sync_log",
    "CENSUS.CENSUS.SOURCE_OBJECTS": "census.source_objects",
}


def synclog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SYNCLOG), *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The demo's last five days on SQLite (three runs of each sync; sync 1234's are run 5678 and
    the two before it): its target URL and what it printed."""
    url = f"sqlite:///{tmp_path_factory.mktemp('demo') / 'demo.sqlite'}"
    done = synclog("demo", "--scale", "0.02", "--days", "5", "--target", url)
    assert done.returncode == 0, done.stderr[-3000:]
    return url, done.stdout


@pytest.fixture
def target(demo: tuple[str, str]) -> Iterator[SqliteTarget]:
    opened = TARGET_TYPE.open(TargetURL.parse(demo[0]), TargetSettings(read_only=True))
    assert isinstance(opened, SqliteTarget)
    yield opened
    opened.close()


def seed(sql: str) -> str:
    for snowflake_name, own in SEED_NAMES.items():
        sql = sql.replace(snowflake_name, own)
    return sql


def test_the_demo_answers_its_questions_on_sqlite(demo: tuple[str, str]) -> None:
    printed = demo[1]
    assert "Who entered and who left the segment in sync 1234's run 5678?" in printed
    segment_answer = printed.split("Who entered and who left the segment", 1)[1]
    assert "movement" in segment_answer and "entered" in segment_answer and "left" in segment_answer
    assert "What is the most common sync error?" in printed


def test_the_demo_answers_the_census_seed_queries(target: SqliteTarget) -> None:
    assert target.query(seed(SEED_000_BY_SYNC)).num_rows > 0
    assert target.query(seed(SEED_000_DELETES)).num_rows > 0
    statuses = target.query("SELECT status, COUNT(*) AS n FROM census.sync_log GROUP BY 1").to_pylist()
    assert {r["status"] for r in statuses} == {"succeeded", "rejected"}
    reasons = target.query("SELECT DISTINCT invalid_reason FROM census.sync_log").column(0).to_pylist()
    assert {"NULL", "DUPLICATE"} <= set(reasons)


def test_records_command_reads_the_demo(demo: tuple[str, str]) -> None:
    done = synclog("records", "--target", demo[0], "--sync", "1234", "--status", "rejected")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rejected" in done.stdout


def test_a_connection_sees_the_schemas_another_connection_attached_since_it_opened(tmp_path: Path) -> None:
    """A reader opened before the first write finds the tables that write created."""
    url, settings = TargetURL.parse(f"sqlite:///{tmp_path / 'logs.sqlite'}"), TargetSettings()
    reader, writer = TARGET_TYPE.open(url, settings), TARGET_TYPE.open(url, settings)
    table = TableSpec("census", "census", "runs", (Column("sync_id", ColumnType.BIGINT),), ("sync_id",))
    try:
        assert reader.existing_tables([table]) == []
        writer.ensure([table])
        writer.client.execute("INSERT INTO census.runs VALUES (7)")
        assert reader.existing_tables([table]) == [table]
        assert reader.query("SELECT sync_id FROM census.runs").to_pylist() == [{"sync_id": 7}]
    finally:
        reader.close()
        writer.close()


def imported_synclog_modules(folder: Path) -> set[str]:
    """Every `synclog.*` module the Python files of `folder` import."""
    imported = set()
    for source in folder.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                is_package = node.module == "synclog"
                imported.update([f"synclog.{a.name}" for a in node.names] if is_package else [node.module])
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
    return {name for name in imported if name.split(".")[0] == "synclog"}


def test_the_plugin_and_its_tests_import_only_public_modules() -> None:
    assert imported_synclog_modules(Path(synclog_sqlite.__file__).parent) == {"synclog.plugin_api"}
    tests = imported_synclog_modules(Path(__file__).parent)
    assert all(name == "synclog.plugin_api" or name.startswith("synclog_testing.") for name in tests)
