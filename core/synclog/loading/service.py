"""The loader: one process that loads, for every engine, what they queue for a storage and target.

Engines only make their batches durable in the load queue (`synclog.storage.queue`) and move
on; the loader holds the lease of the storage and target (`synclog.loading.lease`), so that it
alone writes the warehouse, and loads in ticks: every engine's queued writes of a tick in one
Spark job and one swap per table (`SyncLog.write_all`), then their runs' ends
(`SyncLog.finish_all`), each run's items in the order they were queued (`synclog.loading.tick`).
What became of each item goes to the engine that queued it (`synclog.storage.outcomes`).

Between ticks it retries what an outage kept in the run store, removes the outcomes of engines
that are gone, and, for a target only one process may open at a time (`Capabilities.exclusive`:
a DuckDB file), closes its connection, so that readers can open the file between loads.
A failure that is not an outage (a bug, Spark gone) leaves the tick's items queued; the loader
says so in one line and tries again later, waiting longer each time.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from synclog.errors import SynclogError, first_line
from synclog.loading.drain import load_tick
from synclog.loading.lease import lease_for
from synclog.loading.tick import Tick, choose
from synclog.storage.outcomes import Outcomes
from synclog.storage.owners import gone
from synclog.storage.queue import LoadQueue, Queued, target_key
from synclog.storage.refused import Refusals
from synclog.storage.spool import Pending
from synclog.writer import SyncLog

IDLE_S = 0.2
"""How long the loader waits between looks at an empty queue."""
RETRY_S = 10.0
"""How often what an outage kept is tried again."""
SWEEP_S = 60.0
"""How often the outcomes of gone engines are removed."""
BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
"""The waits after failures in a row (the last repeats)."""
T = TypeVar("T")


@dataclass
class LoaderStats:
    """What the loader has done since it started."""

    ticks: int = 0
    writes: int = 0
    ends: int = 0
    records: int = 0
    busy_s: float = 0.0
    """Seconds spent loading (not waiting for work)."""
    jobs: int = 0
    """Spark jobs of writes (`SyncLog.jobs`)."""
    loads: Counter[str] = field(default_factory=Counter)
    """Loads (stage + swap, or replace) per table."""


class Loader:
    """Loads the queue of `log`'s target from `log`'s storage (see the module's doc)."""

    def __init__(self, log: SyncLog, say: Callable[[str], None] = print) -> None:
        self.log = log
        self.say = say
        key = target_key(log.url)
        storage = log.config.storage
        self.queue = LoadQueue(storage, key)
        self.outcomes = Outcomes(storage, key)
        self.refusals = Refusals(storage)
        self.lease = lease_for(storage, log.url)
        self.stats = LoaderStats()
        self._failures = 0
        self._retried = self._swept = time.monotonic()

    def serve(self, stop: threading.Event) -> None:
        """Hold the lease and load until `stop` is set (the tick under way ends first). Raises
        LeaseHeld when another loader serves the storage and target."""
        self.lease.acquire()
        try:
            self.log.begin(writes=True)
            self.say(f"loading {self.lease.shown}: the queue is {self.queue.location.uri()}")
            while not stop.is_set():
                self.lease.check()
                try:
                    if self.tick():
                        self._failures = 0
                        continue
                except Exception as exc:  # the items stay queued, in order
                    self._failed(exc, stop)
                    continue
                self._between_ticks()
                stop.wait(IDLE_S)
        finally:
            self.lease.release()
            self.log.close()

    def tick(self) -> bool:
        """Load one tick of the queue; whether there was anything to load. What a load raises
        (not an outage) is told to the engines whose items it held and raised; they stay queued."""
        tick = choose(self.queue, self.queue.items(), _loadable)
        if not tick:
            return False
        started = time.perf_counter()
        jobs, loads = self.log.jobs, Counter(self.log.loads)
        try:
            outcomes = load_tick(self.log, self.queue, self.refusals, tick)
        except Exception as exc:
            line = _line(exc)
            for item in [w.item for w in tick.writes] + [e.item for e in tick.ends]:
                if not gone(item.engine):
                    self.outcomes.put(item, {"failed": line})
            raise
        for outcome in outcomes:
            if not gone(outcome.item.engine):  # an engine that is gone waits for nothing
                self.outcomes.put(outcome.item, outcome.to_dict())
        seconds = time.perf_counter() - started
        self._count(tick, seconds, self.log.jobs - jobs, Counter(self.log.loads) - loads)
        return True

    def _count(self, tick: Tick, seconds: float, jobs: int, loads: Counter[str]) -> None:
        stats = self.stats
        stats.ticks += 1
        stats.writes += len(tick.writes)
        stats.ends += len(tick.ends)
        stats.records += tick.records
        stats.busy_s += seconds
        stats.jobs += jobs
        stats.loads.update(loads)
        runs = len({w.item.run_key for w in tick.writes} | {e.item.run_key for e in tick.ends})
        self.say(
            f"tick {stats.ticks}: {len(tick.writes)} write(s), {len(tick.ends)} end(s) of {runs} run(s), "
            f"{tick.records:,} records: {jobs} job(s), {sum(loads.values())} load(s) in {seconds:.2f} s"
        )

    def drain(self) -> int:
        """Load ticks until the queue holds nothing this loader takes; how many items were loaded
        (what a load raises is raised: see `tick`)."""
        before = self.stats.writes + self.stats.ends
        while self.tick():
            pass
        return self.stats.writes + self.stats.ends - before

    def _failed(self, exc: Exception, stop: threading.Event) -> None:
        """A tick failed for a reason that is not an outage: say so, then wait longer each time."""
        self.say(f"error: a load failed, its batches stay queued: {_line(exc)}")
        if not isinstance(exc, SynclogError):
            self.say(traceback.format_exc().rstrip())
        self.log.connector.reset()
        stop.wait(BACKOFF_S[min(self._failures, len(BACKOFF_S) - 1)])
        self._failures += 1

    def _between_ticks(self) -> None:
        """Retry what an outage kept, sweep gone engines' outcomes, let go of an exclusive target."""
        now = time.monotonic()
        if now - self._retried >= RETRY_S:
            self._retried = now
            kept = [p for p in self.log.spool.every() if not p.refused]
            if kept:
                still = self.log.flush(kept)
                self.say(
                    f"retried {len(kept)} kept run(s): {len([p for p in still if not p.refused])} still kept"
                )
        if now - self._swept >= SWEEP_S:
            self._swept = now
            self.outcomes.sweep()
        if self.log.connector.capabilities.exclusive:
            self.log.connector.reset()


def take_over(log: SyncLog, say: Callable[[str], None]) -> int:
    """Load, holding the loader's lease for the while, what waits in the queue for a loader and
    what processes that are gone left there; how many items (LeaseHeld while a loader runs: it
    loads them itself). `log` is open already."""
    return _holding_the_lease(log, say, lambda loader: loader.drain())


def flush(log: SyncLog, say: Callable[[str], None]) -> tuple[int, list[Pending]]:
    """What `synclog flush` does, holding the loader's lease for the while (LeaseHeld while a
    loader runs: it does this itself): open `log` (only now, so that a flush that finds a loader
    never opens the warehouse, which may take one process at a time), load what `take_over`
    loads, then what an outage kept (`SyncLog.flush`); how many queued items it loaded, and what
    is still kept."""

    def both(loader: Loader) -> tuple[int, list[Pending]]:
        log.begin()
        return loader.drain(), log.flush()

    return _holding_the_lease(log, say, both)


def _holding_the_lease(log: SyncLog, say: Callable[[str], None], work: Callable[[Loader], T]) -> T:
    loader = Loader(log, say)
    loader.lease.acquire()
    try:
        done = work(loader)
        loader.outcomes.sweep()
        return done
    finally:
        loader.lease.release()


def _line(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, SynclogError) else f"{type(exc).__name__}: {first_line(exc)}"


def _loadable(item: Queued) -> bool:
    """The items a loader takes: those of whichever loader serves, and those whose own process is gone."""
    return item.served or item.orphaned
