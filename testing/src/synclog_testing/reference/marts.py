"""The dbt package's marts, in plain Python, computed from the reference model's tables.

Written from the marts' definitions in docs/analysts/dbt.md, not from the package's SQL: each
function takes the rows `ReferenceLog.tables()` gives (`census.sync_log`, `census.synclog_runs`,
`hightouch.sync_changelog`, `hightouch.sync_runs`) and returns the mart's rows as dicts, every
column but the hashed `*_key` ones. Times are UTC datetimes; field values are canonical JSON text.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from synclog_testing.reference.census import ABORTED_MESSAGE

Tables = Mapping[str, Counter[tuple[tuple[str, Any], ...]]]
"""Each table's rows as a multiset of sorted (column, value) pairs, as `ReferenceLog.tables()`."""
Row = dict[str, Any]
RecordKey = tuple[str, int, str]
"""(layout, sync_id, record_identifier)"""
RunKey = tuple[str, int, int]
"""(layout, sync_id, sync_run_id)"""
EXACT_INTEGERS = 2**53
"""Integral numbers below this in size are written as integers (a double holds them exactly)."""


@dataclass(frozen=True)
class Settings:
    """The package's vars the marts read (README.md lists them), with their defaults."""

    error_code_delimiter: str = ":"
    anomaly_runs: int = 7
    anomaly_min_runs: int = 3
    anomaly_volume_threshold: float = 0.5
    anomaly_rejection_rate_threshold: float = 0.1


@dataclass(frozen=True)
class LogRow:
    """One row of a layout's log (census `sync_log`, hightouch `sync_changelog`), as the marts
    read it: the destination's outcome, the flag, the row's time."""

    layout: str
    sync_id: int
    sync_run_id: int
    identifier: str | None
    outcome: str | None
    """succeeded, rejected or aborted (the destination's, flagged records too); NULL for a
    hightouch row that left the model with nothing sent."""
    tracked: str | None
    """The status `synclog records` shows: invalid for a flagged record, else the outcome."""
    membership: str | None
    """in, still (hightouch `changed`) or out; NULL for a row that says nothing of it."""
    invalid_reason: str | None
    error_code: str | None
    status_message: str | None
    batch_started_at: datetime
    at: datetime
    """The batch's completion (census), else its start (hightouch)."""
    payload: str | None

    @property
    def record(self) -> RecordKey:
        assert self.identifier is not None
        return (self.layout, self.sync_id, self.identifier)

    @property
    def run(self) -> RunKey:
        return (self.layout, self.sync_id, self.sync_run_id)

    @property
    def sent(self) -> bool:
        return self.outcome in ("succeeded", "rejected")


def _rows(tables: Tables, name: str) -> list[Row]:
    return [dict(row) for row in tables.get(name, Counter()).elements()]


def log_rows(tables: Tables) -> list[LogRow]:
    """Every census and hightouch log row the tables hold."""
    found = []
    for r in _rows(tables, "census.sync_log"):
        if r["status"] == "succeeded":
            outcome = "succeeded"
        elif r["status_message"] == ABORTED_MESSAGE:
            outcome = "aborted"
        else:
            outcome = "rejected"
        member = None
        if outcome == "succeeded":
            member = "out" if r["operation"] == "delete" else "in"
        found.append(
            LogRow(
                "census",
                r["sync_id"],
                r["sync_run_id"],
                r["record_identifier"],
                outcome,
                "invalid" if r["invalid_reason"] is not None else outcome,
                member,
                r["invalid_reason"],
                r["error_code"],
                r["status_message"],
                r["batch_started_at"],
                r["batch_completed_at"] or r["batch_started_at"],
                r["record_payload"],
            )
        )
    for r in _rows(tables, "hightouch.sync_changelog"):
        answer = {"succeeded": "succeeded", "failed": "rejected", "aborted": "aborted"}.get(r["status"])
        tracked = "invalid" if r["invalid_reason"] is not None else answer
        member = {"added": "in", "changed": "still", "removed": "out"}[r["op_type"]]
        found.append(
            LogRow(
                "hightouch",
                r["sync_id"],
                r["sync_run_id"],
                r["row_id"],
                answer,
                tracked,
                member,
                r["invalid_reason"],
                r["error_code"],
                r["failure_reason"],
                r["batch_started_at"],
                r["batch_started_at"],
                r.get("fields"),
            )
        )
    return found


def _day(moment: datetime) -> date:
    """The UTC day of a moment."""
    return moment.astimezone(UTC).date()


# -- runs ------------------------------------------------------------------------------------------


