"""Loads behind the engine: `write` and `finish` return once their work is durable; Spark's follows.

A `SyncLog` opened with `background=True` takes a batch the engine holds in memory (a list of
dicts, a pandas DataFrame, Arrow), checks its columns and their types in the engine's process,
and queues it in the run store as an Arrow file (`RunStore.queue`): `write` returns then. One
thread of the log (`Behind`) loads what was queued, in order, on the log's Spark session: the
very write a `write` in place makes (values checked, canonical rows kept, staged and swapped).
`finish` queues the run's end the same way (`RunStore.queue_finish`). The engine's thread waits
on neither Spark nor the warehouse; `SyncLog.wait` waits for the loads, `SyncLog.close` a
bounded time, and so does the interpreter's exit when the log was not closed.

What a load finds reaches the engine without failing its sync:

- values that break a rule refuse that write's batches: nothing of them reaches a log table,
  their records stay in `<storage>/refused/…` (`RunStore.refuse`), and one line naming the
  batches, the rule and that place is raised by the write's `WriteResult.wait`, listed in the
  run's `RunResult.refused`, given as a warning and sent as a `refused_batch` notice;
- an outage keeps the batches in the run store for `flush`, as it does for any write;
- anything else (a bug, Spark gone) leaves the work queued and is raised by the engine's next
  call to the log, and by `WriteResult.wait` or `RunResult.wait`.

A process that ends (or is killed) before its loads do leaves them queued under its owner tag;
the next log opened with `background=True`, and `flush`, load them once that process is gone
(`adopt`).
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
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from synclog.batches import Batch, as_arrow, as_frame
from synclog.errors import InputError, TargetError, first_line
from synclog.model import Run
from synclog.plugins.manager import payload_hooks
from synclog.records import check_columns
from synclog.results import RunResult, WriteResult
from synclog.storage.owners import owner
from synclog.storage.runstore import Queued
from synclog.storage.sweep import sweep

if TYPE_CHECKING:
    from synclog.writer import SyncLog

T = TypeVar("T")
EXIT_WAIT_S = 60.0
"""How long the interpreter's exit waits for the loads of a log that was not closed."""


