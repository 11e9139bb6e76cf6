"""`synclog spark start|status|stop`: a warm Spark Connect server that a new process writes through,
and the loader of a target that it starts and stops with it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from synclog import SynclogError, spark_server
from synclog.loading import process
from synclog.loading.lease import lease_for
from synclog.storage.location import Location
from synclog.urls import TargetURL

WRITER = """
import sys
import pandas as pd
from pyspark import SparkContext
from synclog import SyncLog
from synclog.config import Config
from synclog.spark import remote_url
from synclog.storage.location import Location
from synclog_testing.factories import RECORD_COLUMNS, make_run, record_rows

run = make_run()
batch = pd.DataFrame([dict(zip(RECORD_COLUMNS, row)) for row in record_rows(run, count=10, batches=1)])
config = Config(storage=Location.parse(sys.argv[2]))
with SyncLog.open(sys.argv[1], config, writes=True) as log:
    written = log.write_run(run, batch)
    print(remote_url(log.spark), written.records, SparkContext._gateway is None, log.spark.session_id)
    if sys.argv[3:] == ["stop"]:
        log.spark.stop()  # a Spark-native caller's habit: the shared session must outlive it
sys.stdout.flush()
if sys.argv[3:] == ["linger"]:
    sys.stdin.readline()  # the server may stop meanwhile: the process must still exit at once
"""


def synclog(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "synclog", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=env["HOME"],
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The environment of a process that finds the server in `tmp_path` (never a user's own), run
    from `tmp_path` (its default target and storage are there)."""
    monkeypatch.setenv(spark_server.DIR_ENV, str(tmp_path / "spark"))
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    yield {**clean, "HOME": str(tmp_path)}
    with contextlib.suppress(SynclogError):  # whatever the test did, no loader outlives it
        loaded = TargetURL.parse(f"duckdb:///{tmp_path / 'loaded.duckdb'}")  # as its folder names it
        process.stop(lease_for(Location.parse(str(tmp_path / ".synclog")), loaded))
    spark_server.stop()  # … nor the server


LOADED = "duckdb:///loaded.duckdb"
"""The target whose loader `spark start` runs (relative to the test's folder)."""


def test_a_stale_state_file_is_no_server(env: dict[str, str]) -> None:
    """A state file whose process is gone (or is not a Spark Connect server) counts as no server."""
    folder = spark_server.state_dir()
    folder.mkdir(parents=True)
    state = {
        "remote": "sc://127.0.0.1:1",
        "pid": os.getpid(),
        "started_at": "2026-01-01T00:00:00+00:00",
        "log": "",
    }
    (folder / "spark-server.json").write_text(json.dumps(state))
    assert spark_server.running() is None
    assert synclog(env, "spark", "status").startswith("no Spark Connect server")
    assert spark_server.stop() is None and not (folder / "spark-server.json").exists()


@pytest.mark.spark
def test_start_status_write_through_and_stop(env: dict[str, str], tmp_path: Path) -> None:
    assert synclog(env, "spark", "status").startswith("no Spark Connect server")
    started = synclog(
        env, "spark", "start", "--master", "local[1]", "--driver-memory", "1g", "--target", LOADED
    )
    server = spark_server.running()
    assert server is not None and started.startswith(f"started Spark Connect server at {server.remote}")
    loaded = f"loader for duckdb:///{tmp_path / 'loaded.duckdb'} (pid "
    assert started.splitlines()[1].startswith(f"started {loaded}")
    again = synclog(env, "spark", "start", "--target", LOADED).splitlines()
    assert again[0].startswith(f"already running: Spark Connect server at {server.remote}")
    assert again[1].startswith(f"already running: {loaded}")
    status = synclog(env, "spark", "status")
    assert status.startswith(f"running at {server.remote}, pid {server.pid}, up 0h ")

    target = f"duckdb:///{tmp_path / 'logs.duckdb'}"

    def write(*args: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", WRITER, target, str(tmp_path / "storage"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    # a Connect session on loopback (SPARK_REMOTE is unset: only the server's state file names one),
    # no JVM of the process's own, and the session every process joins, even after one stopped it
    joined = [f"sc://{spark_server.HOST}", "10", "True", server.session]
    assert write("stop") == joined
    assert write() == joined
    with duckdb.connect(str(tmp_path / "logs.duckdb"), read_only=True) as db:
        assert db.execute("select count(*) from census.sync_log").fetchone() == (10,)

    lingering = subprocess.Popen(
        [sys.executable, "-c", WRITER, target, str(tmp_path / "storage"), "linger"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert lingering.stdout is not None and lingering.stdout.readline().split() == joined
    stopped = synclog(env, "spark", "stop", "--target", LOADED).splitlines()
    assert stopped[0].startswith(f"stopped loader for duckdb:///{tmp_path / 'loaded.duckdb'} (pid ")
    assert stopped[1] == f"stopped Spark Connect server at {server.remote} (pid {server.pid})"
    try:  # pyspark's exit hook would retry its calls to the stopped server for minutes
        _, err = lingering.communicate("\n", timeout=60)
    finally:
        lingering.kill()
    assert lingering.returncode == 0, err
    assert spark_server.running() is None
    proc = Path(f"/proc/{server.pid}")
    assert not proc.exists() or b"SparkConnectServer" not in (proc / "cmdline").read_bytes()