def _layout_runs(tables: Tables, rows: list[LogRow]) -> list[Row]:
    """Each run with its status, times and counts, before the retention horizon is applied."""
    by_run: dict[RunKey, list[LogRow]] = defaultdict(list)
    for r in rows:
        by_run[r.run].append(r)
    runs: list[Row] = []

    def counted(key: RunKey) -> Row:
        kept = by_run.get(key, [])
        return {
            "kept_rows": len(kept),
            "planned": sum(r.outcome is not None for r in kept),
            "attempted": sum(r.sent for r in kept),
            "succeeded": sum(r.outcome == "succeeded" for r in kept),
            "rejected": sum(r.outcome == "rejected" for r in kept),
            "aborted": sum(r.outcome == "aborted" for r in kept),
            "invalid_null": sum(r.invalid_reason == "NULL" for r in kept),
            "invalid_duplicate": sum(r.invalid_reason == "DUPLICATE" for r in kept),
        }

    ended = {("census", r["sync_id"], r["sync_run_id"]): r for r in _rows(tables, "census.synclog_runs")}
    census_keys = set(ended) | {k for k in by_run if k[0] == "census"}
    for key in census_keys:
        kept = by_run.get(key, [])
        run = ended.get(key)
        if run is not None:
            status, started, finished = run["status"], run["started_at"], run["finished_at"]
            if finished is None and kept:
                finished = max(r.at for r in kept)
        else:
            aborted = sum(r.tracked == "aborted" for r in kept)
            succeeded = sum(r.tracked == "succeeded" for r in kept)
            status = "succeeded" if aborted == 0 else ("partial" if succeeded > 0 else "failed")
            started = min(r.batch_started_at for r in kept)
            finished = max(r.at for r in kept)
        runs.append({"layout": "census", "sync_id": key[1], "sync_run_id": key[2]} | counted(key) | {
            "run_status": status, "started_at": started, "finished_at": finished,
        })  # fmt: skip
    for run in _rows(tables, "hightouch.sync_runs"):
        key = ("hightouch", run["sync_id"], run["sync_run_id"])

        def total(stage: str, run: Row = run) -> int:
            return int(sum(run[f"num_{stage}_{op}"] for op in ("add", "change", "remove")))

        counts = counted(key)
        counts |= {
            "planned": total("planned"),
            "attempted": total("attempted"),
            "succeeded": total("succeeded"),
            "rejected": total("failed"),
            "aborted": total("planned") - total("attempted"),
        }
        partial = run["status"] == "failed" and total("succeeded") > 0
        runs.append(
            {"layout": "hightouch", "sync_id": key[1], "sync_run_id": key[2]}
            | counts
            | {
                "run_status": "partial" if partial else run["status"],
                "started_at": run["started_at"],
                "finished_at": run["finished_at"],
            }
        )
    return runs


def retained_since(tables: Tables) -> dict[tuple[str, int], date | None]:
    """Per (layout, sync): the UTC day of its oldest kept log row, when a run of the sync (in
    `synclog_runs` / `sync_runs`) started before that day; else None (the log holds it all)."""
    rows = log_rows(tables)
    oldest: dict[tuple[str, int], date] = {}
    for r in rows:
        key = (r.layout, r.sync_id)
        oldest[key] = min(oldest.get(key, _day(r.batch_started_at)), _day(r.batch_started_at))
    found: dict[tuple[str, int], date | None] = dict.fromkeys(oldest)
    for run in _layout_runs(tables, rows):
        key = (run["layout"], run["sync_id"])
        found.setdefault(key, None)
        if key in oldest and _day(run["started_at"]) < oldest[key]:
            found[key] = oldest[key]
    return found


def run_health(tables: Tables) -> list[Row]:
    """synclog_run_health: one row per run."""
    horizon = retained_since(tables)
    found = []
    for run in _layout_runs(tables, log_rows(tables)):
        since = horizon.get((run["layout"], run["sync_id"]))
        past = since is not None and _day(run["started_at"]) < since
        counts = ("planned", "attempted", "succeeded", "rejected", "aborted")
        flags = ("invalid_null", "invalid_duplicate")
        row = {k: run[k] for k in ("layout", "sync_id", "sync_run_id", "run_status", "started_at")}
        row["finished_at"] = run["finished_at"]
        finished = run["finished_at"]
        row["duration_seconds"] = (
            None if finished is None else int((finished - run["started_at"]).total_seconds())
        )
        nothing_kept = past and run["kept_rows"] == 0
        for name in counts:
            row[name] = None if nothing_kept and run["layout"] == "census" else run[name]
        for name in flags:
            row[name] = None if nothing_kept else run[name]
        attempted = row["attempted"]
        row["rejection_rate"] = None if not attempted else row["rejected"] / attempted
        row["past_retention"] = past
        found.append(row)
    return found


