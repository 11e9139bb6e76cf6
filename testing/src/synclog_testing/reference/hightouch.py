"""The hightouch layout (seeds 002 and 004, docs/analysts/layouts.md), in plain Python.

A finished run is compared with its sync's snapshot, row id by row id:

- `sync_changelog`: one row per record of the run, but a record that repeats its row exactly
  (same fields) and succeeds as the row did last time; op_type `removed` for a delete, `added`
  for a row the snapshot lacks, `changed` otherwise. In a run holding the whole model, a row of
  the snapshot the run lacks is `removed` with no status (it left the model; nothing was sent).
- `sync_snapshot`: one row per row id, as last known. A row the run sent takes the state of the
  run's record standing for it (`records.chosen_copy`): `added`, `changed` (other fields) or
  `unchanged`; a row the run did not send keeps its state with op_type `unchanged`; a removed
  row leaves it.
- `sync_runs`: one row per run; planned = attempted + aborted, attempted = succeeded + failed,
  per op_type, counted from the run's changelog rows; status `succeeded` or `failed`.

Runs of a sync are taken in the order they started: the run the snapshot holds last can be
finished again (it is compared with the state before it, so nothing changes), an earlier one
is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from synclog.model import Run, RunStatus, as_utc
from synclog_testing.reference.payloads import fit_json
from synclog_testing.reference.records import Logged, chosen_copy

OPS = {"added": "add", "changed": "change", "removed": "remove"}


class Refused(Exception):
    """A run the model expects `SyncLog` to refuse with an InputError: it started before the run
    its sync's snapshot holds last (`latest`)."""

    def __init__(self, sync_id: int, sync_run_id: int, latest: int) -> None:
        super().__init__(
            f"sync {sync_id}: run {sync_run_id} started before run {latest}, which the snapshot holds"
        )
        self.sync_id, self.sync_run_id, self.latest = sync_id, sync_run_id, latest

    def explains(self, message: str) -> bool:
        """Whether an InputError's `message` gives this reason: this run of this sync, refused for
        starting before the run `latest` that its hightouch snapshot holds (docs/analysts/layouts.md)."""
        said = (
            rf"^sync {self.sync_id}: run {self.sync_run_id} started at [^,]*, before run {self.latest} "
            r"\([^)]*\), which its hightouch snapshot already holds"
        )
        return re.search(said, message) is not None


def fields_hash(fields: str | None) -> str:
    """The snapshot's hash of a row's fields (JSON text as given): SHA-256, 32 hex digits."""
    return hashlib.sha256((fields or "").encode("utf-8")).hexdigest()[:32]


def status_of(r: Logged) -> str:
    """The destination's outcome in hightouch's words."""
    return {"succeeded": "succeeded", "aborted": "aborted"}.get(r.record.status, "failed")


@dataclass(frozen=True)
class SnapshotRow:
    op_type: str
    status: str | None
    failure_reason: str | None
    fields: str | None
    fields_hash: str | None
    last_sync_run_id: int | None
    invalid_reason: str | None
    error_code: str | None
    split_group: str | None


