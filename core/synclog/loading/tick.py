"""What one load takes from the queue: a tick's writes and ends, in order within each run.

Each run's items are taken from its first on, in the order they were queued, and no further
than the first item that is not this loader's to take, the first write holding a batch an
earlier write of the tick holds (a replay: its copy must replace the earlier one, so it waits
for the next tick), or the run's end (taken once every write before it is). Runs take turns,
an item each, until the tick holds `budget` bytes of records (at least one item), so that one
large run does not keep the others waiting.

A load makes a tick's writes, then its ends. So that a sync's runs see each other as they were
queued (a hightouch run that started before the run its sync's snapshot holds is refused: an
end changes what the sync's later writes may do), a write and an end of one sync go in one
tick only where the write was queued first; the other waits for the next tick. The ends are
made in the order they were queued.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from synclog.model import Run
from synclog.storage.queue import LoadQueue, Queued, batch_numbers

TICK_BYTES = 64 * 1024 * 1024
"""How many bytes of queued records (as Arrow holds them) one tick takes at most."""


@dataclass(frozen=True)
class QueuedWrite:
    item: Queued
    run: Run
    records: pa.Table
    batches: tuple[int, ...]


@dataclass(frozen=True)
class QueuedEnd:
    item: Queued
    run: Run


@dataclass
class Tick:
    """The writes and ends one load takes (see the module's doc)."""

    writes: list[QueuedWrite] = field(default_factory=list)
    ends: list[QueuedEnd] = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(write.records.num_rows for write in self.writes)

    @property
    def bytes(self) -> int:
        return sum(write.records.nbytes for write in self.writes)

    def __bool__(self) -> bool:
        return bool(self.writes or self.ends)


def choose(
    queue: LoadQueue, items: Iterable[Queued], mine: Callable[[Queued], bool], budget: int = TICK_BYTES
) -> Tick:
    """A tick of `items` (the queue's, each run's in order) that `mine` says are this loader's."""
    runs: dict[tuple[int, int], deque[Queued]] = {}
    for item in items:
        runs.setdefault(item.run_key, deque()).append(item)
    tick, held = Tick(), {key: set[int]() for key in runs}
    active = list(runs)
    while active:
        for key in list(active):
            item = runs[key].popleft()
            if not mine(item) or _out_of_turn(tick, item):
                active.remove(key)
                continue
            if item.is_end:
                tick.ends.append(QueuedEnd(item, queue.ended(item)))
                active.remove(key)
                continue
            run, records = queue.read(item)
            if tick and tick.bytes + records.nbytes > budget:
                return tick
            batches = batch_numbers(records)
            if held[key] & set(batches):  # a replay of a batch of this tick: the next tick's
                active.remove(key)
                continue
            tick.writes.append(QueuedWrite(item, run, records, batches))
            held[key] |= set(batches)
            if not runs[key]:
                active.remove(key)
    tick.ends.sort(key=lambda end: end.item.seq)
    return tick


def _out_of_turn(tick: Tick, item: Queued) -> bool:
    """Whether `item` would go in `tick` against the queue's order of its sync's writes and ends:
    an end queued before one of the tick's writes of its sync, or a write queued after one of its
    ends."""
    if item.is_end:
        return any(w.item.sync_id == item.sync_id and w.item.seq > item.seq for w in tick.writes)
    return any(e.item.sync_id == item.sync_id and e.item.seq < item.seq for e in tick.ends)
