"""Loading one tick: its writes in one `SyncLog.write_all`, then its ends in one `finish_all`.

Every guarantee of a write in place holds: values are checked before anything reaches a log
table, a replayed batch replaces its copy, and an outage keeps the batches in the run store for
the loader's retries or `flush` (the items are then done with: the run store holds them). What a
load finds reaches the engine through the item's `Outcome`:

- a write whose values break a rule is refused: its records move to `<storage>/refused/…`
  (`synclog.storage.refused`), one line names its batches, the rule and that place (a warning,
  a `refused_batch` notice, the write's `WriteResult.wait`, its run's `RunResult.refused`);
- a run a layout refuses has each write refused so, and its end too, as `SyncLog.finish`
  refuses it (a warning says so, and `RunResult.wait` raises the InputError): where the run
  store holds batches of it from before, they stay there, refused, for `flush` to name;
- anything else (a bug, Spark gone) is raised: the tick's items stay queued, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from synclog.batches import Write
from synclog.errors import InputError
from synclog.loading.tick import QueuedWrite, Tick
from synclog.results import RunResult, WriteResult
from synclog.storage.queue import LoadQueue, Queued
from synclog.storage.refused import Refusals
from synclog.writer import SyncLog

_COLUMN = re.compile(r"column '([^']+)'")
"""The column an InputError of record results names (a notice names it, never its value)."""


@dataclass(frozen=True)
class Outcome:
    """What became of one queued item: its result, or the InputError that refused it."""

    item: Queued
    result: WriteResult | RunResult | InputError

    def to_dict(self) -> dict[str, object]:
        """As `synclog.storage.outcomes` keeps it for the engine."""
        if isinstance(self.result, InputError):
            return {"refused": str(self.result)}
        return {"result": self.result.to_dict()}


def load_tick(log: SyncLog, queue: LoadQueue, refusals: Refusals, tick: Tick) -> list[Outcome]:
    """Load `tick`'s writes, then its ends; each item done with leaves the queue (an end the
    tables hold leaves it before the run store forgets its run: see `SyncLog.finish_all`)."""
    outcomes = []
    results = log.write_all([Write(w.run, w.records) for w in tick.writes])
    for write, result in zip(tick.writes, results, strict=True):
        if isinstance(result, InputError):
            result = _refuse(log, queue, refusals, write, result)
        else:
            queue.remove(write.item)
        outcomes.append(Outcome(write.item, result))
    ended = log.finish_all(
        [end.run for end in tick.ends], on_loaded=lambda position: queue.remove(tick.ends[position].item)
    )
    for end, done in zip(tick.ends, ended, strict=True):
        if isinstance(done, InputError):
            log.progress(
                f"warning: the end of run {end.run.sync_run_id} of sync {end.run.sync_id} refused: {done}"
            )
        else:
            done = RunResult(done.statuses, done.loaded, done.pending, refusals.of(end.run))
        if isinstance(done, InputError) or done.pending:  # kept in the run store: done with here
            queue.remove(end.item)
        outcomes.append(Outcome(end.item, done))
    return outcomes


def _refuse(
    log: SyncLog, queue: LoadQueue, refusals: Refusals, write: QueuedWrite, exc: InputError
) -> InputError:
    """Keep a refused write's records apart, say so (warning, notice), and give the line the
    engine sees."""
    run, item = write.run, write.item
    name = item.name.partition("@")[0].removesuffix(".arrow")
    where = refusals.place(run, name)
    numbers = ", ".join(str(n) for n in write.batches) or "none"
    line = f"batch {numbers} of run {run.sync_run_id} refused: {exc}; its records are in {where}"
    refusals.keep(run, name, queue.file(item), line)
    log.progress(f"warning: {line}")
    column = _COLUMN.search(str(exc))
    why = f"a value in column {column[1]!r} breaks the contract" if column else "it breaks the contract"
    summary = f"sync {run.sync_id}: batch {numbers} of run {run.sync_run_id} refused ({why}); "
    summary += "its records are kept in storage"
    log.notices.refused(run, summary, write.records.num_rows)
    return InputError(line)
