"""`BackgroundLog`: a log for sync engines that never waits on Spark or the warehouse.

`write` takes a batch the engine holds in memory (a list of dicts, a pandas DataFrame, Arrow),
checks its columns and their types in the engine's process, and queues it in the run store as
an Arrow file (`RunStore.queue`): it returns once the batch is durable there. One thread of the
log loads what was queued, in order, through a `SyncLog` on the log's Spark session: the very
write a `SyncLog.write` makes (values checked, canonical rows kept, staged and swapped).
`finish` queues the run's end the same way (`RunStore.queue_finish`). `wait` waits for the
loads; `close` waits for them a bounded time, and so does the interpreter's exit when the log
was not closed. Even opening returns at once: reading the configuration, importing Spark and the
warehouse's driver, starting or joining the Spark session and connecting all happen on the
log's thread, while the engine sends its first batch.

What a load finds reaches the engine without failing its sync:

- values that break a rule refuse that write's batches: nothing of them reaches a log table,
  their records stay in `<storage>/refused/…`, and one line naming the batches, the rule and
  that place is raised by the write's `WriteResult.wait`, listed in the run's
  `RunResult.refused`, given as a warning and sent as a `refused_batch` notice
  (`synclog.queued`);
- a run a layout refuses (`Layout.admit`: it started before the run its sync's hightouch
  snapshot holds) has each write refused so, and `RunResult.wait` raises the InputError; the
  run's end stays in the run store, refused, for `flush` to name;
- an outage keeps the batches in the run store for `flush`, as it does for any write;
- anything else (a bug, a bad configuration, Spark gone) leaves the work queued and is raised
  by the engine's next call to the log, and by `WriteResult.wait` or `RunResult.wait`.

A process that ends (or is killed) before its loads do leaves them queued under its owner tag;
the next `BackgroundLog` opened on the same storage, and `flush`, load them once that process is
gone (`synclog.queued.adopt`).

This module imports none of Spark, Arrow or a warehouse driver itself: `import synclog` and
`BackgroundLog.open` cost the engine's process a few hundredths of a second.
"""

from __future__ import annotations

import atexit
import contextlib
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
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from synclog.batches import Batch
    from synclog.config import Config
    from synclog.privacy import PayloadPolicy
    from synclog.storage.runstore import Pending, Queued
    from synclog.writer import Progress, SyncLog

T = TypeVar("T")
CLOSE_WAIT_S = 60.0
"""How long `close`, and the interpreter's exit, wait for the loads by default."""


