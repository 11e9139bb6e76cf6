"""`BackgroundLog`: a batch is durable when `write` returns, its load follows in order through a
`SyncLog`, and what a load finds reaches the engine without losing a row."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow.ipc as ipc
import pytest
from pyspark.sql import SparkSession

from synclog import BackgroundLog, InputError, RunStatus, SynclogError
from synclog.config import Config, SyncSettings
from synclog.loading.service import flush
from synclog.storage.location import Location
from synclog.storage.queue import LoadQueue, batch_numbers, target_key
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.factories import RECORD_COLUMNS, make_records, make_run, record_rows

RUN = make_run()
ROWS = record_rows(RUN, count=30, batches=3)
"""30 records in 3 batches: a NULL identifier at 3, 9 repeats 8, every 5th (4, 9, …, 29) rejected."""
LOGGED = "SELECT log_id, batch_number, status, invalid_reason FROM census.sync_log ORDER BY log_id"


def batch(number: int, rows: list[tuple[Any, ...]] = ROWS) -> list[dict[str, Any]]:
    return [dict(zip(RECORD_COLUMNS, row, strict=True)) for row in rows if row[5] == number]


def where(folder: Path) -> tuple[str, Config]:
    return f"duckdb:///{folder / 'logs.duckdb'}", Config(storage=Location.parse(str(folder / "storage")))


def in_queue(folder: Path) -> list[tuple[tuple[int, ...], bool]]:
    """What waits in the load queue of `where(folder)`: each item's batches, and whether it is an end."""
    url, config = where(folder)
    queue = LoadQueue(config.storage, target_key(TargetURL.parse(url)))
    return [((), True) if i.is_end else (batch_numbers(queue.read(i)[1]), False) for i in queue.items()]


@pytest.fixture
def behind(tmp_path: Path, spark: SparkSession) -> Iterator[tuple[BackgroundLog, list[str]]]:
    warnings: list[str] = []
    log = BackgroundLog.open(*where(tmp_path), spark, progress=warnings.append)
    yield log, warnings
    log.close()


def test_a_batch_is_durable_when_write_returns_and_loads_as_in_place(
    behind: tuple[BackgroundLog, list[str]], tmp_path: Path, spark: SparkSession
) -> None:
    log, _ = behind
    queued = [log.write(RUN, batch(n)) for n in range(3)]
    assert all(r.queued and r.statuses == {} for r in queued)
    ended = log.finish(RUN)
    assert ended.queued
    result = ended.wait()
    assert result.statuses == {"succeeded": 22, "rejected": 5, "invalid_null": 1, "invalid_duplicate": 2}
    assert [r.wait().records for r in queued] == [10, 10, 10]
    assert not log.log.store.known(RUN) and in_queue(tmp_path) == []  # loaded and forgotten
    behind_rows = log.log.target.query(LOGGED).to_pylist()

    with SyncLog.open(*where(tmp_path / "in-place"), spark) as in_place:
        for n in range(3):
            in_place.write(RUN, make_records(spark, [r for r in ROWS if r[5] == n]))
        in_place.finish(RUN)
        assert in_place.target.query(LOGGED).to_pylist() == behind_rows


