"""What `write` and `finish` return: a `SyncLog`'s, in place, and a `BackgroundLog`'s, once durable."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class WriteResult:
    """What one write did: records as counted (`RecordStatus.counted`), rows loaded per table, seconds.

    A `BackgroundLog`'s write returns once its batch is durable, with `queued` set and nothing
    counted yet: `wait` gives the result of its load.
    """

    statuses: dict[str, int]
    loaded: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    """Seconds the call took (for a queued write: the engine's, until its batch was durable)."""
    pending: bool = False
    """True when the target failed and the batches wait in the run store for `flush`."""
    passes: dict[str, float] = field(default_factory=dict)
    """Seconds of each step, in order: the validating write to the run store, then each table load."""
    queued: bool = False
    """True when the batch is durable under `storage` and its load runs behind the engine."""
    load: Future[WriteResult] | None = field(default=None, repr=False, compare=False)
    """The load behind the engine, for a queued write (see `wait`)."""

    @property
    def records(self) -> int:
        """Records written."""
        return sum(self.statuses.values())

    def to_dict(self) -> dict[str, Any]:
        """What a loader tells the engine (`synclog.storage.outcomes`)."""
        return {
            "statuses": self.statuses,
            "loaded": self.loaded,
            "seconds": self.seconds,
            "pending": self.pending,
            "passes": self.passes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WriteResult:
        return cls(
            dict(data["statuses"]),
            dict(data["loaded"]),
            float(data["seconds"]),
            bool(data["pending"]),
            dict(data["passes"]),
        )

    def wait(self, timeout: float | None = None) -> WriteResult:
        """This write's result once its load ended (itself when it loaded in place).

        Raises the InputError of values that break a rule (nothing of the write reached a log
        table; the message names its batches and where its records are kept), what else the load
        raised, and TimeoutError when `timeout` seconds pass first.
        """
        return self if self.load is None else self.load.result(timeout)


@dataclass(frozen=True)
class RunResult:
    """What `finish` did: the run's records as counted, rows loaded per table by `finish`.

    A `BackgroundLog`'s finish returns once the run's end is durable, with `queued` set and
    nothing counted yet: `wait` gives the result of its loads.
    """

    statuses: dict[str, int] = field(default_factory=dict)
    """The run's records as counted (`RecordStatus.counted`), over every batch logged."""
    loaded: dict[str, int] = field(default_factory=dict)
    pending: bool = False
    """True when the target failed and the run waits in the run store for `flush`."""
    refused: tuple[str, ...] = ()
    """One line per write a load behind the engine refused (its batches, why, where its records are)."""
    queued: bool = False
    """True when the run's end is durable under `storage` and its loads run behind the engine."""
    load: Future[RunResult] | None = field(default=None, repr=False, compare=False)
    """The loads behind the engine, for a queued finish (see `wait`)."""

    def to_dict(self) -> dict[str, Any]:
        """What a loader tells the engine (`synclog.storage.outcomes`)."""
        return {
            "statuses": self.statuses,
            "loaded": self.loaded,
            "pending": self.pending,
            "refused": list(self.refused),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        return cls(
            dict(data["statuses"]), dict(data["loaded"]), bool(data["pending"]), tuple(data["refused"])
        )

    def wait(self, timeout: float | None = None) -> RunResult:
        """This run's result once its loads ended (itself when it finished in place); raises what
        the loads raised (a refused batch is no error here: see `refused`), and TimeoutError when
        `timeout` seconds pass first."""
        return self if self.load is None else self.load.result(timeout)
