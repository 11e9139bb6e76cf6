"""`BackgroundLog`: a log for sync engines that never waits on Spark or the warehouse.

`write` takes a batch the engine holds in memory (a list of dicts, a pandas DataFrame, Arrow),
checks its columns and their types in the engine's process, and puts it in the load queue
(`synclog.storage.queue`) as an Arrow file: it returns once the batch is durable there. `finish`
queues the run's end the same way. Who loads them:

- **a loader**, where one serves the storage and target (`synclog loader start`, or
  `synclog spark start`, which starts one with the warm server; `synclog.loading`): then the
  engine's process never opens the warehouse nor starts Spark, and `close` and the process's
  exit wait for nothing. The loader loads every engine's queued batches together, and tells each
  engine what became of its own (`WriteResult.wait`, `RunResult.wait` wait for that);
- else **the log itself**: one thread of the log loads what this process queued, in order,
  through a `SyncLog` on the log's Spark session (queued writes of a turn in one job:
  `SyncLog.write_all`), the very write a `SyncLog.write` makes. `close` waits for the loads a
  bounded time, and so does the interpreter's exit when the log was not closed. A target that
  only one process may open at a time (a DuckDB file) is then held by each engine's process in
  turn: the log warns once and names the way to run a loader.

Even opening returns at once: reading the configuration, finding the loader, importing Spark and
the warehouse's driver, starting or joining the Spark session and connecting all happen on the
log's thread, while the engine sends its first batch.

What a load finds reaches the engine without failing its sync (`synclog.loading.drain`): values
that break a rule refuse that write (its records kept in `<storage>/refused/…`; the write's
`WriteResult.wait` raises the line naming them, and the run's `RunResult.refused` lists it); a run
a layout refuses makes `RunResult.wait` raise the InputError; an outage keeps the batches in the
run store, for the loader's retries or `flush`; anything else (a bug, a bad configuration, Spark
gone) leaves the work queued and is raised by `wait`, and, from this log's own loads, by the
engine's next call to the log.

A process that ends (or is killed) before its own loads leaves them queued; a loader, the next
`BackgroundLog` opened on the same storage, or `synclog flush` loads them once it is gone.

This module imports none of Spark, Arrow or a warehouse driver itself: `import synclog` and
`BackgroundLog.open` cost the engine's process a few hundredths of a second.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from synclog.errors import InputError, SynclogError
from synclog.model import Run
from synclog.results import RunResult, WriteResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from synclog.batches import Batch
    from synclog.config import Config
    from synclog.privacy import PayloadPolicy
    from synclog.storage.outcomes import Outcomes
    from synclog.storage.queue import LoadQueue, Queued
    from synclog.storage.spool import Pending
    from synclog.writer import Progress, SyncLog

T = TypeVar("T")
CLOSE_WAIT_S = 60.0
"""How long `close`, and the interpreter's exit, wait for the log's own loads by default."""
WATCH_S = 0.1
"""How often a log served by a loader looks for the outcomes it waits for."""
NO_LOADER = (
    "warning: no loader serves {target}: each engine's process loads its own batches and holds "
    "the file while it does, so engines at once keep theirs for `synclog flush`; "
    "`synclog spark start` (or `synclog loader start`) runs one loader for every engine"
)


class BackgroundLog:
    """A log whose `write` and `finish` return once their work is durable; loads follow behind.

    >>> with BackgroundLog.open("duckdb:///logs.duckdb") as log:   # returns at once
    ...     log.write(run, batch)      # a list of dicts, a pandas DataFrame, Arrow: durable now
    ...     ended = log.finish(run)    # the run's end, durable now
    ... # ended.wait() gives the run's result once it is loaded (by the loader, or by this log)
    """

    def __init__(
        self,
        target: str | None = None,
        config: Config | None = None,
        spark: SparkSession | None = None,
        progress: Progress | None = None,
        policy: PayloadPolicy | None = None,
    ) -> None:
        self._opening = (target, config, spark, progress, policy)
        self._log: SyncLog | None = None
        self._queue: LoadQueue | None = None
        self._served = False
        self._unusable: BaseException | None = None
        self._ready = threading.Event()
        self._lock = threading.Condition()
        self._work: deque[tuple[Callable[[], Any], Future[Any], bool]] = deque()
        self._own: dict[Queued, Future[Any]] = {}
        """This log's own queued items not loaded yet, in order, with what waits for each."""
        self._loading: set[Queued] = set()
        """Those of them the load under way holds."""
        self._busy = False
        self._closed = False
        self._failures: list[BaseException] = []
        self._watcher: _Watcher | None = None
        self._thread = threading.Thread(target=self._run, name="synclog-background", daemon=True)
        self._thread.start()
        atexit.register(self._at_exit)
        self._submit(self._start)

    @classmethod
    def open(
        cls,
        target: str | None = None,
        config: Config | None = None,
        spark: SparkSession | None = None,
        progress: Progress | None = None,
        policy: PayloadPolicy | None = None,
    ) -> BackgroundLog:
        """A log of the target named in `synclog.toml`, or given as a URL (as `SyncLog.open`),
        opened behind the engine: this returns at once, and what opening finds wrong (a
        malformed URL, a bad `synclog.toml`) is raised by the first call that needs the log."""
        return cls(target, config, spark, progress, policy)

    @property
    def log(self) -> SyncLog:
        """The `SyncLog` the loads go through, once set up (reads through `log.target` belong
        after `wait`; where a loader serves the log, the loader has the warehouse: read it with
        a log of your own)."""
        self._ready.wait()
        if self._log is None:
            raise self._unusable or RuntimeError("the log was not set up")
        return self._log

    @property
    def served(self) -> bool:
        """Whether a loader loads what this log queues (see the module's doc)."""
        self._ready.wait()
        return self._served

    # -- the engine's side -----------------------------------------------------------------------

    def write(self, run: Run, records: Batch) -> WriteResult:
        """Queue `records` (`SyncLog.write`'s batch types) of `run`; durable when this returns.

        Raises InputError when a column is missing or of the wrong type, and ConfigError when
        the sync's layouts or payload policy cannot be written; values are checked by the load
        (see `WriteResult.wait`). Once the batch is queued, raises what an earlier load of this
        log raised that no call raised yet. A Spark DataFrame, which this process cannot queue
        without a Spark job, is written in place, after what was queued before it (where a
        loader serves the log, it is collected to this process and queued).
        """
        started = time.perf_counter()
        log = self.log
        from pyspark.sql.pandas.types import from_arrow_schema

        from synclog.batches import as_arrow, is_frame
        from synclog.plugins.manager import payload_hooks
        from synclog.records import check_columns

        if is_frame(records, "pyspark") and not self._served:
            self._raise_failure()
            return self._call(lambda: log.write(run, records))
        table = as_arrow(records.toArrow() if is_frame(records, "pyspark") else records)  # type: ignore[union-attr]
        check_columns(from_arrow_schema(table.schema))
        log.layouts(run.sync_id)
        log.policy(run.sync_id).prepare(run.sync_id, payload_hooks())
        future = self._queued(lambda queue, loader: queue.put(run, table, loader), WriteResult)
        self._raise_failure()  # the batch is safe: now what went wrong before may be told
        return WriteResult({}, seconds=time.perf_counter() - started, queued=True, load=future)

    def finish(self, run: Run) -> RunResult:
        """Queue the end of `run` (as `SyncLog.finish` takes it); durable when this returns.
        `RunResult.wait` gives the run's result once its loads ended."""
        log = self.log
        policy = log.policy(run.sync_id)
        ended = replace(run, error=policy.redact_message(run.error)) if run.error else run
        future = self._queued(lambda queue, loader: queue.put_end(ended, loader), RunResult)
        self._raise_failure()  # the run's end is safe: now what went wrong before may be told
        return RunResult(queued=True, load=future)

    def write_run(self, run: Run, records: Batch) -> WriteResult:
        """`write` then `finish`, both queued; the result's `wait` gives both loads' result."""
        written = self.write(run, records)
        ended = self.finish(run)
        both: Future[WriteResult] = Future()

        def done(_: Future[RunResult]) -> None:
            try:
                result, loaded = ended.wait(), written.wait()
            except BaseException as exc:  # handed to the caller of `wait`
                both.set_exception(exc)
                return
            merged = {**loaded.loaded, **result.loaded}
            both.set_result(replace(loaded, statuses=result.statuses, loaded=merged, pending=result.pending))

        if ended.load is not None:
            ended.load.add_done_callback(done)
        return replace(written, load=both)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for every load queued so far; whether they ended before `timeout` seconds.
        Raises what a load of this log raised that no call raised yet (a refused batch: see
        `WriteResult.wait`)."""
        if self.served:
            assert self._watcher is not None
            return self._watcher.drained(timeout)
        done = self._drained(timeout)
        self._raise_failure()
        return done

    def flush(self) -> list[Pending]:
        """What `synclog flush` does, after this log's own loads: load what waits in the queue
        for a loader (where none runs) or was left by processes that are gone, and what an outage
        kept; what is still kept."""
        from synclog.loading.service import take_over

        def flush() -> list[Pending]:
            if not self._served:
                take_over(self.log, self.log.progress)
            return self.log.flush()

        return self._call(flush)

    def close(self, timeout: float | None = CLOSE_WAIT_S) -> None:
        """Wait at most `timeout` seconds (None: as long as it takes) for this log's own loads,
        then start no more and close the log: what is left stays queued for the next writer or
        `flush`. A log a loader serves has nothing to wait for."""
        served = self._ready.is_set() and self._served
        done = served or self._drained(timeout)
        self._stop()
        atexit.unregister(self._at_exit)
        if not served and done:
            self._thread.join()  # it closes the SyncLog (the target's connection) as it ends
        elif not served:
            self._warn(
                f"warning: loads still running after {timeout:.0f} s; what is left stays queued "
                f"for the next writer or `synclog flush`"
            )
        self._raise_failure()

    def __enter__(self) -> BackgroundLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.close()
            return
        with contextlib.suppress(Exception):  # the error under way is the one to see
            self.close()

    # -- the loads' side -------------------------------------------------------------------------

    def _start(self) -> None:
        """Open the log (`SyncLog.open`'s first half), find the loader; without one, start Spark,
        connect, and load what processes that are gone left queued."""
        from synclog.loading.lease import LeaseHeld, lease_for
        from synclog.loading.service import take_over
        from synclog.storage.outcomes import Outcomes
        from synclog.storage.queue import LoadQueue, target_key
        from synclog.writer import SyncLog

        target, config, spark, progress, policy = self._opening
        try:
            log = SyncLog.configured(target, config, spark, progress, policy)
            key = target_key(log.url)
            self._queue = LoadQueue(log.config.storage, key)
            self._served = lease_for(log.config.storage, log.url).holder() is not None
            if self._served:
                self._watcher = _Watcher(Outcomes(log.config.storage, key))
            self._log = log
        except BaseException as exc:
            self._unusable = exc
            raise
        finally:
            self._ready.set()
        if self._served:
            return
        if log.connector.capabilities.exclusive:
            self._warn(NO_LOADER.format(target=log.url))
        log.begin(writes=True)
        with contextlib.suppress(LeaseHeld):  # a loader started meanwhile: it loads them
            take_over(log, log.progress)

    def _queued(self, put: Callable[[LoadQueue, str], Queued], kind: type[Any]) -> Future[Any]:
        """Put an item in the queue for whoever loads it; what waits for its outcome."""
        from synclog.storage.owners import owner
        from synclog.storage.queue import LOADER

        queue = self._queue
        assert queue is not None
        if self._served:
            assert self._watcher is not None
            return self._watcher.watch(put(queue, LOADER), kind)
        future: Future[Any] = Future()
        with self._lock:  # queued and listed in one step: the load takes this log's items in order
            item = put(queue, owner())
            self._own[item] = future
        self._submit(self._load_own)
        return future

    def _load_own(self) -> None:
        """Load a tick of this log's own queued items (`synclog.loading.drain`); their futures get
        their outcomes. What a load raises fails the tick's futures and stays queued: the next
        tick tries it again first."""
        from synclog.loading.drain import load_tick
        from synclog.loading.tick import choose
        from synclog.storage.refused import Refusals

        queue, log = self._queue, self.log
        assert queue is not None
        with self._lock:
            items = list(self._own)
        tick = choose(queue, items, lambda _: True)
        if not tick:
            return
        taken = [w.item for w in tick.writes] + [e.item for e in tick.ends]
        with self._lock:
            self._loading = set(taken)
        try:
            outcomes = load_tick(log, queue, Refusals(log.config.storage), tick)
        except BaseException as exc:
            with self._lock:
                self._loading = set()
                failed = [self._own[item] for item in taken if not self._own[item].done()]
            for future in failed:
                future.set_exception(exc)
            raise
        with self._lock:
            self._loading = set()
            for outcome in outcomes:
                future = self._own.pop(outcome.item)
                if future.done():  # an earlier attempt failed it
                    continue
                if isinstance(outcome.result, InputError):
                    future.set_exception(outcome.result)
                else:
                    future.set_result(outcome.result)

    # -- the thread ------------------------------------------------------------------------------

    def _submit(self, work: Callable[[], T], *, told: bool = False) -> Future[T]:
        """Queue `work` for the log's thread; what it raises is a failure the engine's next call
        raises, unless the caller is `told` (it waits for the result itself)."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise SynclogError("the log is closed")
            self._work.append((work, future, told))
            self._lock.notify_all()
        return future

    def _call(self, work: Callable[[], T]) -> T:
        """Run `work` on the log's thread, after what was queued before it; its result."""
        return self._submit(work, told=True).result()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._work or self._closed)
                if self._closed:
                    break
                work, future, told = self._work.popleft()
                self._busy = True
            try:
                if future.set_running_or_notify_cancel():
                    future.set_result(work())
            except BaseException as exc:  # handed to the engine: see the module's doc
                future.set_exception(exc)
                if not (told or isinstance(exc, InputError)):
                    with self._lock:
                        self._failures.append(exc)
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()
        if self._log is not None:
            self._log.close()

    def _drained(self, timeout: float | None) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: not (self._work or self._busy), timeout)

    def _stop(self) -> None:
        """Start no more loads; cancel those not started; the thread closes the log and ends."""
        with self._lock:
            self._closed = True
            self._work.clear()
            left = [f for item, f in self._own.items() if item not in self._loading and not f.done()]
            self._lock.notify_all()
        for future in left:  # queued under storage still: the next writer or `flush` loads it
            future.set_exception(SynclogError("the log closed before this load; it stays queued"))

    def _raise_failure(self) -> None:
        """Raise the first failure of a load that no call raised yet."""
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            raise failure

    def _warn(self, message: str) -> None:
        """A warning line: to the `progress` callback, else to Python's logging (standard error)."""
        progress = self._opening[3]
        if progress is not None:
            progress(message)
        else:
            logging.getLogger("synclog").warning(message)

    def _at_exit(self) -> None:
        """The interpreter ends with the log open: wait a bounded time for its own loads."""
        served = self._ready.is_set() and self._served
        drained = served or self._drained(CLOSE_WAIT_S)
        self._stop()
        if served:
            return
        if drained:
            self._thread.join(CLOSE_WAIT_S)  # the log closed before the interpreter goes
        else:
            self._warn("warning: loads still running at exit; the next writer or `synclog flush` loads them")


