"""The reference model of synclog's log tables: what every table must hold after any sequence
of writes, replays, finishes, outages, flushes and clean-ups.

Plain Python, written from the seeds and docs/ (docs/analysts/layouts.md, docs/engines/), not
from the writer. The rules the layouts share:

- a log row belongs to `(org_id, sync_id, sync_run_id, batch_number)`: a write touches no
  other sync's, run's or batch's rows; a batch written again replaces its earlier copy, wherever
  its new records' times fall;
- a write keeps its batches in the run store first; they reach the tables at once while the
  target answers, else they wait for `flush` (or the run's next write or `finish`), losing
  nothing; `finish` flags identifiers several batches of the run hold, loads what needs the whole
  run, and forgets the run; a `failed` run some of whose records succeeded is `partial`;
- runs of a sync are ordered by the time they started, never by their ids: where the sync
  writes the hightouch layout, a run that started before the last run its snapshot holds is
  refused before anything of it is logged;
- `cleanup(now)` removes census and changelog rows, and whole lake run folders, whose batch
  started before the start of the UTC day `retention_days` before `now`;
- a sync's payload policy rewrites its records and its runs' errors before anything else, and a
  target's JSON size limit shortens the census payloads and hightouch fields it keeps
  (`synclog_testing.reference.payloads`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, time, timedelta
from typing import Any

from synclog.model import Run, RunStatus
from synclog.privacy import PayloadPolicy
from synclog_testing.reference import census, hightouch, lake, payloads
from synclog_testing.reference.hightouch import Refused
from synclog_testing.reference.records import (
    DEFAULT_ERROR_PATTERN,
    Logged,
    Record,
    logged,
    repeated_across_batches,
)

RunKey = tuple[int, int]
"""(sync_id, sync_run_id): a run's identity (run ids are unique only within their sync)."""


@dataclass
class _Kept:
    """A run in the run store: its batches as kept, and what waits for the target."""

    run: Run
    batches: dict[int, list[Logged]] = field(default_factory=dict)
    writes: int = 0
    pending: set[int] = field(default_factory=set)
    finished: bool = False


@dataclass(frozen=True)
class Layouts:
    """What the target writes: its layouts and the capabilities that shape their rows."""

    names: tuple[str, ...]
    run_metadata: bool = True
    """The census id columns and metadata tables (`Capabilities.run_metadata_columns`)."""
    fields_column: bool = True
    """hightouch's `fields` (`Capabilities.fields_column`)."""
    max_json_bytes: int | None = None
    """The longest JSON value the census payload and the hightouch fields hold whole
    (`Capabilities.max_json_bytes`)."""


