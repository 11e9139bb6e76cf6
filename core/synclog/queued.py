"""Loading what a `BackgroundLog` queued in the run store: its own loads, and those a gone process left.

A queued write is loaded as a write in place (`SyncLog._write_frame`) and then forgotten; values
that break a rule move it to `refused/` instead (`RunStore.refuse`), where its records stay, and
raise the InputError saying which batches, why and where. A queued end of a run is finished in
place (`SyncLog._finish`) and then forgotten; an outage then keeps the run for `flush`, as for
any run, and so does a layout that refuses the run (`Layout.admit`: then `flush` names it).
"""

from __future__ import annotations

import contextlib
import re
import time
from typing import TYPE_CHECKING, Protocol

from synclog.batches import as_frame
from synclog.errors import InputError
from synclog.results import RunResult, WriteResult

_COLUMN = re.compile(r"column '([^']+)'")
"""The column an InputError of record results names (a notice names it, never its value)."""

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from synclog.model import Run
    from synclog.notices.notify import Notices
    from synclog.storage.runstore import Queued, RunStore


class Loader(Protocol):
    """What loads a queued write or end in place: a `SyncLog` (named so, not imported: the
    writer imports this module)."""

    store: RunStore
    notices: Notices

    @property
    def spark(self) -> SparkSession: ...

    def progress(self, message: str, /) -> None: ...

    def _write_frame(self, run: Run, frame: DataFrame, schema: StructType, started: float) -> WriteResult: ...

    def _finish(self, run: Run, passes: dict[str, float]) -> RunResult: ...


def load_queued(log: Loader, run: Run, item: Queued, records: pa.Table) -> WriteResult:
    """Load one queued write of `run` (`records`, its batches) in place; forget it once loaded."""
    started = time.perf_counter()
    frame, schema = as_frame(records, lambda: log.spark)
    try:
        result = log._write_frame(run, frame, schema, started)
    except InputError as exc:
        where = log.store.refuse(run, item)
        numbers = ", ".join(str(n) for n in item.batches) or "none"
        line = f"batch {numbers} of run {run.sync_run_id} refused: {exc}; its records are in {where}"
        log.progress(f"warning: {line}")
        column = _COLUMN.search(str(exc))
        why = f"a value in column {column[1]!r} breaks the contract" if column else "it breaks the contract"
        summary = f"sync {run.sync_id}: batch {numbers} of run {run.sync_run_id} refused ({why}); "
        summary += "its records are kept in storage"
        log.notices.refused(run, summary, records.num_rows)
        raise InputError(line) from None
    log.store.dequeue(run, item)
    return result


def finish_queued(log: Loader, run: Run, item: Queued) -> RunResult:
    """Finish `run`, whose end was queued, in place; forget the queued end once done, or once a
    layout refused the run (an InputError: the run store keeps it, refused, for `flush`)."""
    try:
        result = log._finish(run, {})
    except InputError:
        log.store.dequeue(run, item)
        raise
    log.store.dequeue(run, item)  # kept for `flush` after an outage, the run remembers its end
    return result


def adopt(log: Loader, run: Run) -> None:
    """Load, in order and in place, what processes that are gone left queued for `run`."""
    for item in log.store.queued_of(run):
        if not item.orphaned:
            continue
        if item.finished is not None:
            finish_queued(log, item.finished, item)
            continue
        with contextlib.suppress(InputError):  # refused: warned, noticed, kept in refused/
            load_queued(log, run, item, log.store.read_queued(item))
