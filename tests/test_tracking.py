"""Sync Tracking without Spark: which layout is read, and the lake's runs half written or without records.

The conformance suite checks records and runs on every layout a target holds, after real writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from synclog.errors import ConfigError, TargetError
from synclog.layouts.lake import ABORTED_MESSAGE, RUN_METADATA, metadata_row
from synclog.layouts.lake import RECORDS as LAKE_RECORDS
from synclog.model import RunStatus
from synclog.plugins.manager import registry
from synclog.targets.base import Target
from synclog.targets.lake import LakeTarget
from synclog.targets.lake_files import write_json, write_parquet
from synclog.tracking import RECORDS, RUNS, RecordQuery, RunQuery, Tracked, find_records, find_runs, tracking
from synclog.urls import TargetURL
from synclog_testing.factories import make_run

STARTED = datetime(2026, 3, 1, 8, tzinfo=UTC)


@pytest.fixture
def duckdb_target(tmp_path: Path) -> Iterator[Target]:
    with registry().open(TargetURL.parse(f"duckdb:///{tmp_path / 'empty.duckdb'}")) as target:
        yield target


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[LakeTarget]:
    target = registry().open(TargetURL.parse(f"lake:///{tmp_path / 'lake'}"))
    assert isinstance(target, LakeTarget)
    yield target
    target.close()


def test_a_target_without_records_says_which_tables_it_lacks(duckdb_target: Target) -> None:
    lacks = r"has no census\.sync_log, hightouch_audit\.sync_changelog: no sync"
    with pytest.raises(TargetError, match=lacks):
        tracking(duckdb_target)
    with pytest.raises(TargetError, match=r"has no hightouch_audit\.sync_changelog: .* the hightouch layout"):
        tracking(duckdb_target, "hightouch")
    with pytest.raises(ConfigError, match="cannot hold the 'lake' layout"):
        tracking(duckdb_target, "lake")


def test_failed_covers_rejected_and_invalid() -> None:
    assert Tracked.FAILED.covers() == (Tracked.REJECTED, Tracked.INVALID)
    assert Tracked.ABORTED.covers() == (Tracked.ABORTED,)


def test_lake_runs_unfinished_or_without_records(lake: LakeTarget) -> None:
    """Run 1 has batch files but no metadata.json yet; run 2 finished without records."""
    rows = [
        {"identifier": "a", "status": "succeeded", "status_message": None},
        {"identifier": None, "status": "NULL", "status_message": None},
        {"identifier": "b", "status": "rejected", "status_message": "INVALID_EMAIL"},
        {"identifier": "c", "status": "rejected", "status_message": ABORTED_MESSAGE},
    ]
    batch = [{**r, "operation": "upsert", "record_payload": "{}", "batch_started_at": STARTED} for r in rows]
    records = pa.Table.from_pylist(batch, schema=LAKE_RECORDS.arrow_schema())
    batch_file = lake.location.path("sync_tracking_datasets/1/7/1/records_upserted.0.parquet")
    write_parquet(lake.fs, batch_file, records)
    finished = make_run(
        sync_id=7, sync_run_id=2, started_at=STARTED + timedelta(hours=1), status=RunStatus.SUCCEEDED,
        finished_at=STARTED + timedelta(hours=2),
    )  # fmt: skip
    metadata = pa.Table.from_pylist([metadata_row(finished, {})], schema=RUN_METADATA.arrow_schema())
    path = lake.location.path("sync_tracking_datasets/1/7/2/metadata.json")
    write_json(lake.fs, path, metadata, frozenset({"record_payload_schema"}))

    runs = find_runs(lake, RunQuery(7))
    assert runs.schema == RUNS
    assert [(r["sync_run_id"], r["status"], r["records"]) for r in runs.to_pylist()] == [
        (2, "succeeded", 0),
        (1, "running", 4),
    ]
    running = runs.to_pylist()[1]
    assert (running["started_at"], running["finished_at"]) == (STARTED, None)
    assert (running["succeeded"], running["rejected"], running["invalid"], running["aborted"]) == (1, 1, 1, 1)
    assert runs.to_pylist()[0]["finished_at"] == finished.finished_at

    found = find_records(lake, RecordQuery(7))
    assert found.schema == RECORDS
    assert {(r["record_identifier"], r["status"]) for r in found.to_pylist()} == {
        ("a", "succeeded"),
        (None, "invalid"),
        ("b", "rejected"),
        ("c", "aborted"),
    }
    assert {r["batch_number"] for r in found.to_pylist()} == {0}
    assert find_records(lake, RecordQuery(7, sync_run_id=2)).num_rows == 0
    assert find_records(lake, RecordQuery(8)).num_rows == 0
    assert find_runs(lake, RunQuery(8)).num_rows == 0