class _Watcher:
    """Gives the futures of a served log's items the outcomes the loader records for them."""

    def __init__(self, outcomes: Outcomes) -> None:
        self.outcomes = outcomes
        self._waiting: dict[Queued, tuple[Future[Any], type[Any]]] = {}
        self._lock = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="synclog-outcomes", daemon=True)
        self._thread.start()

    def watch(self, item: Queued, kind: type[Any]) -> Future[Any]:
        """A future that gets `item`'s outcome (`kind`: WriteResult or RunResult)."""
        future: Future[Any] = Future()
        with self._lock:
            self._waiting[item] = (future, kind)
            self._lock.notify_all()
        return future

    def drained(self, timeout: float | None) -> bool:
        """Wait until every watched item has its outcome; whether that happened in `timeout` s."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._waiting, timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._waiting)
                waiting = list(self._waiting.items())
            for item, (future, kind) in waiting:
                outcome = self.outcomes.take(item)
                if outcome is None:
                    continue
                if "result" in outcome:
                    future.set_result(kind.from_dict(outcome["result"]))
                elif "refused" in outcome:
                    future.set_exception(InputError(outcome["refused"]))
                else:
                    future.set_exception(SynclogError(f"the loader failed: {outcome['failed']}"))
                with self._lock:
                    del self._waiting[item]
                    self._lock.notify_all()
            time.sleep(WATCH_S)
