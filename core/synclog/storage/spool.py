"""The outage spool: which kept batches of a run still wait for the target, and whether it ended.

A write whose target failed keeps its validated batches in the run store (`RunStore`) and
marks them here, in the run's `run.json`; `SyncLog.flush` (and the loader, which retries) loads
them later, oldest run first. A finished run is remembered with how it ended, and with why a
layout refused it where one did (then it stays until someone deals with it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from synclog.model import Run
from synclog.storage.run_state import RunState, RunStates


@dataclass(frozen=True)
class Pending:
    """Batches of a run that a target could not take yet, and whether the run has finished."""

    run: Run
    batches: tuple[int, ...]
    finished: bool
    refused: str | None = None
    """Why a layout refused the finished run (an InputError), where one did: it stays kept."""


class Spool:
    """What of each run waits for the target (in the runs' `run.json`)."""

    def __init__(self, states: RunStates) -> None:
        self.states = states

    def mark(
        self, run: Run, batches: Iterable[int], *, finished: bool, refused: str | None = None
    ) -> Pending:
        """Remember that `batches` (added to those already pending) still wait for the target,
        and that the run has finished (as `run` says); `refused` says why a layout refused it."""
        with self.states.lock:
            state = self.states.get(run) or RunState(run)
            state = replace(
                state,
                run=run if finished else state.run,
                pending=tuple(sorted({*batches, *state.pending})),
                finished=finished or state.finished,
                refused=refused,
            )
            self.states.put(state)
        return _pending(state) or Pending(state.run, state.pending, state.finished)

    def of(self, run: Run) -> Pending | None:
        """What of `run` still waits for the target, if anything."""
        return _pending(self.states.get(run))

    def every(self) -> list[Pending]:
        """Every run with something waiting for the target, oldest run first."""
        found = [_pending(state) for state in self.states.every()]
        return sorted((p for p in found if p), key=lambda p: p.run.started_at)

    def clear(self, run: Run) -> None:
        """The target has every batch of `run` that was waiting (a finished run's run-level
        tables still wait, until the run store drops the run)."""
        with self.states.lock:
            state = self.states.get(run)
            if state is not None and state.pending:
                self.states.put(replace(state, pending=()))


def _pending(state: RunState | None) -> Pending | None:
    if state is None or not (state.pending or state.finished):
        return None
    return Pending(state.run, state.pending, state.finished, refused=state.refused)
