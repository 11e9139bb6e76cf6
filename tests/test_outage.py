"""A warehouse outage never fails the sync or loses a log row: batches wait for `flush`."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog.config import Config
from synclog.layouts.census import SYNC_LOG
from synclog.testing.factories import make_records, make_run, record_rows
from synclog.writer import SyncLog


def count(log: SyncLog) -> int:
    view = log.target.relation(SYNC_LOG, SYNC_LOG.view).render()
    return int(log.target.query(f"SELECT COUNT(*) FROM {view}").column(0)[0].as_py())


def test_outage_keeps_batches_and_flush_loads_them_once(tmp_path: Path, spark: SparkSession) -> None:
    url = f"duckdb:///{tmp_path / 'logs.duckdb'}"
    config = Config(state_dir=str(tmp_path / "state"))
    run = make_run()
    rows = record_rows(run, count=40, batches=2)
    down = SyncLog.open(url, config, spark)
    down.target.close()  # the warehouse goes away mid-sync
    first = down.write(run, make_records(spark, [r for r in rows if r[5] == 0]))
    second = down.write(run, make_records(spark, [r for r in rows if r[5] == 1]))
    assert first.pending and second.pending
    assert down.finish(run) == {}
    (kept,) = down.store.all_pending()
    assert (kept.batches, kept.finished) == ((0, 1), True)

    with SyncLog.open(url, config, spark) as up:
        assert up.flush() == []
        assert count(up) == 40
        assert up.flush() == []
        assert count(up) == 40
    assert not down.store.has(run)


def test_failures_can_be_raised_instead(tmp_path: Path, spark: SparkSession) -> None:
    config = Config(state_dir=str(tmp_path / "state"), keep_on_target_failure=False)
    log = SyncLog.open(f"duckdb:///{tmp_path / 'logs.duckdb'}", config, spark)
    log.target.close()
    run = make_run()
    with pytest.raises(Exception, match="closed"):
        log.write_run(run, make_records(spark, record_rows(run)))
