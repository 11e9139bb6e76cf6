"""The loader: one owner per storage and target, ticks that keep each run's order, and a fleet of
engine processes whose batches it loads together, queryable without `flush`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from synclog import BackgroundLog, InputError, RunStatus
from synclog.batches import Write, as_arrow
from synclog.cli.main import main
from synclog.config import Config, SyncSettings
from synclog.loading.lease import Lease, LeaseHeld, lease_for
from synclog.loading.service import Loader
from synclog.loading.tick import choose
from synclog.storage.location import Location
from synclog.storage.queue import LOADER, LoadQueue, target_key
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.factories import RECORD_COLUMNS, make_records, make_run, record_rows
from synclog_testing.loader_stops import KILL_POINTS, StopPoint, stopped_at

SYNCS = (11, 12, 13)
"""Three syncs whose runs share a run number (5678): the loader keeps them apart by sync."""
COUNTED = {"succeeded": 22, "rejected": 5, "invalid_null": 1, "invalid_duplicate": 2}
"""How `record_rows(run, count=30, batches=3)` counts (see `test_background`)."""
LOGGED = (
    "SELECT sync_id, sync_run_id, batch_number, record_identifier, status, status_message, "
    "invalid_reason, error_code, record_payload, destination_id FROM census.sync_log ORDER BY ALL"
)


def where(folder: Path) -> tuple[str, Config]:
    return f"duckdb:///{folder / 'logs.duckdb'}", Config(storage=Location.parse(str(folder / "storage")))


def batches(run: Any) -> list[list[dict[str, Any]]]:
    rows = record_rows(run, count=30, batches=3)
    return [[dict(zip(RECORD_COLUMNS, r, strict=True)) for r in rows if r[5] == n] for n in range(3)]


# -- what a tick takes ----------------------------------------------------------------------------


def _queue(tmp_path: Path) -> tuple[LoadQueue, Any]:
    return LoadQueue(Location.parse(str(tmp_path)), "t"), make_run()


def _records(*numbers: int) -> pa.Table:
    return pa.table({"batch_number": pa.array(numbers, pa.int64()), "status": ["succeeded"] * len(numbers)})


def test_a_tick_keeps_each_run_in_order_and_leaves_a_replay_for_the_next(tmp_path: Path) -> None:
    queue, run = _queue(tmp_path)
    other = replace(run, sync_id=99)  # another sync, the same run number
    first = queue.put(run, _records(0, 0), LOADER)
    replay = queue.put(run, _records(0), LOADER)  # batch 0 again: must replace the first copy
    end = queue.put_end(run, LOADER)
    theirs = [queue.put(other, _records(n), LOADER) for n in range(3)] + [queue.put_end(other, LOADER)]
    tick = choose(queue, queue.items(), lambda _: True)
    assert [w.item for w in tick.writes if w.run == run] == [first]
    assert [w.item for w in tick.writes if w.run == other] == theirs[:3]  # in the order queued
    assert [e.item for e in tick.ends] == [theirs[3]]  # its writes are all in the tick
    for item in [w.item for w in tick.writes] + [e.item for e in tick.ends]:
        queue.remove(item)
    after = choose(queue, queue.items(), lambda _: True)
    assert [w.item for w in after.writes] == [replay] and [e.item for e in after.ends] == [end]


def test_a_tick_keeps_a_syncs_writes_and_ends_in_the_order_they_were_queued(tmp_path: Path) -> None:
    """A load makes its writes before its ends: an end queued before another run's write of the
    same sync waits for the next tick, a write queued before it does not, and ends are in order."""
    queue, run = _queue(tmp_path)
    older, newer, elsewhere = (
        replace(run, sync_run_id=1),
        replace(run, sync_run_id=2),
        replace(run, sync_id=99),
    )
    before = queue.put(older, _records(0), LOADER)
    newer_end = queue.put_end(newer, LOADER)
    after = queue.put(older, _records(1), LOADER)  # queued after the newer run ended
    older_end = queue.put_end(older, LOADER)
    theirs = queue.put(elsewhere, _records(0), LOADER)  # another sync: not held back
    tick = choose(queue, queue.items(), lambda _: True)
    assert {w.item for w in tick.writes} == {before, theirs}
    assert [e.item for e in tick.ends] == [newer_end]
    for item in [before, theirs, newer_end]:
        queue.remove(item)
    tick = choose(queue, queue.items(), lambda _: True)
    assert [w.item for w in tick.writes] == [after] and [e.item for e in tick.ends] == [older_end]


def test_a_tick_stops_a_run_at_an_item_not_its_own_and_takes_turns_within_its_budget(tmp_path: Path) -> None:
    queue, run = _queue(tmp_path)
    other = replace(run, sync_id=99)
    mine = queue.put(run, _records(0), LOADER)
    someone_elses = queue.put(run, _records(1), "host_1_2")
    queue.put(run, _records(2), LOADER)  # after an item not its own: not before it is loaded
    big = [queue.put(other, _records(*[n] * 1000), LOADER) for n in range(3)]
    tick = choose(queue, queue.items(), lambda item: item.loader == LOADER)
    assert {w.item for w in tick.writes} == {mine, *big}
    budget = queue.read(big[0])[1].nbytes + queue.read(mine)[1].nbytes + 1
    small = choose(queue, queue.items(), lambda item: item != someone_elses, budget)
    assert {w.item for w in small.writes} == {mine, big[0]}  # each run's first item, then the budget
    assert not choose(queue, queue.items(), lambda _: False)


def test_one_job_of_several_runs_logs_each_record_as_its_own(tmp_path: Path, spark: SparkSession) -> None:
    """A tick's writes of several runs are one job (`write_all`, one canonical frame): each record
    is logged under its own sync and run (runs 1 and 2 of sync 11, run 1 of sync 12: 10 each)."""
    target, config = where(tmp_path)
    runs = [make_run(sync_id=sync, sync_run_id=number) for sync, number in ((11, 1), (11, 2), (12, 1))]
    with SyncLog.open(target, config, spark) as log:
        results = log.write_all([Write(run, batches(run)[0]) for run in runs])
        assert [result.records for result in results if not isinstance(result, InputError)] == [10, 10, 10]
        logged = log.target.query(
            "SELECT sync_id, sync_run_id, COUNT(*) AS n FROM census.sync_log GROUP BY ALL ORDER BY ALL"
        )
    assert [tuple(row.values()) for row in logged.to_pylist()] == [(11, 1, 10), (11, 2, 10), (12, 1, 10)]


def test_a_replay_of_any_batch_the_tick_holds_waits_for_the_next_tick(tmp_path: Path) -> None:
    """Batch 0, batch 1, then batch 0 again: the replay waits for the next tick, though the write
    just before it holds another batch (the tick holds batch 0 from its first write)."""
    queue, run = _queue(tmp_path)
    first, second, replay = (queue.put(run, _records(n), LOADER) for n in (0, 1, 0))
    tick = choose(queue, queue.items(), lambda _: True)
    assert [w.item for w in tick.writes] == [first, second]
    for item in (first, second):
        queue.remove(item)
    assert [w.item for w in choose(queue, queue.items(), lambda _: True).writes] == [replay]


# -- one owner ------------------------------------------------------------------------------------


HOLDER = """
import sys, time
from synclog.loading.lease import Lease
from synclog.storage.location import Location
lease = Lease(Location.parse(sys.argv[1]), "t", "duckdb:///x")
lease.acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_one_loader_per_storage_and_target_and_a_killed_one_frees_it(tmp_path: Path) -> None:
    storage = Location.parse(str(tmp_path))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        second = Lease(storage, "t", "duckdb:///x")
        held = second.holder()
        assert held is not None and held.pid == holder.pid
        with pytest.raises(LeaseHeld, match=f"a loader \\(pid {holder.pid} on .*already loads duckdb:///x"):
            second.acquire()
        assert Lease(storage, "another target", "duckdb:///y").holder() is None  # one per target
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert second.holder() is None  # killed: its lease file names a process that is gone
    second.acquire()  # and the kernel let go of its lock
    second.release()


