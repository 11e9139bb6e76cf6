"""Eight writers at once into the same tables, with `cleanup` running meanwhile.

Writers are `fault_worker.py` processes (each its own Spark session and connections), all
started and ready before any write is sent, so the eight writes overlap: five different syncs
with one run each, and one sync with three runs. Before they start, the target holds an expired
run (30 days old, retention 7 days) and a recent one, of two other syncs; a ninth process runs
`cleanup` again and again until every writer has finished.

Checks: every writer finished (no deadlock, no error, nothing kept for flush); each run's rows
are all there, once; each sync's snapshot (hightouch layout, where written) holds each of its
identifiers once; the source objects fact table holds each sync's source object (each sync
reads its own) once; the expired run is gone and the recent one whole.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .faults import OP_TIMEOUT_S, Scenario, TrialTarget, Worker, Workers, run_of

WRITERS = 8
SYNCS = [(8101, 81011), (8102, 81021), (8103, 81031), (8104, 81041), (8105, 81051)]
SYNCS += [(8200, 82001), (8200, 82002), (8200, 82003)]
"""(sync, run) of the eight writers: five syncs with one run, one sync with three. Run ids are
unique across syncs, as Census' and Hightouch's are (the census layout replaces by run id)."""
EXPIRED = (8900, 89001)
RECENT = (8901, 89011)


@dataclass
class ConcurrencyResult:
    target: str
    writers: int
    seconds: float
    endings: list[str]
    cleanups: int
    rows: dict[str, int] = field(default_factory=dict)
    """Per check, what was found."""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def run_concurrently(
    scenario: Scenario, workers: Workers, *, count: int = 40, batches: int = 2
) -> ConcurrencyResult:
    target = scenario.fresh(f"concurrent-{int(time.time())}")
    now = datetime.now(UTC).replace(microsecond=0)

    def write(sync: int, run: int, started: datetime) -> dict[str, Any]:
        described = run_of(sync, run, started)
        # Each sync reads its own source object: the fact tables get one row per sync.
        described["source_object"] = {**described["source_object"], "id": sync, "name": f"segment {sync}"}
        return {
            "op": "write",
            "target": None,
            "config": str(target.config),
            "run": described,
            "count": count,
            "batches": batches,
            "kill_at": None,
            "cwd": str(target.folder),
        }

    for (sync, run), started in ((EXPIRED, now - timedelta(days=30)), (RECENT, now - timedelta(hours=2))):
        done = workers.recovery.call(write(sync, run, started))
        if done.get("event") != "done":
            raise RuntimeError(f"seeding failed: {done}")
    pool = [Worker(workers.env, workers.logs / f"concurrent-{i}.log") for i in range(WRITERS)]
    cleaner = Worker(workers.env, workers.logs / "concurrent-cleanup.log")
    try:
        for worker in [*pool, cleaner]:
            worker.wait_ready()
        began = time.perf_counter()
        for order, (worker, (sync, run)) in enumerate(zip(pool, SYNCS, strict=True)):
            # Runs a minute apart, in order of their ids.
            worker.send(write(sync, run, now - timedelta(hours=1) + timedelta(minutes=order)))
        finished = threading.Event()
        cleanups = _clean_until(cleaner, target, finished)
        endings = [_ending(worker.next(OP_TIMEOUT_S)) for worker in pool]
        finished.set()
        seconds = time.perf_counter() - began
        cleanups.join(timeout=OP_TIMEOUT_S)
        # One more cleanup once the writers are done: only what expired may go.
        last = _ending(workers.recovery.call({**_cleanup(target)}))
        result = ConcurrencyResult(scenario.name, WRITERS, seconds, endings, cleanups.count + 1)  # type: ignore[attr-defined]
        result.problems += [f"writer {SYNCS[i]}: {e}" for i, e in enumerate(endings) if e != "done"]
        result.problems += [f"a cleanup meanwhile: {e}" for e in cleanups.errors]  # type: ignore[attr-defined]
        if not last.startswith("done"):
            result.problems.append(f"the last cleanup: {last}")
        _check(scenario, target, result, count)
        return result
    finally:
        for worker in [*pool, cleaner]:
            worker.close()


def _cleanup(target: TrialTarget) -> dict[str, Any]:
    return {"op": "cleanup", "target": None, "config": str(target.config), "cwd": str(target.folder)}


def _clean_until(cleaner: Worker, target: TrialTarget, finished: threading.Event) -> threading.Thread:
    def loop() -> None:
        while not finished.is_set():
            event = cleaner.call(_cleanup(target))
            thread.count += 1  # type: ignore[attr-defined]
            if event.get("event") != "done":
                thread.errors.append(str(event.get("error")))  # type: ignore[attr-defined]

    thread = threading.Thread(target=loop, daemon=True)
    thread.count = 0  # type: ignore[attr-defined]
    thread.errors = []  # type: ignore[attr-defined]
    thread.start()
    return thread


def _ending(event: dict[str, Any] | None) -> str:
    if event is None:
        return "no answer"
    if event.get("event") != "done":
        return f"error: {event.get('error')}"
    return "pending" if event.get("pending") else "done"


def _check(scenario: Scenario, target: TrialTarget, result: ConcurrencyResult, count: int) -> None:
    contents = scenario.contents(target)
    runs: Counter[tuple[int, int]] = Counter()
    keys: Counter[tuple[Any, ...]] = Counter()
    snapshots: dict[int, Counter[Any]] = {}
    sources: set[int] = set()
    sources_held: Counter[int] = Counter()
    for table, rows in contents.items():
        name = table.rsplit(".", 1)[-1]
        if name in ("sync_log_records", "sync_changelog") or "/records_" in table:
            for row in rows:
                sync, run = _ids(table, row)
                runs[(sync, run)] += 1 if name != "sync_changelog" else 0
                if name == "sync_log_records":
                    keys[(row["log_id"],)] += 1
        if name == "source_objects" or "/source_objects/" in table:
            sources.update(int(row["id"]) for row in rows)
            sources_held.update(int(row["id"]) for row in rows)
        if name == "sync_snapshot":
            for row in rows:
                snapshots.setdefault(int(row["sync_id"]), Counter())[row.get("row_id")] += 1
    expected = {**{run: count for run in SYNCS}, RECENT: count}
    for run, want in expected.items():
        have = runs.get(run, 0)
        result.rows[f"run {run[0]}/{run[1]}"] = have
        if have != want:
            result.problems.append(f"run {run}: {have} record rows, expected {want}")
    want_sources = {sync for sync, _ in [*SYNCS, RECENT]}
    result.rows["source objects of the syncs"] = len(want_sources & sources)
    if want_sources - sources:
        result.problems.append(f"source_objects lacks the rows of syncs {sorted(want_sources - sources)}")
    if any(n > 1 for n in sources_held.values()):
        result.problems.append("source_objects holds a source object twice")
    result.rows[f"expired run {EXPIRED[0]}/{EXPIRED[1]}"] = runs.get(EXPIRED, 0)
    if runs.get(EXPIRED, 0):
        result.problems.append(f"the expired run still has {runs[EXPIRED]} rows")
    twice = [k for k, n in keys.items() if n > 1]
    result.rows["log_ids held twice"] = len(twice)
    if twice:
        result.problems.append(f"{len(twice)} log ids held more than once")
    for sync, held in snapshots.items():
        doubled = sum(n - 1 for n in held.values() if n > 1)
        result.rows[f"snapshot of {sync}"] = sum(held.values())
        if doubled:
            result.problems.append(f"the snapshot of sync {sync} holds {doubled} identifiers twice")


def _ids(table: str, row: dict[str, Any]) -> tuple[int, int]:
    if "sync_id" in row and "sync_run_id" in row:
        return int(row["sync_id"]), int(row["sync_run_id"])
    parts = Path(table).parts  # the lake: sync_tracking_datasets/ORG/SYNC/RUN/file
    return int(parts[-3]), int(parts[-2])
