"""Writes the databases of tests/…/test_*_upgrade: what synclog 0.1.0 (commit 26c73da, before
every key carried `sync_id`) left in DuckDB and PostgreSQL, for the tests that open them with
the current code.

Run it with that commit's code first on the path, from a checkout of it:

    git worktree add /tmp/previous 26c73da
    PYTHONPATH=/tmp/previous/core:/tmp/previous/plugins/postgres/src:/tmp/previous/testing/src:. \\
        .venv/bin/python integration/data/previous_release.py integration/data

It writes `previous-duckdb/` (DuckDB's EXPORT DATABASE) and `previous-postgres.sql` (pg_dump
with INSERTs), each holding: sync 101, runs 1 and 2; sync 202, run 5; census and hightouch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from integration.harness.postgres_server import postgres_server
from synclog.config import Config, SyncSettings
from synclog.model import RunStatus
from synclog.storage.location import Location
from synclog.writer import SyncLog
from synclog_testing.factories import make_run

STARTED = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
RUNS = ((101, 1, 0), (101, 2, 1), (202, 5, 2))
"""(sync, run, day after STARTED)."""


def records(sync_id: int, day: int) -> list[dict[str, object]]:
    """Four records of one batch: three people and a rejection."""
    start = STARTED + timedelta(days=day)
    people = [("a", "succeeded", None), ("b", "succeeded", None), ("c", "rejected", "INVALID: no")]
    people.append(("d", "succeeded", None))
    return [
        {
            "record_identifier": f"{who}@{sync_id}",
            "operation": "upsert",
            "status": status,
            "status_message": message,
            "record_payload": json.dumps({"who": who, "day": day}),
            "batch_number": 0,
            "batch_started_at": start,
            "batch_completed_at": start + timedelta(seconds=30),
        }
        for who, status, message in people
    ]


def write(url: str, storage: Path) -> None:
    config = Config(
        defaults=SyncSettings(layouts=("census", "hightouch")), storage=Location.parse(str(storage))
    )
    with SyncLog.open(url, config) as log:
        for sync_id, run_id, day in RUNS:
            run = make_run(sync_id=sync_id, sync_run_id=run_id, started_at=STARTED + timedelta(days=day))
            run = replace(run, status=RunStatus.SUCCEEDED, finished_at=run.started_at + timedelta(hours=1))
            log.write_run(run, records(sync_id, day))


def main(folder: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        database = Path(scratch) / "previous.duckdb"
        write(f"duckdb:///{database}", Path(scratch) / "storage")
        exported = folder / "previous-duckdb"
        with duckdb.connect(str(database)) as connection:
            connection.execute(f"EXPORT DATABASE '{exported}'")
        load = exported / "load.sql"  # file names relative to the folder, wherever it is checked out
        load.write_text(load.read_text(encoding="utf-8").replace(f"'{exported}/", "'"), encoding="utf-8")
        with postgres_server() as pg:
            write(pg.url, Path(scratch) / "storage-pg")
            dump = subprocess.run(
                ["pg_dump", "--inserts", "--no-owner", "--no-privileges", pg.dsn],
                check=True,
                capture_output=True,
                text=True,
            )
        # Without psql's meta-commands (pg_dump's \restrict), so any client can run the script.
        script = "".join(line for line in dump.stdout.splitlines(True) if not line.startswith("\\"))
        (folder / "previous-postgres.sql").write_text(script, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