def test_the_queue_file_holds_the_batch_as_given(
    behind: tuple[BackgroundLog, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `write` keeps before it returns is the engine's batch itself (checked for its columns
    only), with its run."""
    log, _ = behind
    log.wait()  # the log's own start (Spark, the target) is behind it
    gate = threading.Event()
    original = log.log.write_all
    monkeypatch.setattr(log.log, "write_all", lambda writes: gate.wait() and original(writes))
    written = log.write(RUN, batch(1))
    url, config = where(tmp_path)
    queue = LoadQueue(config.storage, target_key(TargetURL.parse(url)))
    (item,) = queue.items()
    run, kept = queue.read(item)
    gate.set()
    assert (run, batch_numbers(kept)) == (RUN, (1,))
    assert [r["record_identifier"] for r in kept.to_pylist()] == [r["record_identifier"] for r in batch(1)]
    assert written.wait().records == 10


def test_a_refused_batch_names_itself_and_keeps_its_records(behind: tuple[BackgroundLog, list[str]]) -> None:
    log, warnings = behind
    rows = [r if i != 12 else (*r[:2], "teleported", *r[3:]) for i, r in enumerate(ROWS)]  # batch 1
    results = [log.write(RUN, batch(n, rows)) for n in range(3)]
    ended = log.finish(replace(RUN, status=RunStatus.SUCCEEDED)).wait()
    with pytest.raises(InputError) as refused:
        results[1].wait()
    message = str(refused.value)
    assert message.startswith(
        "batch 1 of run 5678 refused: record results: column 'status' has unknown value"
    )
    assert ended.refused == (message,) and f"warning: {message}" in warnings
    assert [r.wait().records for r in (results[0], results[2])] == [10, 10]
    logged = log.log.target.client.fetch(
        "SELECT batch_number, count(*) FROM census.sync_log GROUP BY 1 ORDER BY 1"
    )
    assert logged == [(0, 10), (2, 10)]  # nothing of batch 1 reached the log
    kept = message.rsplit("its records are in ", 1)[1]
    with ipc.open_file(kept) as refused_file:
        assert refused_file.read_all().column("status").to_pylist()[2] == "teleported"


def test_a_load_failure_is_raised_by_the_next_call_and_the_batch_stays_queued(
    behind: tuple[BackgroundLog, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, _ = behind
    log.wait()

    def broken(*_: Any) -> None:
        raise RuntimeError("a bug in a load")

    monkeypatch.setattr(log.log, "write_all", broken)
    first = log.write(RUN, batch(0))
    with pytest.raises(RuntimeError, match="a bug in a load"):
        first.wait()
    with pytest.raises(RuntimeError, match="a bug in a load"):
        log.write(RUN, batch(1))  # queued first, then told what went wrong before
    with pytest.raises(RuntimeError, match="a bug in a load"):
        log.wait()  # batch 1's load failed too; each failure is told once
    assert log.wait()
    assert in_queue(tmp_path) == [((0,), False), ((1,), False)]  # nothing lost
    monkeypatch.undo()
    log.finish(RUN).wait()  # finish loads what is still queued first
    assert log.log.target.client.fetch("SELECT count(*) FROM census.sync_log") == [(20,)]


def test_a_spark_batch_is_written_in_place_after_what_was_queued(
    behind: tuple[BackgroundLog, list[str]], tmp_path: Path, spark: SparkSession
) -> None:
    log, _ = behind
    log.write(RUN, batch(0))
    in_place = log.write(RUN, make_records(spark, [r for r in ROWS if r[5] == 1]))
    assert not in_place.queued and in_place.records == 10
    assert in_queue(tmp_path) == []  # batch 0 loaded before it
    assert log.log.target.client.fetch("SELECT count(*) FROM census.sync_log") == [(20,)]


WRITER = """
import os, sys
from synclog import BackgroundLog
from synclog.config import Config
from synclog.storage.location import Location
from synclog_testing.factories import RECORD_COLUMNS, make_run, record_rows

run = make_run()
rows = [dict(zip(RECORD_COLUMNS, r)) for r in record_rows(run, count=30, batches=3)]
config = Config(storage=Location.parse(sys.argv[2]))
log = BackgroundLog.open(sys.argv[1], config)
for number in range(3):
    log.write(run, [r for r in rows if r["batch_number"] == number])
log.finish(run)
os._exit(0)  # gone before its loads: as a kill, nothing of them ran
"""


@pytest.mark.parametrize("recovery", ["next writer", "flush"])
def test_what_a_gone_process_left_queued_is_loaded_once(
    tmp_path: Path, spark: SparkSession, recovery: str
) -> None:
    target, storage = f"duckdb:///{tmp_path / 'logs.duckdb'}", tmp_path / "storage"
    nowhere = {**os.environ, "SPARK_REMOTE": "sc://127.0.0.1:9"}  # its loads could not start anyway
    done = subprocess.run([sys.executable, "-c", WRITER, target, str(storage)], env=nowhere, timeout=300)
    assert done.returncode == 0
    assert in_queue(tmp_path) == [((0,), False), ((1,), False), ((2,), False), ((), True)]
    if recovery == "flush":  # what `synclog flush` does
        with SyncLog.configured(*where(tmp_path), spark) as log:
            assert flush(log, print) == (4, [])
            assert log.target.client.fetch("SELECT count(*) FROM census.sync_log") == [(30,)]
    else:
        with BackgroundLog.open(*where(tmp_path), spark) as behind:
            assert behind.wait()  # its start took them over
            assert behind.log.target.client.fetch("SELECT count(*) FROM census.sync_log") == [(30,)]
    with SyncLog.configured(*where(tmp_path), spark) as log:
        assert flush(log, print) == (0, [])  # nothing twice
        assert log.target.client.fetch("SELECT count(*) FROM census.sync_log") == [(30,)]
    left = sorted(p.relative_to(storage).parts[0] for p in storage.rglob("*") if p.is_file())
    assert left == ["loaders"]  # the loaders' lock file alone: nothing queued, kept or told


def test_without_a_loader_a_log_of_a_file_one_process_opens_at_a_time_says_so_once(
    tmp_path: Path, spark: SparkSession
) -> None:
    url, config = where(tmp_path)
    warnings: list[str] = []
    with BackgroundLog.open(url, config, spark, progress=warnings.append) as log:
        log.write(RUN, batch(0))
        log.finish(RUN)
        assert not log.served
    said = [w for w in warnings if "loader" in w]
    assert said == [
        f"warning: no loader serves {url}: each engine's process loads its own batches and holds the file "
        "while it does, so engines at once keep theirs for `synclog flush`; `synclog spark start` (or "
        "`synclog loader start`) runs one loader for every engine"
    ]
    warnings.clear()
    with BackgroundLog.open("duckdb:///:memory:", config, spark, progress=warnings.append) as log:
        log.write(RUN, batch(0))
        assert sum(log.finish(RUN).wait().statuses.values()) == 10
    assert [w for w in warnings if "loader" in w] == []  # nobody else could open it anyway


def test_close_waits_for_the_loads_and_lets_go_of_the_target(tmp_path: Path, spark: SparkSession) -> None:
    """Once `close` returns, the loads have ended and another process can open the DuckDB file."""
    log = BackgroundLog.open(*where(tmp_path), spark)
    log.write(RUN, batch(0))
    ended = log.finish(RUN)
    log.close()
    assert ended.load is not None and ended.load.done()
    opens = (
        "import duckdb, sys; "
        "print(duckdb.connect(sys.argv[1]).execute('SELECT count(*) FROM census.sync_log').fetchone()[0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", opens, str(tmp_path / "logs.duckdb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["10"]


def test_closing_out_of_time_leaves_the_rest_queued(
    behind: tuple[BackgroundLog, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, warnings = behind
    log.wait()
    gate = threading.Event()
    original = log.log.write_all

    def held(*args: Any) -> Any:
        gate.wait()
        return original(*args)

    monkeypatch.setattr(log.log, "write_all", held)
    first = log.write(RUN, batch(0))
    time.sleep(1)  # batch 0's load is under way: the next one's tick will not hold batch 0
    second = log.write(RUN, batch(1))
    log.close(timeout=0.2)  # batch 0's load is under way, batch 1's not begun
    assert any("still running after 0 s" in w for w in warnings)
    with pytest.raises(SynclogError, match="the log closed before this load; it stays queued"):
        second.wait()
    gate.set()
    assert first.wait().records == 10  # the load under way ends
    assert in_queue(tmp_path) == [((1,), False)]  # for the next writer or `flush`


def test_a_refused_run_is_logged_nowhere_and_said_so(tmp_path: Path, spark: SparkSession) -> None:
    """Runs are ordered by their start: a run that started before the run the sync's hightouch
    snapshot holds is refused as a whole, behind the engine as in place. Its batches are refused
    (nothing reaches census, their records are kept apart), its end is refused and said so, and
    nothing of it waits for `flush`; the later run's rows, its `synclog_runs` row among them, stay
    as they were."""
    url, config = where(tmp_path)
    config = replace(config, defaults=SyncSettings(layouts=("census", "hightouch")))
    later = replace(RUN, sync_run_id=2, status=RunStatus.PARTIAL)
    earlier = replace(RUN, sync_run_id=3, started_at=RUN.started_at - timedelta(hours=1))
    warnings: list[str] = []
    with BackgroundLog.open(url, config, spark, progress=warnings.append) as log:
        for n in range(3):
            log.write(later, batch(n))
        assert log.finish(later).wait().statuses["succeeded"] == 22
        runs = "SELECT sync_id, sync_run_id, status FROM census.synclog_runs ORDER BY 2"
        assert log.log.target.client.fetch(runs) == [(1234, 2, "partial")]
        before = log.log.target.client.fetch(LOGGED.replace("log_id,", "sync_run_id, log_id,"))
        written = log.write(earlier, batch(0))
        with pytest.raises(InputError, match="before run 2"):
            written.wait()
        with pytest.raises(InputError, match="before run 2"):
            log.finish(earlier).wait()
        assert log.log.target.client.fetch(LOGGED.replace("log_id,", "sync_run_id, log_id,")) == before
        assert log.log.target.client.fetch(runs) == [(1234, 2, "partial")]
        assert log.log.target.client.fetch("SELECT sync_run_id FROM hightouch_audit.sync_runs") == [(2,)]
        assert in_queue(tmp_path) == []
    ended = [w for w in warnings if w.startswith("warning: the end of run 3 of sync 1234 refused: ")]
    assert len(ended) == 1 and "before run 2" in ended[0]
    with SyncLog.open(url, config, spark) as log:
        assert log.flush() == []


def test_a_run_refused_at_its_finish_stays_kept_for_flush(tmp_path: Path, spark: SparkSession) -> None:
    """A run whose batches were kept before a later run of its sync finished is refused at its own
    finish (the hightouch snapshot holds the later run): it stays in the run store, and `flush`
    names it, finished, with the reason (`SyncLog.flush`)."""
    url, config = where(tmp_path)
    config = replace(config, defaults=SyncSettings(layouts=("census", "hightouch")))
    earlier = replace(RUN, sync_run_id=3, started_at=RUN.started_at - timedelta(hours=1))
    with SyncLog.open(url, config, spark) as log:
        log.write(earlier, batch(0))
        log.write_run(replace(RUN, sync_run_id=2), batch(0))
        with pytest.raises(InputError, match="before run 2"):
            log.finish(earlier)
        assert log.store.has(earlier)
        [kept] = log.flush()
    assert (kept.run.sync_run_id, kept.finished) == (3, True) and "before run 2" in (kept.refused or "")
