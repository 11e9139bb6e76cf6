"""A synclog writer in a process of its own, for the fault-injection driver (`harness.faults`).

It starts one Spark session (its own JVM), with SYNCLOG_FAULT_WARM_UP set warms it up with a
write into a throwaway DuckDB file, says {"event": "ready"}, and then runs requests, one JSON
object per line on standard input, answering with JSON lines on standard output:

    {"op": "write", "config": PATH, "target": URL, "run": {...}, "count": 40, "batches": 2,
     "kill_at": ["swap", 2], "background": false}  -> {"event": "started"} ... {"event": "done", ...}
    {"op": "flush", "config": PATH, "target": URL}
    {"op": "load", "config": PATH, "target": URL, "items": 3, "kill_at": ...}

A write logs the run's batches one `write` at a time, then `finish`es it, as a sync engine
does; with `background`, through a `BackgroundLog` (`synclog.background`): each batch a list of
dicts, queued, and the log closed once its loads end. A flush is what `synclog flush` does: the
queue, holding the loader's lease (`lease_held` where another holds it: then nothing more),
then the runs an outage kept. A load is a loader (`synclog.loading`): it holds the lease, says
{"event": "serving"}, and loads the queue until it has loaded `items` items, which engine
processes of the driver's queue meanwhile (`fault_engine.py`). With `kill_at` = [point, n], the
n-th time the write reaches `point` the worker says {"event": "at", "point": ...} and waits
(a load behind the engine waits on its own thread): the driver then kills its whole process group
with SIGKILL (the Python driver, the JVM and its Python workers). The points are places in
synclog's write path, found by wrapping its methods here (nothing in synclog knows about them):

    queued      a batch (or the run's end) is durable, queued for a load behind the engine (or
                for the loader)
    validation  the executors validated and stored a batch; the run store has not committed it
    staging     a staging relation exists, empty (SQL targets); a lake load begins
    load        the stage is filled (staged files still under storage); the lake's files are written
    swap        inside the swap's transaction, every statement run, not committed
    finish      everything is loaded; the run store has not forgotten the run
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

POINTS = ("queued", "validation", "staging", "load", "swap", "finish")
PLUGIN_TARGETS = (
    ("synclog_postgres.target", "PostgresTarget", "load_staged"),
    ("synclog_snowflake.target", "SnowflakeTarget", "load_staged"),
    ("synclog_redshift.target", "RedshiftTarget", "load_staged"),
    ("synclog_bigquery.target", "BigQueryTarget", "load_staged"),
    ("synclog_databricks.warehouse", "WarehouseTarget", "load_staged"),
    ("synclog_databricks.cluster", "SparkTarget", "load_frame"),
)
"""The plugins' target classes whose stage is created and filled at the `staging` and `load`
points, and the method that fills it."""
_reached: Counter[str] = Counter()
_kill_at: tuple[str, int] | None = None


def say(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def reach(point: str) -> None:
    """Count `point`; at the chosen occurrence, say so and wait for the SIGKILL."""
    _reached[point] += 1
    if _kill_at is not None and _kill_at == (point, _reached[point]):
        say(event="at", point=point, n=_reached[point])
        while True:
            time.sleep(60)


def _wrap(owner: type, name: str, point: str, *, after: bool) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not after:
            reach(point)
        result = original(*args, **kwargs)
        if after:
            reach(point)
        return result

    setattr(owner, name, wrapped)


def install_points() -> None:
    """Wrap synclog's write path so that `reach` runs at each named point."""
    from contextlib import suppress

    from synclog.storage.queue import LoadQueue
    from synclog.storage.runstore import RunStore
    from synclog.targets.duckdb import DuckDBTarget
    from synclog.targets.lake import LakeTarget
    from synclog.targets.sql import SqlTarget

    _wrap(LoadQueue, "put", "queued", after=True)
    _wrap(LoadQueue, "put_end", "queued", after=True)
    _wrap(RunStore, "_commit", "validation", after=False)
    _wrap(RunStore, "drop", "finish", after=False)
    _wrap(DuckDBTarget, "create_stage", "staging", after=True)
    _wrap(DuckDBTarget, "load_files", "load", after=True)
    _wrap(LakeTarget, "replace_rows", "staging", after=False)
    _wrap(LakeTarget, "_remove_stale", "load", after=False)
    for module, name, load in PLUGIN_TARGETS:
        with suppress(ImportError):  # a plugin's own load steps
            target = getattr(importlib.import_module(module), name)
            _wrap(target, "create_stage", "staging", after=True)
            _wrap(target, load, "load", after=True)

    def run_swap(self: SqlTarget, statements: Any) -> None:
        with self.client.transaction():
            for sql, params in statements:
                self.client.execute(sql, params)
            reach("swap")

    SqlTarget.run_swap = run_swap  # type: ignore[method-assign]


