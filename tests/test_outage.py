"""A warehouse outage never fails the sync or loses a log row: batches wait for `flush`."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog.config import Config
from synclog.layouts.census import SYNC_LOG
from synclog.storage.location import Location
from synclog.writer import SyncLog
from synclog_testing.factories import make_records, make_run, record_rows


def count(log: SyncLog) -> int:
    view = log.target.relation(SYNC_LOG, SYNC_LOG.view).render()
    return int(log.target.query(f"SELECT COUNT(*) FROM {view}").column(0)[0].as_py())


def blocked_url(tmp_path: Path) -> tuple[str, Path]:
    """A DuckDB URL that cannot open while the returned file stands where its folder goes."""
    blocker = tmp_path / "warehouse"
    blocker.write_text("")
    return f"duckdb:///{blocker / 'logs.duckdb'}", blocker


def test_outage_keeps_batches_and_flush_loads_them_once(tmp_path: Path, spark: SparkSession) -> None:
    url, blocker = blocked_url(tmp_path)
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    run = make_run()
    rows = record_rows(run, count=40, batches=2)
    warnings: list[str] = []
    down = SyncLog.open(url, config, spark, progress=warnings.append)  # the warehouse is down
    assert any("does not answer" in w for w in warnings)
    first = down.write(run, make_records(spark, [r for r in rows if r[5] == 0]))
    second = down.write(run, make_records(spark, [r for r in rows if r[5] == 1]))
    assert first.pending and second.pending
    ended = down.finish(run)
    assert (ended.loaded, ended.pending) == ({}, True)
    # record_rows: a NULL identifier at 3, 9 repeats 8, every 5th (4, 9, …, 39) rejected
    assert ended.statuses == {"succeeded": 30, "rejected": 7, "invalid_null": 1, "invalid_duplicate": 2}
    (kept,) = down.spool.every()
    assert (kept.batches, kept.finished) == ((0, 1), True)

    blocker.unlink()  # the warehouse is back
    with SyncLog.open(url, config, spark) as up:
        assert up.flush() == []
        assert count(up) == 40
        assert up.flush() == []
        assert count(up) == 40
    assert not down.store.has(run)


def test_writes_reconnect_once_the_warehouse_is_back(tmp_path: Path, spark: SparkSession) -> None:
    url, blocker = blocked_url(tmp_path)
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    run = make_run()
    rows = record_rows(run, count=40, batches=2)
    with SyncLog.open(url, config, spark) as log:
        assert log.write(run, make_records(spark, [r for r in rows if r[5] == 0])).pending
        blocker.unlink()
        second = log.write(run, make_records(spark, [r for r in rows if r[5] == 1]))
        assert not second.pending
        assert count(log) == 40  # the kept batch went in with the new one
        log.finish(run)
        assert log.spool.every() == []
        assert not log.store.has(run)


def test_a_kept_batch_written_again_once_the_warehouse_is_back_waits_no_more(
    tmp_path: Path, spark: SparkSession
) -> None:
    """The replay carries the kept batch itself: nothing is left waiting for `flush`."""
    url, blocker = blocked_url(tmp_path)
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    run = make_run()
    batch = record_rows(run, count=20, batches=1)
    with SyncLog.open(url, config, spark) as log:
        assert log.write(run, make_records(spark, batch)).pending
        assert [p.batches for p in log.spool.every()] == [(0,)]
        blocker.unlink()
        assert not log.write(run, make_records(spark, batch)).pending
        assert log.spool.every() == []
        assert count(log) == 20


def test_a_target_that_fails_mid_run_is_connected_again(tmp_path: Path, spark: SparkSession) -> None:
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    run = make_run()
    rows = record_rows(run, count=40, batches=2)
    with SyncLog.open(f"duckdb:///{tmp_path / 'logs.duckdb'}", config, spark) as log:
        log.target.close()  # the connection breaks mid-sync
        assert log.write(run, make_records(spark, [r for r in rows if r[5] == 0])).pending
        assert not log.write(run, make_records(spark, [r for r in rows if r[5] == 1])).pending
        assert count(log) == 40


def test_failures_can_be_raised_instead(tmp_path: Path, spark: SparkSession) -> None:
    config = Config(storage=Location.parse(str(tmp_path / "storage")), keep_on_target_failure=False)
    with pytest.raises(Exception, match="cannot open DuckDB database"):
        SyncLog.open(blocked_url(tmp_path)[0], config, spark)
    log = SyncLog.open(f"duckdb:///{tmp_path / 'logs.duckdb'}", config, spark)
    log.target.close()
    run = make_run()
    with pytest.raises(Exception, match="closed"):
        log.write_run(run, make_records(spark, record_rows(run)))