def volume_anomalies(tables: Tables, settings: Settings) -> list[Row]:
    """synclog_volume_anomalies: each run kept, against the median of its sync's previous runs."""
    by_sync: dict[tuple[str, int], list[Row]] = defaultdict(list)
    for run in run_health(tables):
        if not run["past_retention"]:
            by_sync[(run["layout"], run["sync_id"])].append(run)
    found = []
    for runs in by_sync.values():
        runs.sort(key=lambda r: (r["started_at"], r["sync_run_id"]))
        for number, run in enumerate(runs, start=1):
            before = runs[max(0, number - 1 - settings.anomaly_runs) : number - 1]
            volumes = [r["planned"] for r in before if r["planned"] is not None]
            rates = [r["rejection_rate"] for r in before if r["rejection_rate"] is not None]
            median_records = statistics.median(volumes) if volumes else None
            median_rate = statistics.median(rates) if rates else None
            judged = len(before) >= settings.anomaly_min_runs
            records, rate = run["planned"], run["rejection_rate"]
            found.append(
                {
                    "layout": run["layout"],
                    "sync_id": run["sync_id"],
                    "sync_run_id": run["sync_run_id"],
                    "started_at": run["started_at"],
                    "records": records,
                    "rejection_rate": rate,
                    "run_number": number,
                    "previous_runs": len(before),
                    "median_records": median_records,
                    "median_rejection_rate": median_rate,
                    "records_anomaly": judged
                    and _beyond(
                        records, median_records, settings.anomaly_volume_threshold * (median_records or 0)
                    ),
                    "rejection_rate_anomaly": judged
                    and _beyond(rate, median_rate, settings.anomaly_rejection_rate_threshold),
                }
            )
    return found


def _beyond(value: float | None, median: float | None, distance: float) -> bool:
    """`value` is further than `distance` from `median` (both known)."""
    return value is not None and median is not None and abs(value - median) > distance


# -- records ---------------------------------------------------------------------------------------


def rejections(tables: Tables, settings: Settings) -> list[Row]:
    """synclog_rejections: rejected rows per layout, sync, UTC day, error code and message."""
    groups: dict[tuple[str, int, date, str | None, str | None], list[LogRow]] = defaultdict(list)
    for r in log_rows(tables):
        if r.outcome != "rejected":
            continue
        code = r.error_code
        if code is None and r.status_message is not None:
            code = r.status_message.split(settings.error_code_delimiter)[0].strip(" ")
        day = r.batch_started_at.astimezone(UTC).date()
        groups[(r.layout, r.sync_id, day, code, r.status_message)].append(r)
    return [
        {
            "layout": layout,
            "sync_id": sync_id,
            "rejected_on": day,
            "error_code": code,
            "status_message": message,
            "records": len(rows),
            "flagged_records": sum(r.invalid_reason is not None for r in rows),
            "first_rejected_at": min(r.at for r in rows),
            "last_rejected_at": max(r.at for r in rows),
        }
        for (layout, sync_id, day, code, message), rows in groups.items()
    ]


def _attempt_order(r: LogRow) -> tuple[Any, ...]:
    """Oldest first: time, run, a rejection before a success, then the message."""
    return (r.at, r.sync_run_id, r.outcome == "succeeded", r.status_message or "")


def record_last_synced(tables: Tables) -> list[Row]:
    """synclog_record_last_synced: per record, its last attempt and its last success."""
    sent: dict[RecordKey, list[LogRow]] = defaultdict(list)
    for r in log_rows(tables):
        if r.sent and r.identifier is not None:
            sent[r.record].append(r)
    found = []
    for (layout, sync_id, identifier), rows in sent.items():
        last = max(rows, key=_attempt_order)
        successes = [r for r in rows if r.outcome == "succeeded"]
        success = max(successes, key=_attempt_order) if successes else None
        found.append(
            {
                "layout": layout,
                "sync_id": sync_id,
                "record_identifier": identifier,
                "last_attempt_run_id": last.sync_run_id,
                "last_attempted_at": last.at,
                "last_attempt_status": last.outcome,
                "last_attempt_message": last.status_message,
                "last_attempt_invalid_reason": last.invalid_reason,
                "last_succeeded_run_id": None if success is None else success.sync_run_id,
                "last_succeeded_at": None if success is None else success.at,
            }
        )
    return found