@dataclass
class SyncState:
    """One sync's hightouch tables."""

    snapshot: dict[str, SnapshotRow] = field(default_factory=dict)
    changelog: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    latest: tuple[int, datetime] | None = None
    """The run the snapshot holds last, and when it started."""
    before_latest: dict[str, SnapshotRow | None] = field(default_factory=dict)
    """The rows that run touched, as they were before it (None: not in the snapshot)."""

    def refuses(self, run: Run) -> Refused | None:
        """Why `run` cannot be finished into these tables, or None."""
        if self.latest is None or self.latest[0] == run.sync_run_id:
            return None
        if as_utc(run.started_at) < self.latest[1]:
            return Refused(run.sync_id, run.sync_run_id, self.latest[0])
        return None

    def finish(
        self, run: Run, records: list[Logged], *, fields_column: bool, max_json_bytes: int | None = None
    ) -> None:
        """Take the finished `run` whose records are `records` (their fields fitted to the target's
        JSON size limit where logged; `fields_hash` is of the fields as given)."""
        replay = self.latest is not None and self.latest[0] == run.sync_run_id
        previous = dict(self.snapshot)
        if replay:
            for row_id, before in self.before_latest.items():
                if before is None:
                    previous.pop(row_id, None)
                else:
                    previous[row_id] = before
        changelog: list[dict[str, Any]] = []
        snapshot = dict(previous)
        touched: dict[str, SnapshotRow | None] = {}
        in_run: dict[str, list[Logged]] = {}
        for r in records:
            if r.identifier is not None:
                in_run.setdefault(r.identifier, []).append(r)
            was = previous.get(r.identifier) if r.identifier is not None else None
            removes = r.record.operation == "delete"
            status = status_of(r)
            repeated = (
                was is not None
                and was.fields_hash == fields_hash(r.fields)
                and not removes
                and status == "succeeded"
                and was.status == "succeeded"
            )
            if repeated:
                continue
            op_type = "removed" if removes else ("added" if was is None else "changed")
            changelog.append(
                {
                    "sync_id": run.sync_id,
                    "sync_run_id": run.sync_run_id,
                    "op_type": op_type,
                    "row_id": r.identifier,
                    "status": status,
                    "failure_reason": r.record.status_message if status == "failed" else None,
                    "fields": fit_json(r.fields, max_json_bytes),
                    "batch_started_at": as_utc(r.record.batch_started_at),
                    "invalid_reason": r.invalid_reason,
                    "error_code": r.error_code,
                    "split_group": r.record.split_group,
                }
            )
        for row_id, copies in in_run.items():
            was = previous.get(row_id)
            touched[row_id] = was
            chosen = chosen_copy(copies)
            if chosen.record.operation == "delete":
                snapshot.pop(row_id, None)
                continue
            digest = fields_hash(chosen.fields)
            state = "added" if was is None else ("changed" if was.fields_hash != digest else "unchanged")
            status = status_of(chosen)
            snapshot[row_id] = SnapshotRow(
                op_type=state,
                status=status,
                failure_reason=chosen.record.status_message if status == "failed" else None,
                fields=fit_json(chosen.fields, max_json_bytes),
                fields_hash=digest,
                last_sync_run_id=run.sync_run_id,
                invalid_reason=chosen.invalid_reason,
                error_code=chosen.error_code,
                split_group=chosen.record.split_group,
            )
        for row_id, was in previous.items():
            if row_id in in_run:
                continue
            if run.full_model:
                touched[row_id] = was
                snapshot.pop(row_id, None)
                changelog.append(
                    {
                        "sync_id": run.sync_id,
                        "sync_run_id": run.sync_run_id,
                        "op_type": "removed",
                        "row_id": row_id,
                        "status": None,
                        "failure_reason": None,
                        "fields": was.fields,
                        "batch_started_at": as_utc(run.started_at),
                        "invalid_reason": None,
                        "error_code": None,
                        "split_group": was.split_group,
                    }
                )
            else:
                snapshot[row_id] = replace(was, op_type="unchanged")
        if not fields_column:
            for row in changelog:
                row.pop("fields")
        self.snapshot = snapshot
        self.changelog[run.sync_run_id] = changelog
        self.runs[run.sync_run_id] = runs_row(run, changelog)
        if not replay:
            self.latest = (run.sync_run_id, as_utc(run.started_at))
            self.before_latest = touched

    def snapshot_rows(self, sync_id: int, *, fields_column: bool) -> list[dict[str, Any]]:
        rows = []
        for row_id, row in self.snapshot.items():
            values = {"sync_id": sync_id, "row_id": row_id, **vars(row)}
            if not fields_column:
                values.pop("fields")
            rows.append(values)
        return rows

    def expire(self, cutoff: datetime) -> None:
        """Retention: changelog rows of batches that started before `cutoff` go."""
        for number, rows in self.changelog.items():
            self.changelog[number] = [r for r in rows if r["batch_started_at"] >= cutoff]


def runs_row(run: Run, changelog: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's `sync_runs` row, counted from its changelog rows."""
    row: dict[str, Any] = {
        "sync_id": run.sync_id,
        "sync_run_id": run.sync_run_id,
        "primary_key": run.primary_key,
        "destination": run.destination.type.split("::")[0],
        "model_name": run.model_name,
        "model_id": run.model_id,
        "status": "succeeded" if run.status is RunStatus.SUCCEEDED else "failed",
        "error": run.error,
        "started_at": as_utc(run.started_at),
        "finished_at": None if run.finished_at is None else as_utc(run.finished_at),
        "extra": json.dumps(run.extra) if run.extra else None,
    }
    for op_type, op in OPS.items():
        statuses = [r["status"] for r in changelog if r["op_type"] == op_type]
        row[f"num_planned_{op}"] = sum(s in ("succeeded", "failed", "aborted") for s in statuses)
        row[f"num_attempted_{op}"] = sum(s in ("succeeded", "failed") for s in statuses)
        row[f"num_succeeded_{op}"] = statuses.count("succeeded")
        row[f"num_failed_{op}"] = statuses.count("failed")
    return row
