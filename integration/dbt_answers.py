"""The dbt package's marts answered directly, in Python, from what `synclog records` and
`synclog runs` read (synclog.tracking): what each mart must hold, computed another way."""

from __future__ import annotations

import itertools
import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from synclog.targets.base import Target
from synclog.tracking import RecordQuery, RunQuery, find_records, find_runs, find_syncs

ALL = 1_000_000
"""A page larger than any test's history."""
ATTEMPTED = ("succeeded", "rejected")
Key = tuple[str, int, str]
"""(layout, sync_id, record_identifier)"""


@dataclass(frozen=True)
class Logged:
    """Every record and run synclog's Sync Tracking reads back, per layout."""

    records: list[dict[str, Any]]
    runs: list[dict[str, Any]]

    @classmethod
    def read(cls, target: Target, layouts: Iterable[str]) -> Logged:
        records: list[dict[str, Any]] = []
        runs: list[dict[str, Any]] = []
        for layout in layouts:
            for sync_id in find_syncs(target, layout).column("sync_id").to_pylist():
                for row in find_records(target, RecordQuery(sync_id, limit=ALL), layout).to_pylist():
                    records.append({**row, "layout": layout})
                for row in find_runs(target, RunQuery(sync_id, limit=ALL), layout).to_pylist():
                    runs.append({**row, "layout": layout})
        return cls(records, runs)

    def attempts(self) -> list[dict[str, Any]]:
        """Records sent to the destination (succeeded or rejected) with an identifier, oldest first."""
        sent = [
            r for r in self.records if r["status"] in ("succeeded", "rejected") and r["record_identifier"]
        ]
        return sorted(sent, key=lambda r: (synced_at(r), r["sync_run_id"]))


def synced_at(record: dict[str, Any]) -> datetime:
    """The batch's completion where the layout has it, else its start."""
    return record["batch_completed_at"] or record["batch_started_at"]


def key(record: dict[str, Any]) -> Key:
    return (record["layout"], record["sync_id"], record["record_identifier"])


def rejections(logged: Logged) -> Counter[tuple[str, int, date, str]]:
    """Rejected records per (layout, sync, UTC day of the batch's start, message)."""
    return Counter(
        (r["layout"], r["sync_id"], r["batch_started_at"].astimezone(UTC).date(), r["status_message"])
        for r in logged.records
        if r["status"] == "rejected"
    )


def last_synced(logged: Logged) -> dict[Key, tuple[int, str, int | None]]:
    """Per record: (last attempt's run, its status, the last succeeded attempt's run or None)."""
    last: dict[Key, tuple[int, str, int | None]] = {}
    for r in logged.attempts():
        earlier = last.get(key(r))
        succeeded = earlier[2] if earlier else None
        if r["status"] == "succeeded":
            succeeded = r["sync_run_id"]
        last[key(r)] = (r["sync_run_id"], r["status"], succeeded)
    return last


def stays(logged: Logged) -> set[tuple[str, int, str, int, int | None]]:
    """(layout, sync, record, entered run, left run or None) of each stay in an audience.

    census: succeeded operations the identifier checks did not flag, delete out and any other in;
    hightouch: removed out, else in.
    """
    events: dict[Key, list[tuple[datetime, int, bool]]] = defaultdict(list)
    for r in logged.records:
        if r["record_identifier"] is None:
            continue
        if r["layout"] == "census" and r["layout_status"] == "succeeded" and r["status"] != "invalid":
            events[key(r)].append((synced_at(r), r["sync_run_id"], r["operation"] != "delete"))
        elif r["layout"] == "hightouch":
            events[key(r)].append((synced_at(r), r["sync_run_id"], r["operation"] != "removed"))
    found = set()
    for k, seen in events.items():
        entered: int | None = None
        for _at, run, member in sorted(seen):
            if member and entered is None:
                entered = run
            elif not member and entered is not None:
                found.add((*k, entered, run))
                entered = None
        if entered is not None:
            found.add((*k, entered, None))
    return found


def run_health(logged: Logged) -> dict[tuple[str, int, int], dict[str, Any]]:
    """`synclog runs`' rows by (layout, sync, run)."""
    return {(r["layout"], r["sync_id"], r["sync_run_id"]): r for r in logged.runs}


def rejection_rate(run: dict[str, Any]) -> float | None:
    attempted = run["records"] - run["aborted"]
    return None if run["rejected"] is None or attempted == 0 else run["rejected"] / attempted


def anomalies(
    logged: Logged, window: int, min_runs: int, volume: float, rate: float
) -> dict[tuple[str, int, int], tuple[float | None, float | None, bool, bool]]:
    """Per run: (median records, median rejection rate of the previous `window` runs, flags)."""
    by_sync: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in logged.runs:
        by_sync[(r["layout"], r["sync_id"])].append(r)
    found = {}
    for runs in by_sync.values():
        runs.sort(key=lambda r: (r["started_at"], r["sync_run_id"]))
        for i, run in enumerate(runs):
            before = runs[max(0, i - window) : i]
            records = statistics.median(r["records"] for r in before) if before else None
            rates = [x for x in map(rejection_rate, before) if x is not None]
            rate_median = statistics.median(rates) if rates else None
            judged = len(before) >= min_runs
            own = rejection_rate(run)
            flag_records = judged and records is not None and abs(run["records"] - records) > volume * records
            flag_rate = judged and None not in (own, rate_median) and abs(own - rate_median) > rate
            found[(run["layout"], run["sync_id"], run["sync_run_id"])] = (
                records,
                rate_median,
                bool(flag_records),
                bool(flag_rate),
            )
    return found


def value(text: Any) -> Any:
    """A field's text as a comparable value: JSON text parsed, other text as it is."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def field_changes(logged: Logged) -> set[tuple[str, int, str, str, int, int, str, str]]:
    """(layout, sync, record, field, previous run, run, old, new) per change between consecutive
    payloads sent for a record; old and new as canonical JSON text (None for NULL)."""
    payloads: dict[Key, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for r in logged.attempts():
        if r["record_payload"] is not None:
            payloads[key(r)].append((r["sync_run_id"], json.loads(r["record_payload"])))
    found = set()
    for k, seen in payloads.items():
        fields = {name for _run, payload in seen for name in payload}
        for (before_run, before), (run, after) in itertools.pairwise(seen):
            for name in fields:
                old, new = before.get(name), after.get(name)
                if old != new:
                    found.add((*k, name, before_run, run, canonical(old), canonical(new)))
    return found


def canonical(parsed: Any) -> str:
    """One text per JSON value, to compare values read from different warehouses."""
    return json.dumps(parsed, sort_keys=True)
