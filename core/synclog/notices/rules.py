"""Alert rules on a sync's health, and what firing one measured.

Run rules look at one finished run's counts (records by status, how it ended) and, for the
volume rule, the record counts of the sync's earlier runs; the freshness rule looks at when the
sync last finished a run. None of them reads a record: the counts are those the write already has.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from synclog.model import RecordStatus

INVALID = (RecordStatus.INVALID_NULL, RecordStatus.INVALID_DUPLICATE)
RULES = ("failed_run", "rejection_rate", "invalid_records", "volume_change", "freshness")
"""Every rule, in the order notices about one run are sent."""


@dataclass(frozen=True)
class AlertRules:
    """The rules of one sync; a rule left unset (None, False) never fires."""

    failed_run: bool = False
    """Fire when a run failed or was aborted (records planned but never sent)."""
    rejection_rate: float | None = None
    """Fire when rejected records / all records of a run is above this (0.05 is 5%)."""
    invalid_records: int | None = None
    """Fire when a run has more invalid records (NULL or DUPLICATE identifier) than this."""
    volume_change: float | None = None
    """Fire when a run's records are off the median of the previous `volume_runs` runs by more
    than this fraction of it (0.5: fewer than half or more than one and a half times)."""
    volume_runs: int = 5
    """How many earlier runs the median is taken over; the rule waits until there are as many."""
    freshness_hours: float | None = None
    """Fire (in `synclog check`) when the sync's last finished run ended longer ago than this."""


@dataclass(frozen=True)
class RunFacts:
    """What the rules know of one finished run: how it ended and its records by status."""

    sync_id: int
    sync_run_id: int
    outcome: str
    """succeeded, partial, failed or aborted (see `outcome`)."""
    statuses: Mapping[str, int] = field(default_factory=dict)
    """Records by status: canonical statuses, or Sync Tracking's (where `invalid` sums both kinds)."""

    @property
    def records(self) -> int:
        return sum(self.statuses.values())

    @property
    def invalid(self) -> int:
        return sum(self.statuses.get(s, 0) for s in (*INVALID, "invalid"))


@dataclass(frozen=True)
class Firing:
    """A rule that fired: what it measured against which threshold, and one line saying so."""

    rule: str
    measured: float | None
    """None when there is nothing to measure (no finished run yet)."""
    threshold: float
    summary: str


def outcome(status: str, aborted: int) -> str:
    """How a run ended: failed or partial as it says; aborted when it did not say (still running at its end)
    or left records unsent; else succeeded."""
    if status in ("failed", "partial"):
        return status
    return "aborted" if status == "running" or aborted else "succeeded"


def evaluate(rules: AlertRules, run: RunFacts, earlier: Sequence[int]) -> list[Firing]:
    """The run rules that fire for `run`; `earlier` holds the record counts of the sync's
    previous runs, newest first."""
    name = f"sync {run.sync_id} run {run.sync_run_id}"
    fired: list[Firing] = []
    if rules.failed_run and run.outcome != "succeeded":
        fired.append(Firing("failed_run", 1, 0, f"{name} {run.outcome}"))
    records = run.records
    if rules.rejection_rate is not None and records:
        rate = run.statuses.get(RecordStatus.REJECTED, 0) / records
        if rate > rules.rejection_rate:
            fired.append(
                Firing(
                    "rejection_rate",
                    round(rate, 6),
                    rules.rejection_rate,
                    f"{name}: {rate:.1%} of {records:,} records rejected (above {rules.rejection_rate:.1%})",
                )
            )
    if rules.invalid_records is not None and run.invalid > rules.invalid_records:
        fired.append(
            Firing(
                "invalid_records",
                run.invalid,
                rules.invalid_records,
                f"{name}: {run.invalid:,} invalid records, NULL or DUPLICATE identifier "
                f"(above {rules.invalid_records:,})",
            )
        )
    if rules.volume_change is not None and len(earlier) >= rules.volume_runs > 0:
        median = statistics.median(earlier[: rules.volume_runs])
        change = abs(records - median) / median if median else (1.0 if records else 0.0)
        if change > rules.volume_change:
            fired.append(
                Firing(
                    "volume_change",
                    round(change, 6),
                    rules.volume_change,
                    f"{name}: {records:,} records, {change:.0%} off the median {median:,.0f} "
                    f"of the last {rules.volume_runs} runs (more than {rules.volume_change:.0%})",
                )
            )
    return fired


def stale(rules: AlertRules, sync_id: int, last_finished: datetime | None, now: datetime) -> Firing | None:
    """The freshness rule: fires when `sync_id` finished no run within `freshness_hours` of `now`."""
    if rules.freshness_hours is None:
        return None
    limit = rules.freshness_hours
    if last_finished is None:
        return Firing("freshness", None, limit, f"sync {sync_id}: no finished run (limit {limit:g} h)")
    hours = (now - last_finished).total_seconds() / 3600
    if hours <= limit:
        return None
    return Firing(
        "freshness",
        round(hours, 3),
        limit,
        f"sync {sync_id}: last run finished {hours:.1f} h ago (limit {limit:g} h)",
    )