class ReferenceLog:
    """The tables one target holds, as the documented rules say, for the runs given to it."""

    def __init__(
        self,
        layouts: Layouts,
        retention_days: int = 7,
        per_sync: Mapping[int, int] | None = None,
        error_pattern: str = DEFAULT_ERROR_PATTERN,
        policies: Mapping[int, PayloadPolicy] | None = None,
        mask_key: bytes | None = None,
    ) -> None:
        self.layouts = layouts
        self.retention_days = retention_days
        self.per_sync = dict(per_sync or {})
        self.error_pattern = error_pattern
        self.policies = dict(policies or {})
        """Each sync's payload policy (none: everything is logged as given)."""
        self.mask_key = mask_key
        """The key of the policies' HMAC masks."""
        self.up = True
        self._store: dict[RunKey, _Kept] = {}
        self._census: dict[tuple[int, int, int], list[dict[str, Any]]] = {}
        self._facts: dict[tuple[str, int], dict[str, Any]] = {}
        self._census_runs: dict[RunKey, dict[str, Any]] = {}
        self._hightouch: dict[int, hightouch.SyncState] = {}
        self._lake_files: dict[str, list[dict[str, Any]]] = {}
        self._lake_metadata: dict[str, dict[str, Any]] = {}
        self._lake_facts: dict[tuple[int, str, int], dict[str, Any]] = {}

    # -- operations ----------------------------------------------------------------------------

    def write(self, run: Run, records: Sequence[Record]) -> None:
        """`SyncLog.write`: keep the batches, then load them (and what of the run waited)."""
        run, records = self._as_logged(run, records)
        key = (run.sync_id, run.sync_run_id)
        if key not in self._store:
            self._check_order(run)
        kept = self._store.setdefault(key, _Kept(run))
        if not kept.finished:  # a finished run waiting for the target keeps how it ended
            kept.run = run
        written = logged(run.sync_id, run.sync_run_id, records, self.error_pattern)
        batches: dict[int, list[Logged]] = {}
        for r in written:
            batches.setdefault(r.batch, []).append(r)
        kept.batches.update(batches)
        kept.writes += 1
        kept.pending |= set(batches)
        if self.up:
            self._load_batches(kept)

    def finish(self, run: Run) -> None:
        """`SyncLog.finish`: flag identifiers several batches hold, then load the whole run."""
        run, _ = self._as_logged(run, ())
        key = (run.sync_id, run.sync_run_id)
        kept = self._store.get(key)
        if kept is None:
            self._check_order(run)
            kept = self._store[key] = _Kept(run)
        if kept.writes > 1:
            repeated = repeated_across_batches(kept.batches)
            for number, records in kept.batches.items():
                if any(r.identifier in repeated for r in records):
                    kept.batches[number] = [
                        r.flagged("DUPLICATE") if r.identifier in repeated else r for r in records
                    ]
                    kept.pending.add(number)
        succeeded = any(r.record.status == "succeeded" for rs in kept.batches.values() for r in rs)
        if run.status is RunStatus.FAILED and succeeded:
            run = replace(run, status=RunStatus.PARTIAL)
        kept.run = run
        kept.finished = True
        if self.up:
            refusal = self._complete(kept)
            if refusal is not None:
                raise refusal

    def write_run(self, run: Run, records: Sequence[Record]) -> None:
        """`SyncLog.write_run`: `write`, then `finish`."""
        self.write(run, records)
        self.finish(run)

    def flush(self) -> None:
        """`SyncLog.flush`: load what waits, oldest run first."""
        if not self.up:
            return
        for kept in sorted(self._store.values(), key=lambda k: k.run.started_at):
            self._load_batches(kept)
            if kept.finished:
                self._complete(kept)  # a refused run stays, for the user to see in `flush`

    def cleanup(self, now: datetime) -> None:
        """`synclog cleanup` at `now`."""
        for (sync_id, sync_run_id, batch), rows in list(self._census.items()):
            cut = self._cutoff(sync_id, now)
            self._census[(sync_id, sync_run_id, batch)] = [r for r in rows if r["batch_started_at"] >= cut]
        for sync_id, state in self._hightouch.items():
            state.expire(self._cutoff(sync_id, now))
        folders: dict[str, list[str]] = {}
        for path in self._lake_files:
            folders.setdefault(path.rsplit("/", 1)[0], []).append(path)
        for folder, paths in folders.items():
            sync_id = int(folder.split("/")[2])
            newest = max(r["batch_started_at"] for p in paths for r in self._lake_files[p])
            if newest < self._cutoff(sync_id, now):
                for path in paths:
                    del self._lake_files[path]
                self._lake_metadata.pop(f"{folder}/metadata.json", None)

    # -- what the tables hold --------------------------------------------------------------------

    def tables(self, syncs: Sequence[int] | None = None) -> dict[str, Counter[tuple[tuple[str, Any], ...]]]:
        """Every table's rows (of `syncs` only, if given), as multisets of sorted (column, value)."""
        wanted = None if syncs is None else set(syncs)

        def of(sync_id: int) -> bool:
            return wanted is None or sync_id in wanted

        found: dict[str, list[dict[str, Any]]] = {}
        if "census" in self.layouts.names:
            found["census.sync_log"] = [
                r for (sync_id, _, _), rows in self._census.items() if of(sync_id) for r in rows
            ]
            found["census.synclog_runs"] = [r for (s, _), r in self._census_runs.items() if of(s)]
            if self.layouts.run_metadata:
                for table in ("source_objects", "destinations", "destination_objects"):
                    found[f"census.{table}"] = [r for (t, _), r in self._facts.items() if t == table]
        if "hightouch" in self.layouts.names:
            states = [(s, st) for s, st in self._hightouch.items() if of(s)]
            fields_column = self.layouts.fields_column
            found["hightouch.sync_changelog"] = [
                r for _, st in states for rows in st.changelog.values() for r in rows
            ]
            found["hightouch.sync_snapshot"] = [
                r for s, st in states for r in st.snapshot_rows(s, fields_column=fields_column)
            ]
            found["hightouch.sync_runs"] = [r for _, st in states for r in st.runs.values()]
        if "lake" in self.layouts.names:
            found["lake.records"] = [
                {"path": path, **r}
                for path, rows in self._lake_files.items()
                if of(int(path.split("/")[2]))
                for r in rows
            ]
            found["lake.metadata"] = [
                {"path": path, **m} for path, m in self._lake_metadata.items() if of(m["sync_id"])
            ]
            for table in ("source_objects", "destinations", "destination_objects"):
                found[f"lake.{table}"] = [
                    {"path": lake.fact_file(org, t, object_id), **r}
                    for (org, t, object_id), r in self._lake_facts.items()
                    if t == table
                ]
        return {name: Counter(tuple(sorted(r.items())) for r in rows) for name, rows in found.items()}

    def pending(self) -> list[tuple[RunKey, tuple[int, ...], bool]]:
        """What waits for the target: (run, batches, finished), oldest run first."""
        waiting = [k for k in self._store.values() if k.pending or k.finished]
        return [
            ((k.run.sync_id, k.run.sync_run_id), tuple(sorted(k.pending)), k.finished)
            for k in sorted(waiting, key=lambda k: k.run.started_at)
        ]

    # -- loading ---------------------------------------------------------------------------------

    def _as_logged(self, run: Run, records: Sequence[Record]) -> tuple[Run, list[Record]]:
        """`run` and `records` as the sync's payload policy lets them be logged."""
        policy = self.policies.get(run.sync_id)
        if policy is None:
            return run, list(records)
        run = replace(run, error=payloads.redacted(policy, run.error))
        return run, [payloads.masked(policy, self.mask_key, r) for r in records]

    def refusal(self, run: Run) -> Refused | None:
        """Why a write of `run` is refused before its records are read, or None: a run the store
        does not keep yet that is older than its sync's snapshot (checked where the target answers)."""
        if (run.sync_id, run.sync_run_id) in self._store:
            return None
        if "hightouch" not in self.layouts.names or not self.up:
            return None
        state = self._hightouch.get(run.sync_id)
        return state.refuses(run) if state is not None else None

    def _check_order(self, run: Run) -> None:
        """Raise the refusal of `run`, if it has one."""
        refusal = self.refusal(run)
        if refusal is not None:
            raise refusal

    def _load_batches(self, kept: _Kept) -> None:
        run = kept.run
        for number in sorted(kept.pending):
            records = kept.batches.get(number, [])
            if "census" in self.layouts.names:
                self._census[(run.sync_id, run.sync_run_id, number)] = [
                    census.sync_log_row(
                        r,
                        run,
                        run_metadata=self.layouts.run_metadata,
                        max_json_bytes=self.layouts.max_json_bytes,
                    )
                    for r in records
                ]
                self._census_facts(run)
            if "lake" in self.layouts.names:
                folder = f"sync_tracking_datasets/{run.org_id}/{run.sync_id}/{run.sync_run_id}/"
                for path in [p for p in self._lake_files if p.startswith(folder)]:
                    if path.endswith(f".{number}.parquet"):
                        del self._lake_files[path]
                for r in records:
                    self._lake_files.setdefault(lake.record_file(run, r), []).append(lake.record_row(r))
        kept.pending.clear()

    def _complete(self, kept: _Kept) -> Refused | None:
        """Load the whole finished run and forget it; or say why it is refused (it stays kept)."""
        run = kept.run
        self._load_batches(kept)
        records = [r for number in sorted(kept.batches) for r in kept.batches[number]]
        if "hightouch" in self.layouts.names:
            state = self._hightouch.setdefault(run.sync_id, hightouch.SyncState())
            reason = state.refuses(run)
            if reason is not None:
                return reason
            state.finish(
                run,
                records,
                fields_column=self.layouts.fields_column,
                max_json_bytes=self.layouts.max_json_bytes,
            )
        if "census" in self.layouts.names:
            self._census_facts(run)
            self._census_runs[(run.sync_id, run.sync_run_id)] = census.runs_row(run)
        if "lake" in self.layouts.names:
            payloads = [r.record.record_payload for r in records]
            self._lake_metadata[lake.metadata_file(run)] = lake.metadata(run, payloads)
            for table, fact in census.facts(run).items():
                self._lake_facts[(run.org_id, table, fact["id"])] = fact
        del self._store[(run.sync_id, run.sync_run_id)]
        return None

    def _census_facts(self, run: Run) -> None:
        if self.layouts.run_metadata:
            for table, fact in census.facts(run).items():
                self._facts[(table, fact["id"])] = fact

    def _cutoff(self, sync_id: int, now: datetime) -> datetime:
        days = self.per_sync.get(sync_id, self.retention_days)
        return datetime.combine((now - timedelta(days=days)).astimezone(UTC).date(), time(), UTC)