# -- a fleet --------------------------------------------------------------------------------------


ENGINE = """
import json, sys, time
from dataclasses import replace
from synclog import BackgroundLog
from synclog.config import Config
from synclog.storage.location import Location
from synclog_testing.factories import RECORD_COLUMNS, make_run, record_rows

target, storage, sync = sys.argv[1], sys.argv[2], int(sys.argv[3])
run = make_run(sync_id=sync)
rows = [dict(zip(RECORD_COLUMNS, r)) for r in record_rows(run, count=30, batches=3)]
log = BackgroundLog.open(target, Config(storage=Location.parse(storage)))
for number in range(3):
    log.write(run, [r for r in rows if r["batch_number"] == number])
log.finish(run)
log.close()
from pyspark import SparkContext
jvm, warehouse = SparkContext._gateway is not None, log.log.connector.connected
print(json.dumps({"served": log.served, "jvm": jvm, "warehouse": warehouse}))
"""


def engines(tmp_path: Path, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One engine process per sync, all started at once; what each says as it exits."""
    target, config = where(tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ENGINE, target, config.storage.root, str(sync)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for sync in SYNCS
    ]
    said = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        said.append(json.loads(out.strip().splitlines()[-1]))
    return said


@pytest.fixture(scope="module")
def in_place(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> list[tuple[Any, ...]]:
    """The log of the three syncs' runs written in place, run after run, batch after batch."""
    url, config = where(tmp_path_factory.mktemp("in-place"))
    with SyncLog.open(url, config, spark) as log:
        for sync in SYNCS:
            run = make_run(sync_id=sync)
            for rows in batches(run):
                log.write(run, make_records(spark, [tuple(r[c] for c in RECORD_COLUMNS) for r in rows]))
            assert log.finish(run).statuses == COUNTED
        return log.target.client.fetch(LOGGED)


def test_engines_at_once_queue_and_exit_and_one_tick_loads_them_all(
    tmp_path: Path, spark: SparkSession, in_place: list[tuple[Any, ...]]
) -> None:
    """Engines that a loader serves never start Spark nor open the warehouse: they queue their
    batches and exit, whether the loader loads at that moment or not (here it holds its lease
    and loads only once they are gone). It then loads the three runs' nine batches in one Spark
    job, one swap per table, and the log equals the one written in place."""
    url, config = where(tmp_path)
    log = SyncLog.configured(url, config, spark)
    loader = Loader(log, say=lambda _: None)
    loader.lease.acquire()
    try:
        said = engines(tmp_path)
        assert said == [{"served": True, "jvm": False, "warehouse": False}] * len(SYNCS)
        assert len(loader.queue.items()) == 12  # nothing loaded while they ran
        log.begin(writes=True)
        assert loader.tick() and not loader.tick()
        assert (loader.stats.ticks, loader.stats.writes, loader.stats.ends, log.jobs) == (1, 9, 3, 1)
        tables = [
            "census.sync_log",
            "census.source_objects",
            "census.destinations",
            "census.destination_objects",
        ]
        assert loader.stats.loads == dict.fromkeys([*tables, "census.synclog_runs"], 1)  # one load each
        assert log.target.client.fetch(LOGGED) == in_place
    finally:
        loader.lease.release()
        log.close()


def test_a_served_log_waits_on_the_loader_and_hears_of_a_refused_batch(
    tmp_path: Path, spark: SparkSession
) -> None:
    url, config = where(tmp_path)
    stop = threading.Event()
    loader = Loader(SyncLog.configured(url, config, spark), say=lambda _: None)
    serving = threading.Thread(target=loader.serve, args=(stop,))
    serving.start()
    try:
        while loader.lease.holder() is None:
            stop.wait(0.1)
        run = make_run()
        good, bad, last = batches(run)
        bad = [dict(r, status="teleported") if i == 2 else r for i, r in enumerate(bad)]
        with BackgroundLog.open(url, config) as engine:
            assert engine.served
            written = [engine.write(run, rows) for rows in (good, bad, last)]
            ended = engine.finish(replace(run, status=RunStatus.SUCCEEDED)).wait(timeout=120)
        assert written[0].wait().records == 10 and written[2].wait().records == 10
        with pytest.raises(
            InputError, match=r"batch 1 of run 5678 refused: .*'status' has unknown value"
        ) as refused:
            written[1].wait()
        assert ended.refused == (str(refused.value),)
        assert sum(ended.statuses.values()) == 20
    finally:
        stop.set()
        serving.join()
    with duckdb.connect(str(tmp_path / "logs.duckdb"), read_only=True) as db:
        assert db.execute(
            "SELECT batch_number, count(*) FROM census.sync_log GROUP BY 1 ORDER BY 1"
        ).fetchall() == [
            (0, 10),
            (2, 10),
        ]


class _Stopped(Exception):
    """The loader's process ends here: nothing after this point of the tick runs."""


HIGHTOUCH = ("sync_changelog", "sync_snapshot", "sync_runs")
STARTED = datetime(2026, 11, 1, 6, tzinfo=UTC)
STOPS: dict[str, StopPoint] = {
    "once the run store forgot the run": KILL_POINTS[
        "a run is loaded, its end out of the queue, the run store forgot it"
    ],
    "once the run's end left the queue": KILL_POINTS[
        "a run is loaded and its end out of the queue, the run store still holds it"
    ],
}
"""Where a loader is stopped: either side of the step where a run's end leaves the queue."""


def _loaded_by_loaders(folder: Path, spark: SparkSession, stop: StopPoint | None) -> Any:
    """A run's three batches and its end queued for the loader; a loader loads them (stopped at
    `stop`, when given), then a new loader; the run is then written again
    (its first batch only: an engine's replay of the run) and ended again, and loaded. The
    hightouch tables after the first end and after the second, and what is left in the queue and
    the run store."""
    url, config = where(folder)
    config = replace(config, defaults=SyncSettings(layouts=("census", "hightouch")))
    run = make_run(started_at=STARTED)
    rows = [dict(zip(RECORD_COLUMNS, r, strict=True)) for r in record_rows(run, 30, 3, started_at=STARTED)]
    queue = LoadQueue(config.storage, target_key(TargetURL.parse(url)))
    for number in range(3):
        queue.put(run, as_arrow([r for r in rows if r["batch_number"] == number]), LOADER)
    queue.put_end(replace(run, status=RunStatus.SUCCEEDED), LOADER)
    if stop is not None:
        log = SyncLog.configured(url, config, spark)
        first = Loader(log, say=lambda _: None)
        first.lease.acquire()
        log.begin(writes=True)
        with pytest.raises(_Stopped), stopped_at(stop, _Stopped()):
            first.drain()
        first.lease.release()
        log.close()
    log = SyncLog.configured(url, config, spark)
    loader = Loader(log, say=lambda _: None)
    loader.lease.acquire()

    def tables() -> dict[str, list[tuple[Any, ...]]]:
        return {
            t: log.target.client.fetch(f"SELECT * FROM hightouch_audit.{t} ORDER BY ALL") for t in HIGHTOUCH
        }

    try:
        log.begin(writes=True)
        loader.drain()
        first = tables()
        queue.put(run, as_arrow([r for r in rows if r["batch_number"] == 0]), LOADER)
        queue.put_end(replace(run, status=RunStatus.FAILED), LOADER)
        loader.drain()
        return first, tables(), queue.items(), log.store.known(run)
    finally:
        loader.lease.release()
        log.close()


@pytest.fixture(scope="module")
def loaded_whole(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Any:
    """`_loaded_by_loaders` with no loader stopped."""
    return _loaded_by_loaders(tmp_path_factory.mktemp("whole"), spark, None)


@pytest.mark.parametrize("stop", sorted(STOPS))
def test_a_loader_stopped_as_it_ends_a_run_leaves_the_log_as_if_it_was_not(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch, loaded_whole: Any, stop: str
) -> None:
    """A loader stopped as it ends a run, at either side of the step where the run's end leaves the
    queue, then a new loader, then the run written again (one batch) and ended again: the log equals
    the one loaders that were not stopped write. An end left queued after the run store forgot
    its run would be finished again without its records (the hightouch changelog and snapshot
    rows taken away, the counts zeroed); a run store still holding a loaded run would add its old
    batches to the run written again. The whole log holds the run's 30 records after its first
    end, one changelog row each, and the run as written again after the second: a run finished
    again replaces its changelog rows, here with one per record of its one batch (10)."""
    stopped = _loaded_by_loaders(tmp_path, spark, STOPS[stop])
    first, again, left, kept = loaded_whole
    assert [len(tables["sync_changelog"]) for tables in (first, again)] == [30, 10]
    assert [len(tables["sync_runs"]) for tables in (first, again)] == [1, 1]
    assert (left, kept) == ([], False)  # nothing queued, nothing kept
    assert stopped[0] == first  # the first end, as a loader not stopped loads it
    assert stopped == loaded_whole


@pytest.fixture
def loader_process(tmp_path: Path) -> Iterator[list[str]]:
    """`synclog loader start` in `tmp_path` (its synclog.toml names the DuckDB file and storage)."""
    url, config = where(tmp_path)
    (tmp_path / "synclog.toml").write_text(
        f'storage = "{config.storage.root}"\n[targets.default]\nurl = "{url}"\n'
    )
    args = ["--config", str(tmp_path / "synclog.toml"), "loader"]
    yield args
    main([*args, "stop"])


def test_a_fleet_of_engine_processes_is_queryable_without_flush(
    tmp_path: Path,
    loader_process: list[str],
    capsys: pytest.CaptureFixture[str],
    in_place: list[tuple[Any, ...]],
) -> None:
    """`synclog loader start`, then engine processes at once into one DuckDB file: every run is
    in the log once the queue is empty, with no `flush`, as written in place."""
    assert main([*loader_process, "start"]) == 0
    assert capsys.readouterr().out.startswith("started loader for duckdb:///")
    assert main([*loader_process, "start"]) == 0
    assert capsys.readouterr().out.startswith("already running: loader for duckdb:///")
    said = engines(tmp_path, {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"})
    assert said == [{"served": True, "jvm": False, "warehouse": False}] * len(SYNCS)
    url, config = where(tmp_path)
    queue = LoadQueue(config.storage, lease_for(config.storage, TargetURL.parse(url)).target)
    for _ in range(1500):  # the loader's ticks: 5 minutes at the most
        if not queue.items():
            break
        time.sleep(0.2)
    assert main([*loader_process, "status"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("0 item(s) queued, 0 run(s) kept")
    assert main([*loader_process, "stop"]) == 0
    assert capsys.readouterr().out.startswith("stopped loader for duckdb:///")
    with duckdb.connect(str(tmp_path / "logs.duckdb"), read_only=True) as db:
        assert db.execute(LOGGED).fetchall() == in_place
