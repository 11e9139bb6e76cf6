"""The command line: demo, write, records, runs, cleanup, plugins; bad usage exits 2 in one line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from synclog.cli.demo import QUESTIONS
from synclog.cli.main import describe, main
from synclog.demo.simulator import history
from synclog.plugins.manager import registry
from synclog.retention import cutoff
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import DuckDBTarget
from synclog.tracking import RunQuery, find_runs
from synclog.urls import TargetURL
from synclog_testing.conformance import SEED_000_BY_SYNC, SEED_000_DELETES

SEED_NAMES = {
    "CENSUS.CENSUS.SYNC_LOG": "census.sync_log",
    "CENSUS.CENSUS.SOURCE_OBJECTS": "census.source_objects",
}


def seed(sql: str) -> str:
    for snowflake_name, own in SEED_NAMES.items():
        sql = sql.replace(snowflake_name, own)
    return sql


@pytest.fixture
def demo(demo_folder: Path) -> Path:
    """The session's small demo (conftest's `demo_folder`)."""
    return demo_folder


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "synclog", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "the following arguments are required: command"),
        (("records",), "the following arguments are required: --sync"),
        (
            ("runs", "--sync", "users_to_crm", "--limit", "0"),
            "argument --limit: must be a positive number, got 0",
        ),
        (("spark", "restart"), "argument action: invalid choice: 'restart'"),
        (("records", "--sync", "1", "--status", "lost"), "argument --status: invalid choice"),
        (("records", "--sync", "1", "--layout", "nope"), "argument --layout: invalid choice"),
        (("records", "--sync", "1", "--out", "x.txt"), "argument --out: must end in .csv, .jsonl, .parquet"),
        (("runs",), "the following arguments are required: --sync"),
        (("runs", "--sync", "1", "--offset", "-1"), "argument --offset: must be 0 or more, got -1"),
        (("demo", "--days", "11"), "argument --days: must be a whole number from 1 to 10, got 11"),
        (("demo", "--days", "0"), "argument --days: must be a whole number from 1 to 10, got 0"),
        (
            ("demo", "--now", "yesterday"),
            "argument --now: must be an ISO 8601 time such as 2026-03-01T08:00:00Z, got 'yesterday'",
        ),
        (("cleanup", "--target", "warehouse"), "unknown target 'warehouse'"),
        (("cleanup", "--target", "oracle://h/db"), "no installed plugin handles oracle://"),
        (("write", "--run", "absent.json", "--records", "x.parquet"), "cannot read run description"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = run_cli(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2  # argparse's usage line, then the error


def test_an_unexpected_error_is_one_line() -> None:
    """An error synclog did not anticipate (a bug, a Spark task's error) is one line, never a traceback."""
    task_failed = RuntimeError(
        "\n  An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 1, in main\n'
        '    raise ValueError("bad value 7")\n'
        "ValueError: bad value 7\n\nJVM stacktrace:\norg.apache.spark.SparkException: Job aborted\n"
        "\tat org.apache.spark.Some.method(Some.scala:1)"
    )
    assert describe(task_failed) == "a Spark task failed: ValueError: bad value 7"
    assert describe(KeyError("x")) == "KeyError: 'x'"


def test_a_bad_storage_setting_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "synclog.toml"
    config.write_text('state_dir = ".synclog/runs"\n')
    done = run_cli("--config", str(config), "cleanup")
    assert done.returncode == 2
    assert "state_dir was replaced by storage" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [("records", "--sync", "1"), ("runs", "--sync", "1"), ("cleanup",)])
def test_a_read_only_command_on_a_missing_file_is_one_line_and_creates_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    missing = tmp_path / "nowhere" / "logs.duckdb"
    done = run_cli(*command, "--target", f"duckdb:///{missing}")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"synclog: error: duckdb:///{missing}: there is no database file {missing} "
        "(nothing has been logged there yet)"
    ]
    assert not missing.parent.exists()


def test_records_where_nothing_was_logged_is_one_line(tmp_path: Path) -> None:
    duckdb.connect(str(tmp_path / "empty.duckdb")).close()
    done = run_cli("records", "--sync", "1", "--target", f"duckdb:///{tmp_path / 'empty.duckdb'}")
    assert done.returncode == 1
    assert (
        "has no census.sync_log, hightouch_audit.sync_changelog: "
        "no sync has been logged there with the census or hightouch layout"
    ) in done.stderr
    assert "Traceback" not in done.stderr