class Behind:
    """The loads of one `SyncLog` that run behind its engine, in order, on a thread of their own."""

    def __init__(self, log: SyncLog) -> None:
        self.log = log
        self._lock = threading.Condition()
        self._work: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._busy = False
        self._closed = False
        self._failures: list[BaseException] = []
        self._refused: dict[tuple[int, int], list[str]] = {}
        self._thread = threading.Thread(target=self._run, name="synclog-behind", daemon=True)
        self._thread.start()
        atexit.register(self._at_exit)
        self._submit(self._start)

    # -- the engine's side -----------------------------------------------------------------------

    def write(self, run: Run, records: Batch) -> WriteResult:
        """Queue `records` for a load behind the engine; a Spark DataFrame (which this process
        cannot keep without a Spark job) is written in place, after what was queued before it."""
        started = time.perf_counter()
        self._raise_failure()
        if isinstance(records, DataFrame):
            frame = records
            return self._call(
                lambda: self.log._write_frame(run, *as_frame(frame, lambda: self.log.spark), started)
            )
        table = as_arrow(records)
        check_columns(from_arrow_schema(table.schema))
        self._check_config(run)
        item = self.log.store.queue(run, table)
        future = self._submit(lambda: self._load(run, item, table))
        return WriteResult({}, seconds=time.perf_counter() - started, queued=True, load=future)

    def finish(self, run: Run) -> RunResult:
        """Queue the end of `run` for its finish behind the engine."""
        self._raise_failure()
        policy = self.log.policy(run.sync_id)
        ended = replace(run, error=policy.redact_message(run.error)) if run.error else run
        return RunResult(queued=True, load=self._queue_finish(ended))

    def _queue_finish(self, run: Run) -> Future[RunResult]:
        item = self.log.store.queue_finish(run)
        return self._submit(lambda: self._finish(run, item))

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
        """Wait for every load queued so far; whether they ended before `timeout` seconds. Raises
        what a load raised that no call raised yet."""
        done = self._drained(timeout)
        self._raise_failure()
        return done

    def close(self, timeout: float | None) -> None:
        """Wait at most `timeout` seconds for the loads, then start no more: what is left stays
        queued for the next writer or `flush`."""
        done = self._drained(timeout)
        with self._lock:
            self._closed = True
            left = [future for _, future in self._work]
            self._work.clear()
            self._lock.notify_all()
        atexit.unregister(self._at_exit)
        for future in left:
            future.cancel()
        if not done:
            self.log.progress(
                f"warning: loads behind the engine still running after {timeout:.0f} s; what is left "
                f"stays queued in {self.log.store.root} for the next writer or `synclog flush`"
            )
        self._raise_failure()

    # -- the loads' side -------------------------------------------------------------------------

    def _start(self) -> None:
        """What `SyncLog.open` does in place, behind the engine: sweep what killed writers left,
        start Spark, connect, and load what gone processes left queued."""
        log = self.log
        sweep(log.config.storage)
        log.spark  # noqa: B018 - started now, before the first batch needs it
        try:
            log.target  # noqa: B018 - connected now; an outage waits, as for any write
        except TargetError as exc:
            if not log.config.keep_on_target_failure:
                raise
            log.progress(
                f"warning: {log.url} does not answer ({first_line(exc)}); batches wait in {log.store.root}"
            )
        for pending in log.store.all_pending():
            if pending.queued:
                adopt(log, pending.run)

    def _load(self, run: Run, item: Queued, records: pa.Table) -> WriteResult:
        try:
            return load_queued(self.log, run, item, records)
        except InputError as exc:
            self._refused.setdefault((run.sync_id, run.sync_run_id), []).append(str(exc))
            raise

    def _finish(self, run: Run, item: Queued) -> RunResult:
        mine = owner()
        for left in self.log.store.queued_of(run):  # writes whose load failed before: again, in order
            if left.finished is None and left.owner == mine:
                with contextlib.suppress(InputError):
                    self._load(run, left, self.log.store.read_queued(left))
        result = finish_queued(self.log, run, item)
        return replace(result, refused=tuple(self._refused.pop((run.sync_id, run.sync_run_id), ())))

    def _check_config(self, run: Run) -> None:
        """What a write checks of the configuration before it keeps anything (ConfigError)."""
        self.log.layouts(run.sync_id)
        self.log.policy(run.sync_id).prepare(run.sync_id, payload_hooks())

    # -- the thread ------------------------------------------------------------------------------

    def _submit(self, work: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the log is closed")
            self._work.append((work, future))
            self._lock.notify_all()
        return future

    def _call(self, work: Callable[[], T]) -> T:
        """Run `work` on the loads' thread, after what was queued before it; its result."""
        return self._submit(work).result()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._work or self._closed)
                if self._closed:
                    return
                work, future = self._work.popleft()
                self._busy = True
            try:
                if future.set_running_or_notify_cancel():
                    future.set_result(work())
            except BaseException as exc:  # handed to the engine: see the module's doc
                future.set_exception(exc)
                if not isinstance(exc, InputError):
                    with self._lock:
                        self._failures.append(exc)
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _drained(self, timeout: float | None) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: not (self._work or self._busy), timeout)

    def _raise_failure(self) -> None:
        """Raise the first failure of a load that no call raised yet."""
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            raise failure

    def _at_exit(self) -> None:
        """The interpreter ends with the log open: wait a bounded time for its loads."""
        if not self._drained(EXIT_WAIT_S):
            self.log.progress(
                "warning: loads behind the engine did not end before exit; the next writer loads them"
            )


def load_queued(log: SyncLog, run: Run, item: Queued, records: pa.Table) -> WriteResult:
    """Load one queued write in place; forget it once loaded. Values that break a rule move it
    to `refused/` (warned and noticed) and raise the InputError saying so."""
    started = time.perf_counter()
    frame, schema = as_frame(records, lambda: log.spark)
    try:
        result = log._write_frame(run, frame, schema, started)
    except InputError as exc:
        where = log.store.refuse(run, item)
        numbers = ", ".join(str(n) for n in item.batches) or "none"
        line = f"batch {numbers} of run {run.sync_run_id} refused: {exc}; its records are in {where}"
        log.progress(f"warning: {line}")
        log.notices.refused(run, line, records.num_rows)
        raise InputError(line) from None
    log.store.dequeue(run, item)
    return result


def finish_queued(log: SyncLog, run: Run, item: Queued) -> RunResult:
    """Finish a run whose end was queued, in place; forget the queued end once done."""
    result = log._finish(run, {})
    log.store.dequeue(run, item)  # kept for `flush` after an outage, the run remembers its end
    return result


def adopt(log: SyncLog, run: Run) -> None:
    """Load, in order and in place, what processes that are gone left queued for `run`."""
    for item in log.store.queued_of(run):
        if not item.orphaned:
            continue
        if item.finished is not None:
            finish_queued(log, item.finished, item)
            continue
        with contextlib.suppress(InputError):  # refused: warned, noticed, kept in refused/
            load_queued(log, run, item, log.store.read_queued(item))
