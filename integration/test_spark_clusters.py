"""synclog on a Spark cluster whose executors do not see the driver's disk, and through Spark Connect.

A standalone master with one worker in a private mount namespace (its `/tmp` is its own) and a
Spark Connect server in front of that cluster (`harness.spark_cluster`), S3 on a moto server
for `storage`, a throwaway Postgres. Every driver runs in a process of its own: `synclog write`
from the command line, and the conformance suite's cluster selection (`cluster_suite.py`).
Inputs live under /var/tmp, which the worker sees (its /tmp is private).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from cluster_suite import SELECTED
from harness.errors import ServerUnavailable
from harness.postgres_server import PostgresServer
from harness.s3_server import S3Server
from harness.spark_cluster import (
    SparkCluster,
    SparkConnectServer,
    spark_connect_server,
    spark_standalone,
    subprocess_env,
)
from pyspark.sql import SparkSession

from synclog.cli.demo import emit_inputs
from synclog.cli.main import main
from synclog.demo.simulator import history, records

pytest.importorskip("synclog_postgres", reason="synclog-postgres is not installed")

REPO = Path(__file__).resolve().parent.parent
SCALE = 0.05
STATUS_COUNTS = "SELECT status, invalid_reason, COUNT(*) AS n FROM census.sync_log GROUP BY ALL ORDER BY ALL"


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """A folder both the driver and the worker see (the worker's /tmp is private)."""
    folder = Path(tempfile.mkdtemp(prefix="synclog-cluster-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


APP_CORES = "2"
"""Cores each application takes: the Connect server's application keeps its executors while the
command-line drivers run, so the worker offers twice as many (2 cores, oversubscribed)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkCluster]:
    try:
        with spark_standalone(cores=2 * int(APP_CORES)) as running:
            yield running
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


def driver_conf(cluster: SparkCluster) -> dict[str, str]:
    return {**cluster.driver_conf, "spark.cores.max": APP_CORES}


@pytest.fixture(scope="module")
def connect(cluster: SparkCluster) -> Iterator[SparkConnectServer]:
    """A Spark Connect server whose executors are the cluster's."""
    try:
        with spark_connect_server(conf=driver_conf(cluster)) as server:
            yield server
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


@pytest.fixture(scope="module")
def local_config(shared: Path) -> list[str]:
    """`--config` for this process's (local) writes: storage in the shared folder."""
    config = shared / "local.toml"
    config.write_text(f'storage = "{shared / "local-storage"}"\n')
    return ["--config", str(config)]


@pytest.fixture(scope="module")
def run_inputs(shared: Path, spark: SparkSession) -> Path:
    """The demo's first run (run.json, records.parquet), as `synclog demo --emit-inputs` writes it."""
    first = history(datetime.now(UTC), SCALE)[0]
    emit_inputs(shared / "inputs", first.run.to_dict(), records(spark, first, SCALE))
    return shared / "inputs" / str(first.run.sync_run_id)


@pytest.fixture(scope="module")
def local_counts(run_inputs: Path, shared: Path, local_config: list[str]) -> list[tuple[object, ...]]:
    """The census counts of the run written in local mode (this process's Spark)."""
    url = f"duckdb:///{shared / 'local.duckdb'}"
    assert main([*local_config, *write_args(run_inputs, url)]) == 0
    return counts(url)


def cluster_env(cluster: SparkCluster, s3: S3Server, conf_dir: Path) -> dict[str, str]:
    """What a driver process of the cluster needs: its master, Spark settings, S3 keys."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    defaults = "\n".join(f"{key} {value}" for key, value in driver_conf(cluster).items())
    (conf_dir / "spark-defaults.conf").write_text(defaults + "\n")
    return subprocess_env(
        {
            **cluster.driver_env,
            **s3.environment,
            "SPARK_CONF_DIR": str(conf_dir),
            "SYNCLOG_SPARK_MASTER": cluster.master_url,
            "SYNCLOG_DRIVER_MEMORY": "512m",
        }
    )


def connect_env(connect: SparkConnectServer, s3: S3Server) -> dict[str, str]:
    return subprocess_env({**s3.environment, "SPARK_REMOTE": connect.remote})


def s3_config(folder: Path, s3: S3Server) -> Path:
    """A config file (for `--config`) whose storage is a fresh prefix of a fresh bucket."""
    bucket = f"storage-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(bucket)
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "s3.toml"  # not ./synclog.toml: a command without --config must not see it
    config.write_text(f'storage = "s3://{bucket}/synclog"\n')
    return config


def synclog(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "synclog", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


def write_args(run_inputs: Path, target: str) -> list[str]:
    return ["write", "--run", str(run_inputs / "run.json"), "--records", str(run_inputs / "records.parquet"),
            "--target", target]  # fmt: skip


def assert_refused(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "storage is " in lines[0] and "a folder only this machine sees" in lines[0], (
        lines
    )


# -- the command line on the cluster ------------------------------------------------------------


def test_local_storage_is_refused_before_any_work(
    cluster: SparkCluster, s3: S3Server, run_inputs: Path, shared: Path
) -> None:
    workdir = shared / "refused"
    workdir.mkdir()
    env = cluster_env(cluster, s3, shared / "conf")
    done = synclog(*write_args(run_inputs, f"duckdb:///{workdir / 'x.duckdb'}"), env=env, cwd=workdir)
    assert_refused(done)
    assert not (workdir / ".synclog" / "runs").exists(), "nothing was written"
    assert not (workdir / "x.duckdb").exists()


def test_a_run_lands_once_on_the_cluster(
    cluster: SparkCluster,
    s3: S3Server,
    run_inputs: Path,
    local_counts: list[tuple[object, ...]],
    shared: Path,
) -> None:
    """Every record lands with the counts local mode gives, and writing the run again adds nothing.
    (PostgreSQL on the cluster: its write, replay, diff and outage in `cluster_suite.py`.)"""
    workdir = shared / "lands"
    config = s3_config(workdir, s3)
    env = cluster_env(cluster, s3, shared / "conf")
    url = f"duckdb:///{workdir / 'cluster.duckdb'}"
    records = pq.read_metadata(run_inputs / "records.parquet").num_rows
    for _ in range(2):
        done = synclog("--config", str(config), *write_args(run_inputs, url), env=env, cwd=workdir)
        assert done.returncode == 0, done.stderr[-3000:]
        assert re.search(rf"logged {records:,} records", done.stdout), done.stdout
        assert counts(url) == local_counts
    assert sum(int(n) for *_, n in local_counts) == records  # type: ignore[call-overload]


def counts(url: str) -> list[tuple[object, ...]]:
    with duckdb.connect(url.removeprefix("duckdb:///")) as conn:
        return conn.execute(STATUS_COUNTS).fetchall()


# -- the command line through Spark Connect --------------------------------------------------------


def test_spark_connect_refuses_local_storage_and_lands_the_run_with_s3(
    connect: SparkConnectServer,
    s3: S3Server,
    run_inputs: Path,
    local_counts: list[tuple[object, ...]],
    shared: Path,
) -> None:
    workdir = shared / "connect"
    config = s3_config(workdir, s3)
    env = connect_env(connect, s3)
    url = f"duckdb:///{workdir / 'connect.duckdb'}"
    assert_refused(synclog(*write_args(run_inputs, url), env=env, cwd=workdir))
    done = synclog("--config", str(config), *write_args(run_inputs, url), env=env, cwd=workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert counts(url) == local_counts


# -- the conformance suite's write, replay, finish and outage tests ---------------------------------


@pytest.mark.parametrize("mode", ["standalone", "connect"])
def test_conformance_on_executors_elsewhere(
    mode: str,
    request: pytest.FixtureRequest,
    cluster: SparkCluster,
    s3: S3Server,
    postgres: PostgresServer,
    shared: Path,
) -> None:
    bucket = f"suite-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(bucket)
    if mode == "standalone":
        env = cluster_env(cluster, s3, shared / "conf")
    else:
        env = connect_env(request.getfixturevalue("connect"), s3)
    env |= {"SYNCLOG_TEST_STORAGE": f"s3://{bucket}/suite", "SYNCLOG_TEST_POSTGRES": postgres.url}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "integration/cluster_suite.py", "-k", SELECTED, "-q",
         "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=2400,
    )  # fmt: skip
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    # DuckDB and Postgres: write, replay, finish (hightouch diff), outage; the lake all but the diff.
    assert re.search(r"\b11 passed\b", summary), summary
    assert "failed" not in summary and "error" not in summary, summary