def test_help_on_every_command() -> None:
    for command in ("demo", "write", "cleanup", "records", "runs", "flush", "plugins", "serve"):
        done = run_cli(command, "--help")
        assert done.returncode == 0 and "usage: synclog" in done.stdout


def test_plugins_lists_targets_and_capabilities(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "duckdb://" in out and "json_type" in out and "JSON" in out


def test_demo_days_are_the_last_runs_of_the_ten_days() -> None:
    """Each sync runs every 40 hours (the syncs 3 hours apart), its last run 11 to 20 hours before
    now: one day holds each sync's last run, five days its last three, ten days all six; the
    runs kept are the ten days' runs, unchanged."""
    now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    every = history(now, 0.02)
    assert len(every) == 24 and history(now, 0.02, days=10) == every
    assert [sim.run.sync_run_id for sim in history(now, 0.02, days=1)] == [5678, 7006, 8106, 9206]
    five = history(now, 0.02, days=5)
    assert {(sim.run.sync_id, sim.index) for sim in five} == {
        (sync_id, index) for sync_id in (1234, 2345, 3456, 4567) for index in (3, 4, 5)
    }
    assert len(five) == 12 and all(sim in every for sim in five)


def test_demo_answers_the_seed_queries(demo: Path) -> None:
    with duckdb.connect(str(demo / "demo.duckdb"), read_only=True) as db:
        assert db.sql(seed(SEED_000_BY_SYNC)).fetchall()
        assert db.sql(seed(SEED_000_DELETES)).fetchall()
        statuses = dict(db.sql("SELECT status, COUNT(*) FROM census.sync_log GROUP BY 1").fetchall())
        assert set(statuses) == {"succeeded", "rejected"}
        reasons = dict(db.sql("SELECT invalid_reason, COUNT(*) FROM census.sync_log GROUP BY 1").fetchall())
        assert reasons.get("NULL", 0) > 0 and reasons.get("DUPLICATE", 0) > 0


def test_without_now_the_demo_history_ends_at_the_current_time(demo: Path) -> None:
    """Each sync's last run starts 11 to 20 hours before the demo ran (see the test above), which
    was earlier in this session."""
    with duckdb.connect(str(demo / "demo.duckdb"), read_only=True) as db:
        (latest,) = db.execute("SELECT MAX(started_at) FROM hightouch_audit.sync_runs").fetchone()
    now = datetime.now(UTC)
    assert now - timedelta(days=2) < latest < now - timedelta(hours=11)


def test_two_targets_demos_with_one_clock_answer_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--now`: DuckDB's and SQLite's demos hold the same runs, at the times the clock gives, and
    print the same answers; the runs are those of the day before that time (an offset counts)."""
    clock = datetime(2026, 3, 1, 7, tzinfo=UTC)
    expected = [(sim.run.sync_run_id, sim.run.started_at) for sim in history(clock, 0.02, days=1)]
    config = tmp_path / "synclog.toml"
    config.write_text(f'storage = "{tmp_path / "storage"}"\n', encoding="utf-8")
    urls = [f"duckdb:///{tmp_path / 'clock.duckdb'}", f"sqlite:///{tmp_path / 'clock.sqlite'}"]
    answers, runs = [], []
    for url in urls:
        args = ["demo", "--scale", "0.02", "--days", "1", "--now", "2026-03-01T08:00:00+01:00"]
        assert main(["--config", str(config), *args, "--target", url]) == 0
        printed = capsys.readouterr().out
        answers.append(printed.split("\nlogged ", 1)[1])
        with registry().open(TargetURL.parse(url), TargetSettings(read_only=True)) as target:
            found = [
                find_runs(target, RunQuery(sim.run.sync_id)).to_pylist() for sim in history(clock, 0.02, 1)
            ]
        runs.append(
            [(r["sync_run_id"], r["started_at"], r["records"], r["rejected"]) for f in found for r in f]
        )
    assert "Who entered and who left the segment in sync 1234's run 5678?" in answers[0]
    assert answers[0] == answers[1]
    assert runs[0] == runs[1]
    assert sorted({(run, started) for run, started, _, _ in runs[0]}) == sorted(expected)


def test_the_demo_names_every_column_it_selects(demo: Path) -> None:
    """An engine names a column selected without an alias its own way (`r.sync_run_id`)."""
    asked: list[str] = []

    class Asked(DuckDBTarget):
        def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
            asked.append(sql)
            return super().query(sql, params)

    url = TargetURL.parse(f"duckdb:///{demo / 'demo.duckdb'}")
    with Asked(url, TargetSettings(read_only=True), DUCKDB) as target:
        for questions in (QUESTIONS["census"], QUESTIONS["hightouch"]):
            for _, answer in questions(target, 5678):
                answer()
    assert len(asked) == 6
    for sql in asked:
        unnamed = [
            e.sql() for e in sqlglot.parse_one(sql, read="duckdb").selects if not isinstance(e, exp.Alias)
        ]
        assert unnamed == [], sql


def test_demo_cleanup_left_nothing_older_than_retention(demo: Path) -> None:
    with duckdb.connect(str(demo / "demo.duckdb"), read_only=True) as db:
        (oldest,) = db.execute("SELECT MIN(batch_started_at) FROM census.sync_log").fetchone()
    assert oldest >= cutoff(datetime.now(UTC) - timedelta(minutes=5), 7)


def test_demo_emitted_inputs_replay_through_write(demo: Path, tmp_path: Path) -> None:
    run_dir = demo / "inputs" / "5678"
    target = f"duckdb:///{tmp_path / 'replay.duckdb'}"
    args = ["write", "--run", str(run_dir / "run.json"), "--records", str(run_dir / "records.parquet")]
    assert main([*args, "--target", target]) == 0
    assert main([*args, "--target", target]) == 0
    with duckdb.connect(str(tmp_path / "replay.duckdb"), read_only=True) as db:
        (replayed,) = db.execute("SELECT COUNT(*) FROM census.sync_log").fetchone()
    with duckdb.connect(str(demo / "demo.duckdb"), read_only=True) as db:
        (original,) = db.execute("SELECT COUNT(*) FROM census.sync_log WHERE sync_run_id = 5678").fetchone()
    assert replayed == original > 0


def test_write_from_jsonl(tmp_path: Path, demo: Path) -> None:
    run = json.loads((demo / "inputs" / "5678" / "run.json").read_text())
    (tmp_path / "run.json").write_text(json.dumps(run))
    lines = [
        {
            "record_identifier": "a@example.com",
            "operation": "upsert",
            "status": "succeeded",
            "status_message": None,
            "record_payload": {"email": "a@example.com", "tags": ["x"]},
            "batch_number": 0,
            "batch_started_at": "2026-11-20T10:00:00Z",
            "batch_completed_at": "2026-11-20T10:00:30Z",
        },
        {
            "record_identifier": "b@example.com",
            "operation": "delete",
            "status": "rejected",
            "status_message": "404 Not Found",
            "record_payload": {"email": "b@example.com"},
            "batch_number": 0,
            "batch_started_at": "2026-11-20T10:00:00Z",
            "batch_completed_at": "2026-11-20T10:00:30Z",
        },
    ]
    (tmp_path / "records.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    db = tmp_path / "jsonl.duckdb"
    code = main(
        [
            "write",
            "--run",
            str(tmp_path / "run.json"),
            "--records",
            str(tmp_path / "records.jsonl"),
            "--target",
            f"duckdb:///{db}",
        ]
    )
    assert code == 0
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.sql(
            "SELECT record_identifier, record_payload->>'email', status FROM census.sync_log ORDER BY 1"
        ).fetchall()
    assert rows == [
        ("a@example.com", "a@example.com", "succeeded"),
        ("b@example.com", "b@example.com", "rejected"),
    ]


def test_write_rejects_a_jsonl_file_missing_a_column(tmp_path: Path, demo: Path) -> None:
    (tmp_path / "records.jsonl").write_text(json.dumps({"record_identifier": "a", "operation": "upsert"}))
    code = main(
        [
            "write",
            "--run",
            str(demo / "inputs" / "5678" / "run.json"),
            "--records",
            str(tmp_path / "records.jsonl"),
            "--target",
            f"duckdb:///{tmp_path / 'x.duckdb'}",
        ]
    )
    assert code == 2
    with duckdb.connect(str(tmp_path / "x.duckdb")) as db:
        tables = db.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'census'")
        assert tables.fetchone() == (0,)


def test_records_filters_and_csv(demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = f"duckdb:///{demo / 'demo.duckdb'}"
    assert (
        main(["records", "--target", target, "--sync", "1234", "--status", "rejected", "--limit", "5"]) == 0
    )
    shown = capsys.readouterr().out
    assert "record_identifier" in shown and "rejected" in shown and "succeeded" not in shown
    out = tmp_path / "invalid.csv"
    assert (
        main(["records", "--target", target, "--sync", "1234", "--status", "invalid", "--out", str(out)]) == 0
    )
    rows = list(csv.DictReader(out.open()))
    assert rows and all(r["status"] == "invalid" for r in rows)
    # The destination's outcome stays beside the flag: the demo's engine sent them all.
    assert {r["layout_status"] for r in rows} <= {"succeeded", "rejected"}
    assert "succeeded" in {r["layout_status"] for r in rows}
    someone = next(r["record_identifier"] for r in rows if r["record_identifier"])
    assert (
        main(["records", "--target", target, "--sync", "1234", "--search", someone, "--out", str(out)]) == 0
    )
    assert {r["record_identifier"] for r in csv.DictReader(out.open())} == {someone}


def test_cleanup_command(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cleanup", "--target", f"duckdb:///{demo / 'demo.duckdb'}"]) == 0
    assert "cleanup done: 0 rows deleted" in capsys.readouterr().out


WITHOUT_SPARK = """
import sys
from pyspark import SparkContext
from synclog.cli.main import main
code = main(sys.argv[1:])
assert SparkContext._gateway is None and SparkContext._active_spark_context is None, "Spark was started"
sys.exit(code)
"""
"""Runs the command line, then fails if it started a Spark JVM."""


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (("records", "--sync", "1234", "--status", "rejected", "--limit", "5"), "rejected"),
        (("runs", "--sync", "1234"), "5678"),
        (("cleanup",), "cleanup done: 0 rows deleted"),
        (("flush",), "loaded 0 queued item(s); 0 run(s) still kept"),
        (("check",), "check: no rule fires"),
        (("plugins",), "duckdb://"),
    ],
)
def test_reading_and_deleting_never_start_spark(
    demo: Path, tmp_path: Path, command: tuple[str, ...], shown: str
) -> None:
    target = () if command == ("plugins",) else ("--target", f"duckdb:///{demo / 'demo.duckdb'}")
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_SPARK, *command, *target],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # flush looks for kept runs in ./.synclog
    )
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout
    assert done.stderr == ""


def test_spark_starts_quietly_unless_verbose(demo: Path, tmp_path: Path) -> None:
    """A command that writes starts Spark without its start-up lines; --verbose shows Spark's log."""
    run_dir = demo / "inputs" / "5678"
    args = ["write", "--run", str(run_dir / "run.json"), "--records", str(run_dir / "records.parquet")]
    quiet = run_cli(*args, "--target", f"duckdb:///{tmp_path / 'quiet.duckdb'}")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert "logged" in quiet.stdout
    verbose = run_cli("--verbose", *args, "--target", f"duckdb:///{tmp_path / 'verbose.duckdb'}")
    assert verbose.returncode == 0, verbose.stderr
    assert "Using Spark's default log4j profile" in verbose.stderr


def test_a_question_the_target_refuses_is_one_line_and_the_rest_are_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo asks on: a question the warehouse refuses prints one line naming the target and the
    error, never the driver's bare error as the command's end; one its capabilities cannot ask
    says which capability."""
    from synclog.cli.demo import _ask
    from synclog.demo.report import Unanswerable

    class ServerException(Exception):
        pass

    def refused() -> pa.Table:
        raise ServerException("Code: 62.\nDB::Exception: Syntax error")

    def lacking() -> pa.Table:
        raise Unanswerable("this target has no window functions (OVER) (window_functions = no)")

    url = TargetURL.parse(f"duckdb:///{tmp_path / 'x.duckdb'}")
    with DuckDBTarget(url, TargetSettings(), DUCKDB) as target:
        answered = [
            _ask(target, ("First?", refused)),
            _ask(target, ("Second?", lacking)),
            _ask(target, ("Third?", lambda: pa.table({"n": [1]}))),
        ]
    assert answered == [False, True, True]
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == ["First?", f"  {url} could not answer it: ServerException: Code: 62."]
    assert "  not asked: this target has no window functions (OVER) (window_functions = no)" in printed
    assert "Third?" in printed