def write(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    from synclog.background import BackgroundLog
    from synclog.config import Config
    from synclog.model import Run
    from synclog.writer import SyncLog
    from synclog_testing.factories import RECORD_COLUMNS, make_records, record_rows

    run = Run.from_dict(request["run"])
    rows = record_rows(run, count=request["count"], batches=request["batches"])
    config = Config.load(Path(request["config"]))
    if request.get("background"):
        with BackgroundLog.open(request["target"], config, spark) as behind:
            for batch in range(request["batches"]):
                behind.write(run, [dict(zip(RECORD_COLUMNS, r, strict=True)) for r in rows if r[5] == batch])
            ended = behind.finish(run)
        return {"pending": ended.wait().pending}
    pending = False
    with SyncLog.open(request["target"], config, spark) as log:
        for batch in range(request["batches"]):
            pending |= log.write(run, make_records(spark, [r for r in rows if r[5] == batch])).pending
        log.finish(run)
        pending |= log.spool.of(run) is not None
    return {"pending": pending}


def flush(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    from synclog.config import Config
    from synclog.loading.lease import LeaseHeld
    from synclog.loading.service import flush as flush_all
    from synclog.writer import SyncLog

    with SyncLog.configured(request["target"], Config.load(Path(request["config"])), spark) as log:
        try:
            _, still = flush_all(log, lambda _: None)
        except LeaseHeld:
            return {"still_pending": 0, "lease_held": True}
    return {"still_pending": len(still)}


def load(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    from synclog.config import Config
    from synclog.loading.service import Loader
    from synclog.writer import SyncLog

    log = SyncLog.configured(request["target"], Config.load(Path(request["config"])), spark)
    loader = Loader(log, say=lambda _: None)
    loader.lease.acquire()
    try:
        log.begin(writes=True)
        say(event="serving")
        while loader.stats.writes + loader.stats.ends < request["items"]:
            if not loader.tick():
                time.sleep(0.05)
        return {"pending": bool(log.spool.every())}
    finally:
        loader.lease.release()
        log.close()


def cleanup(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    from synclog.config import Config
    from synclog.writer import SyncLog

    with SyncLog.open(request["target"], Config.load(Path(request["config"])), spark) as log:
        return {"deleted": log.cleanup().total}


OPS = {"write": write, "flush": flush, "load": load, "cleanup": cleanup}
WARM_UP_ENV = "SYNCLOG_FAULT_WARM_UP"


def warm_up(spark: Any) -> None:
    """One write into a throwaway DuckDB file, so that the faulted write is not the JVM's first
    (the first write of a Spark session takes several times as long as the next ones)."""
    from datetime import UTC, datetime

    from synclog_testing.factories import make_run

    with tempfile.TemporaryDirectory(prefix="synclog-warm-up-") as folder:
        config = Path(folder) / "synclog.toml"
        config.write_text(
            f'storage = "{folder}/storage"\n\n[defaults]\nlayouts = ["census"]\n\n'
            f'[targets.default]\nurl = "duckdb:///{folder}/logs.duckdb"\n'
        )
        run = make_run(sync_id=1, sync_run_id=1, started_at=datetime.now(UTC).replace(microsecond=0))
        write(spark, {"target": None, "config": str(config), "run": run.to_dict(), "count": 10, "batches": 2})


def main() -> None:
    global _kill_at
    from synclog.spark import spark_session

    os.environ.setdefault("SYNCLOG_SHUFFLE_PARTITIONS", "2")
    spark = spark_session("synclog-fault-worker")
    if os.environ.get(WARM_UP_ENV):
        warm_up(spark)
    install_points()
    say(event="ready", pid=os.getpid())
    for line in sys.stdin:
        request = json.loads(line)
        _reached.clear()
        _kill_at = tuple(request["kill_at"]) if request.get("kill_at") else None  # type: ignore[assignment]
        say(event="started")
        started = time.perf_counter()
        try:
            result = OPS[request["op"]](spark, request)
        except Exception as exc:
            say(
                event="error",
                error=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}",
                traceback=traceback.format_exc()[-2000:],
                reached=dict(_reached),
            )
            continue
        say(event="done", seconds=time.perf_counter() - started, reached=dict(_reached), **result)


if __name__ == "__main__":
    main()
