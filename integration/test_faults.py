"""Faults injected into real writer processes: nothing lost, nothing twice, nothing left behind.

A few trials of `harness.faults` (the bench, `bench/faults.py`, runs hundreds): a writer is
killed with SIGKILL at a point of the write path (on DuckDB also once its batches are queued for
loads behind the engine, none of them loaded, and a loader in its swap while its engine is still
queueing), or its connection is cut; a second writer flushes (two at once after a loader's
kill: one loads, the other holds back) and writes the run again; every table must then hold
exactly the rows of a write without a fault, no staging relation or scratch file may be left,
and storage must be empty.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.faults import Driver, DuckDBScenario, LakeScenario, Outcome, PostgresScenario, Scenario, Workers
from harness.postgres_server import PostgresServer
from harness.s3_server import S3Server


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="synclog-faults-") as folder:
        yield Path(folder)


@pytest.fixture(scope="module")
def workers(root: Path) -> Iterator[Workers]:
    pool = Workers(root / "logs", spares=1)
    yield pool
    pool.close()


def trials(scenario: Scenario, workers: Workers, plan: list[tuple[str, str | None]]) -> list[Outcome]:
    driver = Driver(scenario, workers, count=20, batches=2)
    driver.prepare()
    try:
        return [driver.trial(fault, point) for fault, point in plan]
    finally:
        scenario.close()


def check(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        assert outcome.landed, f"the fault did not strike: {outcome}"
        assert (outcome.lost, outcome.duplicated) == (0, 0), outcome
        assert outcome.leftovers == [], outcome
        assert outcome.storage_files == [], outcome


@pytest.mark.duckdb
def test_duckdb_survives_a_kill_with_staged_files(root: Path, workers: Workers) -> None:
    scenario = DuckDBScenario(root, layouts=("census",))
    check(
        trials(
            scenario, workers, [("kill@point", "load"), ("behind@point", "queued"), ("loader@point", "swap")]
        )
    )


@pytest.mark.postgres
def test_postgres_survives_a_kill_with_its_stage_filled(
    root: Path, workers: Workers, postgres: PostgresServer
) -> None:
    scenario = PostgresScenario(
        root, postgres.host, postgres.port, postgres.user, postgres.database, layouts=("census",)
    )
    check(trials(scenario, workers, [("kill@point", "load")]))


@pytest.mark.lake
@pytest.mark.s3
def test_the_lake_on_s3_survives_a_kill_while_publishing(root: Path, workers: Workers, s3: S3Server) -> None:
    bucket = f"faults-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(bucket)
    check(
        trials(LakeScenario(root, s3.endpoint_url, s3.environment, bucket), workers, [("kill@point", "load")])
    )