class BackgroundLog:
    """A log whose `write` and `finish` return once their work is durable; loads follow behind.

    >>> with BackgroundLog.open("duckdb:///logs.duckdb") as log:   # returns at once
    ...     log.write(run, batch)      # a list of dicts, a pandas DataFrame, Arrow: durable now
    ...     ended = log.finish(run)    # the run's end, durable now
    ... # close: the loads end (at most CLOSE_WAIT_S); ended.wait() gives the run's result
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
        self._unusable: BaseException | None = None
        self._ready = threading.Event()
        self._lock = threading.Condition()
        self._work: deque[tuple[Callable[[], Any], Future[Any], bool]] = deque()
        self._busy = False
        self._closed = False
        self._failures: list[BaseException] = []
        self._refused: dict[tuple[int, int], list[str]] = {}
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
        after `wait`: the loads use its connection)."""
        self._ready.wait()
        if self._log is None:
            raise self._unusable or RuntimeError("the log was not set up")
        return self._log

    # -- the engine's side -----------------------------------------------------------------------

    def write(self, run: Run, records: Batch) -> WriteResult:
        """Queue `records` (`SyncLog.write`'s batch types) of `run`; durable when this returns.

        Raises InputError when a column is missing or of the wrong type, and ConfigError when
        the sync's layouts or payload policy cannot be written; values are checked by the load
        (see `WriteResult.wait`). Once the batch is queued, raises what an earlier load raised
        that no call raised yet. A Spark DataFrame, which this process cannot keep without a
        Spark job, is written in place, after what was queued before it.
        """
        started = time.perf_counter()
        log = self.log
        from synclog.batches import as_arrow, is_frame

        if is_frame(records, "pyspark"):
            self._raise_failure()
            return self._call(lambda: log.write(run, records))
        from pyspark.sql.pandas.types import from_arrow_schema

        from synclog.plugins.manager import payload_hooks
        from synclog.records import check_columns

        table = as_arrow(records)
        check_columns(from_arrow_schema(table.schema))
        log.layouts(run.sync_id)
        log.policy(run.sync_id).prepare(run.sync_id, payload_hooks())
        item = log.store.queue(run, table)
        future = self._submit(lambda: self._load(run, item, table))
        self._raise_failure()  # the batch is safe: now what went wrong before may be told
        return WriteResult({}, seconds=time.perf_counter() - started, queued=True, load=future)

    def finish(self, run: Run) -> RunResult:
        """Queue the end of `run` (as `SyncLog.finish` takes it); durable when this returns.
        `RunResult.wait` gives the run's result once its loads ended."""
        log = self.log
        policy = log.policy(run.sync_id)
        ended = replace(run, error=policy.redact_message(run.error)) if run.error else run
        item = log.store.queue_finish(ended)
        future = self._submit(lambda: self._finish(ended, item))
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
        Raises what a load raised that no call raised yet (a refused batch: see
        `WriteResult.wait`)."""
        done = self._drained(timeout)
        self._raise_failure()
        return done

    def flush(self) -> list[Pending]:
        """`SyncLog.flush`, after the loads queued so far."""
        return self._call(lambda: self.log.flush())

    def close(self, timeout: float | None = CLOSE_WAIT_S) -> None:
        """Wait at most `timeout` seconds (None: as long as it takes) for the loads, then start
        no more and close the log: what is left stays queued for the next writer or `flush`."""
        done = self._drained(timeout)
        self._stop()
        atexit.unregister(self._at_exit)
        if done:
            self._thread.join()  # it closes the SyncLog (the target's connection) as it ends
        else:
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
        """Open the log (`SyncLog.open`, in its two halves) and load what gone processes left."""
        from synclog.queued import adopt
        from synclog.writer import SyncLog

        target, config, spark, progress, policy = self._opening
        try:
            self._log = SyncLog.configured(target, config, spark, progress, policy)
        except BaseException as exc:
            self._unusable = exc
            raise
        finally:
            self._ready.set()
        self._log.begin(writes=True)
        for pending in self._log.store.all_pending():
            if pending.queued:
                adopt(self._log, pending.run)

    def _load(self, run: Run, item: Queued, records: pa.Table) -> WriteResult:
        from synclog.queued import load_queued

        try:
            return load_queued(self.log, run, item, records)
        except InputError as exc:
            self._refused.setdefault((run.sync_id, run.sync_run_id), []).append(str(exc))
            raise

    def _finish(self, run: Run, item: Queued) -> RunResult:
        from synclog.queued import finish_queued
        from synclog.storage.owners import owner

        log, mine = self.log, owner()
        for left in log.store.queued_of(run):  # writes whose load failed before: again, in order
            if left.finished is None and left.owner == mine:
                with contextlib.suppress(InputError):
                    self._load(run, left, log.store.read_queued(left))
        result = finish_queued(log, run, item)
        return replace(result, refused=tuple(self._refused.pop((run.sync_id, run.sync_run_id), ())))

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
            left = [future for _, future, _ in self._work]
            self._work.clear()
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
        progress = self._opening[3]
        if progress is not None:
            progress(message)

    def _at_exit(self) -> None:
        """The interpreter ends with the log open: wait a bounded time for its loads."""
        drained = self._drained(CLOSE_WAIT_S)
        self._stop()
        if drained:
            self._thread.join(CLOSE_WAIT_S)  # the log closed before the interpreter goes
        else:
            self._warn("warning: loads still running at exit; the next writer or `synclog flush` loads them")