def segment_membership(tables: Tables) -> list[Row]:
    """synclog_segment_membership: one row per stay of a record in its sync's audience."""
    horizon = retained_since(tables)
    per_run: dict[RecordKey, dict[int, list[LogRow]]] = defaultdict(lambda: defaultdict(list))
    for r in log_rows(tables):
        if r.membership is not None and r.identifier is not None:
            per_run[r.record][r.sync_run_id].append(r)
    found = []
    for (layout, sync_id, identifier), runs in per_run.items():
        verdicts = []
        for run_id, rows in runs.items():
            last_at = max(r.at for r in rows)
            at_last = {r.membership for r in rows if r.at == last_at}
            verdict = next(m for m in ("out", "in", "still") if m in at_last)
            since = min(r.at for r in rows if r.membership == verdict)
            verdicts.append((since, run_id, verdict))
        verdicts.sort()
        stay: Row | None = None
        previous: str | None = None
        for at, run_id, verdict in verdicts:
            if stay is None and verdict != "out":
                known = verdict == "in" and (
                    layout == "hightouch" or previous == "out" or horizon.get((layout, sync_id)) is None
                )
                stay = {
                    "layout": layout,
                    "sync_id": sync_id,
                    "record_identifier": identifier,
                    "first_run_id": run_id,
                    "first_seen_at": at,
                    "entered_run_id": run_id if known else None,
                    "valid_from": at if known else None,
                    "entry_retained": known,
                    "left_run_id": None,
                    "valid_to": None,
                    "is_current": True,
                }
            elif stay is not None and verdict == "out":
                found.append(stay | {"left_run_id": run_id, "valid_to": at, "is_current": False})
                stay = None
            previous = verdict
        if stay is not None:
            found.append(stay)
    return found


# -- payloads --------------------------------------------------------------------------------------


def canonical_value(value: Any) -> str | None:
    """A JSON value's one text form: NULL for JSON null; strings as JSON strings; integral
    numbers below 2^53 as integers, other numbers as a double's shortest text; arrays and
    objects as compact JSON text."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        number = float(value)
        if math.isfinite(number) and number.is_integer() and abs(number) < EXACT_INTEGERS:
            return str(int(number))
        return repr(number)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def run_payloads(tables: Tables) -> dict[RecordKey, list[tuple[datetime, int, dict[str, Any]]]]:
    """Per record, the payload each run sent it, ordered by time, then run: the run's copy sent
    last; copies sent at that same time that differ give the run no payload."""
    sent: dict[tuple[RecordKey, int], list[LogRow]] = defaultdict(list)
    for r in log_rows(tables):
        if r.sent and r.identifier is not None and r.payload is not None:
            sent[(r.record, r.sync_run_id)].append(r)
    found: dict[RecordKey, list[tuple[datetime, int, dict[str, Any]]]] = defaultdict(list)
    for (record, run_id), rows in sent.items():
        last_at = max(r.at for r in rows)
        payloads = [json.loads(r.payload) for r in rows if r.at == last_at and r.payload is not None]
        if all(p == payloads[0] for p in payloads):
            found[record].append((last_at, run_id, payloads[0]))
    for seen in found.values():
        seen.sort(key=lambda p: (p[0], p[1]))
    return found


def field_changes(tables: Tables) -> list[Row]:
    """synclog_field_changes: old → new text of each top-level field between consecutive
    payloads of a record, to and from NULL (a missing field or JSON null) too."""
    found = []
    for (layout, sync_id, identifier), seen in run_payloads(tables).items():
        for (_, before_run, before), (at, run_id, after) in itertools.pairwise(seen):
            for name in sorted(set(before) | set(after)):
                old, new = canonical_value(before.get(name)), canonical_value(after.get(name))
                if old != new:
                    found.append(
                        {
                            "layout": layout,
                            "sync_id": sync_id,
                            "record_identifier": identifier,
                            "field_name": name,
                            "previous_run_id": before_run,
                            "sync_run_id": run_id,
                            "changed_at": at,
                            "old_value": old,
                            "new_value": new,
                        }
                    )
    return found


def marts(tables: Tables, settings: Settings) -> dict[str, list[Row]]:
    """Every mart, by its name without the `synclog_` prefix."""
    return {
        "rejections": rejections(tables, settings),
        "record_last_synced": record_last_synced(tables),
        "segment_membership": segment_membership(tables),
        "run_health": run_health(tables),
        "volume_anomalies": volume_anomalies(tables, settings),
        "field_changes": field_changes(tables),
    }
