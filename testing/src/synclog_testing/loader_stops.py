"""Where a loader may stop in a tick, and the stop itself.

A point is a method of the run store or the load queue, and a predicate on its arguments. A
loader stopped there has done what the method did (as a process killed right after it) and
nothing after it. A new loader must then go on as if the first had not stopped: the model
machine's `the_loader_is_killed_in_a_tick_and_started_again` and tests/test_loader.py stop
loaders there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from synclog.storage.queue import LoadQueue, Queued
from synclog.storage.runstore import RunStore


@dataclass(frozen=True)
class StopPoint:
    """Once `owner.method` returns with arguments (`self` aside) that `when` takes."""

    owner: type
    method: str
    when: Callable[..., bool]


def _always(*_: Any) -> bool:
    return True


def _an_end(item: Queued) -> bool:
    return item.is_end


KILL_POINTS: dict[str, StopPoint] = {
    "the run store has a write's batches, no table has them": StopPoint(RunStore, "commit_write", _always),
    "a write is loaded and out of the queue, the tick's other items still in it": StopPoint(
        LoadQueue, "remove", _always
    ),
    "a run is loaded and its end out of the queue, the run store still holds it": StopPoint(
        LoadQueue, "remove", _an_end
    ),
    "a run is loaded, its end out of the queue, the run store forgot it": StopPoint(
        RunStore, "drop", _always
    ),
}
"""Where a loader may die in a tick, by what the storage then holds."""


@contextmanager
def stopped_at(point: StopPoint, stop: BaseException) -> Iterator[None]:
    """Inside, `point`'s method raises `stop` the first time it returns with arguments its
    predicate takes; the method is itself again after."""
    original = getattr(point.owner, point.method)

    def stopped(*args: Any, **kwargs: Any) -> Any:
        done = original(*args, **kwargs)
        if point.when(*args[1:]):
            raise stop
        return done

    setattr(point.owner, point.method, stopped)
    try:
        yield
    finally:
        setattr(point.owner, point.method, original)
