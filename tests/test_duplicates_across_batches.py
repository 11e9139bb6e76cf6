"""A run logged batch by batch holds the same DUPLICATE flags as the same records in one write_run.

A write counts identifiers within its own batches; `finish` flags every occurrence of an
identifier that batches of several writes hold.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog.config import Config
from synclog.storage import runstore, store_task
from synclog.storage.location import Location
from synclog.storage.run_state import RunStates, unpacked
from synclog.writer import SyncLog
from synclog_testing.factories import make_records, make_run, record_rows

COLUMNS = "log_id, record_identifier, batch_number, status, status_message, invalid_reason"


def logged(tmp_path: Path, name: str, spark: SparkSession, batch_by_batch: bool) -> list[dict[str, object]]:
    run = make_run()
    # 30 records in 3 batches: position 25 (batch 2) repeats position 2 (batch 0), 15 (batch 1)
    # repeats 14 (batch 1), and 21 (batch 2) repeats 11 (batch 1).
    rows = record_rows(run, count=30, batches=3, duplicate_of={25: 2, 15: 14, 21: 11})
    config = Config(storage=Location.parse(str(tmp_path / f"{name}-storage")))
    with SyncLog.open(f"duckdb:///{tmp_path / name}.duckdb", config, spark) as log:
        if batch_by_batch:
            for batch in range(3):
                log.write(run, make_records(spark, [r for r in rows if r[5] == batch]))
            log.finish(run)
        else:
            log.write_run(run, make_records(spark, rows))
        table = log.target.query(f"SELECT {COLUMNS} FROM census.sync_log ORDER BY log_id")
        assert not log.store.has(run)
    return table.to_pylist()


@pytest.mark.parametrize("hashes_kept", [True, False], ids=["hashes-in-run-json", "too-many-to-keep"])
def test_batch_by_batch_and_write_run_hold_the_same_flags(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hashes_kept: bool
) -> None:
    if not hashes_kept:  # finish then reads the identifiers themselves, in a Spark job
        monkeypatch.setattr(runstore, "RUN_IDENTIFIERS", 5)
    one_call = logged(tmp_path, "one", spark, batch_by_batch=False)
    batches = logged(tmp_path, "batches", spark, batch_by_batch=True)
    assert batches == one_call
    duplicates = sorted(
        (r["record_identifier"], r["batch_number"]) for r in one_call if r["invalid_reason"] == "DUPLICATE"
    )
    assert duplicates == sorted(
        [
            ("user1234-2@example.com", 0),
            ("user1234-2@example.com", 2),
            ("user1234-14@example.com", 1),
            ("user1234-14@example.com", 1),
            ("user1234-11@example.com", 1),
            ("user1234-11@example.com", 2),
        ]
    )


def test_a_replayed_batch_is_no_duplicate_of_itself(spark: SparkSession, tmp_path: Path) -> None:
    run = make_run()
    rows = record_rows(run, count=20, batches=2, duplicate_of={})
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    with SyncLog.open(f"duckdb:///{tmp_path / 'x'}.duckdb", config, spark) as log:
        for batch in (0, 1, 1, 0):  # batches 1 and 0 written twice
            log.write(run, make_records(spark, [r for r in rows if r[5] == batch]))
        log.finish(run)
        invalid = log.target.query("SELECT invalid_reason, count(*) AS n FROM census.sync_log GROUP BY 1")
    assert {r["invalid_reason"]: r["n"] for r in invalid.to_pylist()} == {None: 19, "NULL": 1}


def test_a_run_of_two_writes_flags_an_identifier_both_hold(spark: SparkSession, tmp_path: Path) -> None:
    """Two writes are enough for `finish` to look across them: position 15 (batch 1, the second
    write) repeats position 2 (batch 0, the first), and both are flagged DUPLICATE."""
    run = make_run()
    rows = record_rows(run, count=20, batches=2, duplicate_of={15: 2})
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    with SyncLog.open(f"duckdb:///{tmp_path / 'x'}.duckdb", config, spark) as log:
        for batch in (0, 1):
            log.write(run, make_records(spark, [r for r in rows if r[5] == batch]))
        log.finish(run)
        flagged = log.target.query(
            "SELECT record_identifier, batch_number FROM census.sync_log "
            "WHERE invalid_reason = 'DUPLICATE' ORDER BY ALL"
        )
    assert [tuple(r.values()) for r in flagged.to_pylist()] == [
        ("user1234-2@example.com", 0),
        ("user1234-2@example.com", 1),
    ]


def test_finish_runs_no_spark_job_when_no_identifier_repeats(spark: SparkSession, tmp_path: Path) -> None:
    """The writes' tasks reported each batch's identifier hashes: none is shared, so `finish`
    loads the run without asking Spark anything."""
    run = make_run()
    rows = record_rows(run, count=20, batches=2, duplicate_of={})
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    jobs = spark.sparkContext.statusTracker()
    with SyncLog.open(f"duckdb:///{tmp_path / 'x'}.duckdb", config, spark) as log:
        for batch in (0, 1):
            log.write(run, make_records(spark, [r for r in rows if r[5] == batch]))
        assert log.store.repeated_batches(run) == ()
        before = jobs.getJobIdsForGroup()
        log.finish(run)
        assert jobs.getJobIdsForGroup() == before
        assert log.target.client.fetch("SELECT count(*) FROM census.sync_log") == [(20,)]


def _task_reports(tmp_path: Path, batches: dict[int, list[int]]) -> list[dict[str, object]]:
    """What one write task reports after keeping `batches` (batch number: identifier hashes)."""
    import json

    import pyarrow as pa

    run = make_run()
    store = runstore.RunStore(RunStates(Location.parse(str(tmp_path / "store"))))
    task = store.writer({(run.sync_id, run.sync_run_id): store.begin_write(run)}).open(0)
    for number, hashes in batches.items():
        rows = pa.record_batch(
            {
                "sync_id": pa.array([run.sync_id] * len(hashes), pa.int64()),
                "sync_run_id": pa.array([run.sync_run_id] * len(hashes), pa.int64()),
                "batch_number": pa.array([number] * len(hashes), pa.int32()),
                "status": ["succeeded"] * len(hashes),
                "invalid_reason": pa.nulls(len(hashes), pa.string()),
            }
        )
        task.write(rows, hashes=pa.array(hashes, pa.int64()))
    return [json.loads(report) for report in task.close()]


def test_a_task_reports_identifier_hashes_only_while_they_are_few(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap counts a task's hashes over all its batches, not per batch: a run of many small
    batches would otherwise send every identifier's hash to the driver."""
    monkeypatch.setattr(store_task, "TASK_IDENTIFIERS", 6)
    few = _task_reports(tmp_path / "few", {0: [1, 2, 3], 1: [3, 4]})
    assert [unpacked(r["identifiers"]) for r in few] == [(1, 2, 3), (3, 4)]
    many = _task_reports(tmp_path / "many", {0: [1, 2, 3], 1: [4, 5], 2: [6, 7]})  # 7 in all
    assert [r["batch"] for r in many] == [0, 1, 2]
    assert not any("identifiers" in r for r in many)
