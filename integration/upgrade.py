"""Opening a database the previous release wrote (integration/data, see previous_release.py):
its tables keep working, and the first writes after the upgrade touch no row of another sync."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.layouts.census import SYNC_LOG
from synclog.layouts.hightouch import CHANGELOG
from synclog.model import RunStatus
from synclog.storage.location import Location
from synclog.targets.base import Target
from synclog.tracking import RunQuery, find_runs
from synclog.writer import SyncLog
from synclog_testing.factories import make_run

DATA = Path(__file__).parent / "data"
STARTED = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
"""When the previous release's first run started (previous_release.STARTED)."""


def load_duckdb_export(connection: Any, folder: Path = DATA / "previous-duckdb") -> None:
    """Run the previous release's EXPORT DATABASE (schema, then data) on a DuckDB connection."""
    connection.execute((folder / "schema.sql").read_text(encoding="utf-8"))
    connection.execute(
        (folder / "load.sql").read_text(encoding="utf-8").replace("FROM '", f"FROM '{folder}/")
    )


def counts(target: Target) -> dict[tuple[int, int], int]:
    """census.sync_log rows per (sync, run)."""
    log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
    rows = target.query(f"SELECT sync_id, sync_run_id, COUNT(*) AS n FROM {log} GROUP BY 1, 2").to_pylist()
    return {(int(r["sync_id"]), int(r["sync_run_id"])): int(r["n"]) for r in rows}


def people(sync_id: int, day: int) -> list[dict[str, object]]:
    """Four records of one batch, as the previous release's runs hold (`previous_release.records`)."""
    start = STARTED + timedelta(days=day)
    return [
        {
            "record_identifier": f"{who}@{sync_id}",
            "operation": "upsert",
            "status": "succeeded",
            "status_message": None,
            "record_payload": f'{{"who": "{who}", "day": {day}}}',
            "batch_number": 0,
            "batch_started_at": start,
            "batch_completed_at": start + timedelta(seconds=30),
        }
        for who in "abcd"
    ]


def write_after_upgrade(url: str, storage: Path, spark: SparkSession) -> None:
    """Sync 303's run 1 (a number sync 101 used too) and sync 202's run 6, after its run 5."""
    config = Config(
        defaults=SyncSettings(layouts=("census", "hightouch")), storage=Location.parse(str(storage))
    )
    with SyncLog.open(url, config, spark) as log:
        for sync_id, run_id, day in ((303, 1, 3), (202, 6, 3)):
            run = make_run(sync_id=sync_id, sync_run_id=run_id, started_at=STARTED + timedelta(days=day))
            run = replace(run, status=RunStatus.SUCCEEDED, finished_at=run.started_at + timedelta(hours=1))
            log.write_run(run, people(sync_id, day))


def check_upgrade(target: Target) -> None:
    """What the tests of each target assert after `write_after_upgrade`."""
    # Hand-counted: the previous release wrote 4 records per run; the new writes 4 each.
    assert counts(target) == {(101, 1): 4, (101, 2): 4, (202, 5): 4, (303, 1): 4, (202, 6): 4}
    table = target.relation(CHANGELOG).render()
    changelog = target.query(
        f"SELECT row_id, op_type FROM {table} WHERE sync_id = 202 AND sync_run_id = 6"
    ).to_pylist()
    # Run 5 sent a, b and d (c was rejected); run 6 sends all four with new payloads: changed.
    assert sorted((r["row_id"], r["op_type"]) for r in changelog) == [
        (f"{who}@202", "changed") for who in "abcd"
    ]
    runs = find_runs(target, RunQuery(101), "census").to_pylist()
    assert [(r["sync_run_id"], r["records"]) for r in runs] == [(2, 4), (1, 4)]
