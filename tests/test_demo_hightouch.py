"""Seed 002's queries, run unchanged on the demo's DuckDB, answer what the simulator did."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.cli.demo import demo_config
from synclog.config import Config
from synclog.demo.simulator import history, records
from synclog.errors import InputError
from synclog.layouts.hightouch import CHANGELOG, RUNS, SNAPSHOT
from synclog.plugins.manager import registry
from synclog.retention import cutoff
from synclog.storage.location import Location
from synclog.targets.base import Target
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.seed_queries import SEED_002_CURRENT, SEED_002_ENTER_EXIT, SEED_002_ERRORS

SCALE = 0.02
"""The scale of the shared demo (conftest's `DEMO_SCALE`), which the expectations replay."""
RETENTION_DAYS = 7


@dataclass
class Expected:
    """What the hightouch tables must hold, replayed in plain Python from the simulator's records."""

    snapshot: dict[tuple[str, str], tuple[str, str | None]] = field(default_factory=dict)
    """(model, row id) → (status, failure reason) after the last run."""
    moves: set[tuple[str | None, str, str]] = field(default_factory=set)
    """(row id, model, added/removed) over the runs retention keeps."""
    retained_runs: set[int] = field(default_factory=set)


def expected(spark: SparkSession, now: datetime) -> Expected:
    """Apply the layout's documented rules to every simulated run, oldest first."""
    result = Expected()
    state: dict[int, dict[str, tuple[str, str | None]]] = {}
    for sim in history(now, SCALE):
        run, model = sim.run, sim.run.model_name or ""
        found = records(spark, sim, SCALE).select(
            "record_identifier", "operation", "status", "status_message"
        )
        rows = [tuple(r) for r in found.collect()]
        before = state.get(run.sync_id, {})
        after = dict(before)
        logged: list[tuple[str | None, str]] = []
        for identifier, operation, status, message in rows:
            # Invalid records keep the destination's outcome (the flag is invalid_reason).
            outcome: tuple[str, str | None] = ("failed", message) if status == "rejected" else (status, None)
            removes = operation == "delete"
            op_type = "removed" if removes else "changed" if identifier in before else "added"
            logged.append((identifier, op_type))
            if identifier is not None and removes:
                after.pop(identifier, None)
            elif identifier is not None:
                after[identifier] = outcome
        if run.full_model:
            sent = {r[0] for r in rows}
            for identifier in set(before) - sent:
                after.pop(identifier)
                logged.append((identifier, "removed"))
        state[run.sync_id] = after
        if run.started_at >= cutoff(now, RETENTION_DAYS):
            result.retained_runs.add(run.sync_run_id)
            result.moves |= {(i, model, op) for i, op in logged if op != "changed"}
    models = {sim.run.sync_id: sim.run.model_name or "" for sim in history(now, SCALE)}
    result.snapshot = {(models[s], i): o for s, rows in state.items() for i, o in rows.items()}
    return result


@dataclass(frozen=True)
class Demo:
    url: str
    now: datetime
    """The moment the demo's history was simulated up to."""
    expected: Expected


@pytest.fixture(scope="module")
def demo(spark: SparkSession, demo_folder: Path) -> Demo:
    """The session's small demo (conftest's `demo_folder`), and what it should hold."""
    url = f"duckdb:///{demo_folder / 'demo.duckdb'}"
    with registry().open(TargetURL.parse(url)) as target:
        now = _demo_now(target)
    return Demo(url, now, expected(spark, now))


def _demo_now(target: Target) -> datetime:
    """The demo's `now`, from when its first run started (runs start at fixed offsets from it)."""
    probe = datetime(2000, 1, 1, tzinfo=UTC)
    first = history(probe, SCALE)[0].run
    runs = target.relation(RUNS).render()
    found = target.query(f"SELECT started_at FROM {runs} WHERE sync_run_id = {first.sync_run_id}")
    started: datetime = found.column(0)[0].as_py()
    return started - (first.started_at - probe)


@pytest.fixture
def target(demo: Demo) -> Iterator[Target]:
    target = registry().open(TargetURL.parse(demo.url))
    yield target
    target.close()


def test_most_common_error(demo: Demo, target: Target) -> None:
    want = Counter(reason for _status, reason in demo.expected.snapshot.values() if reason is not None)
    rows = [tuple(r.values()) for r in target.query(SEED_002_ERRORS).to_pylist()]
    assert dict(rows) == dict(want)
    assert [c for _reason, c in rows] == sorted(want.values(), reverse=True)
    assert len(want) > 3, "several destinations' errors are in the snapshot"


def test_who_entered_and_who_left(demo: Demo, target: Target) -> None:
    rows = target.query(SEED_002_ENTER_EXIT).to_pylist()
    assert {(r["user_id"], r["audience"], r["type"]) for r in rows} == demo.expected.moves
    assert any(user is None for user, _audience, _type in demo.expected.moves), "NULL ids are logged"
    audiences = {audience for _user, audience, type_ in demo.expected.moves if type_ == "removed"}
    assert audiences == {"High-value customers", "Win-back cohort A"}, "mirror syncs remove rows"


def test_current_rows(demo: Demo, target: Target) -> None:
    want = {key for key, (status, _reason) in demo.expected.snapshot.items() if status != "failed"}
    rows = target.query(SEED_002_CURRENT).to_pylist()
    assert len(rows) == len(want)
    assert {(r["model_name"], r["user_id"]) for r in rows} == want
    assert [r["user_id"] for r in rows] == sorted(r["user_id"] for r in rows)


def test_sync_runs_agree_with_the_changelog(demo: Demo, target: Target) -> None:
    changelog = target.relation(CHANGELOG).render()
    counts = Counter(
        (r["sync_run_id"], r["op_type"], r["status"])
        for r in target.query(f"SELECT sync_run_id, op_type, status FROM {changelog}").to_pylist()
    )
    runs = target.query(f"SELECT * FROM {target.relation(RUNS).render()}").to_pylist()
    assert len(runs) == len(history(datetime.now(UTC), SCALE)), "sync_runs is not retained"
    checked = 0
    for run in runs:
        if run["sync_run_id"] not in demo.expected.retained_runs:
            continue
        checked += 1
        for op_type, op in (("added", "add"), ("changed", "change"), ("removed", "remove")):
            n = {s: counts[(run["sync_run_id"], op_type, s)] for s in ("succeeded", "failed", "aborted")}
            assert run[f"num_planned_{op}"] == sum(n.values())
            assert run[f"num_attempted_{op}"] == n["succeeded"] + n["failed"]
            assert run[f"num_succeeded_{op}"] == n["succeeded"]
            assert run[f"num_failed_{op}"] == n["failed"]
    assert checked == len(demo.expected.retained_runs)
    failed = [(r["sync_run_id"], r["error"]) for r in runs if r["status"] == "failed"]
    assert failed == [(8104, "Destination API quota exhausted; run stopped")]


def test_split_group_arrived_with_the_first_split_run(demo: Demo, target: Target) -> None:
    snapshot, changelog = target.relation(SNAPSHOT).render(), target.relation(CHANGELOG).render()
    columns = target.query(f"SELECT * FROM {changelog} WHERE 1 = 0").column_names
    assert columns[-1] == "split_group"
    groups = target.query(
        f"SELECT sync_run_id, COUNT(split_group) AS grouped, COUNT(*) AS n FROM {changelog} "
        "WHERE sync_id = 4567 GROUP BY sync_run_id ORDER BY sync_run_id"
    ).to_pylist()
    retained = sorted(r for r in demo.expected.retained_runs if 9200 <= r < 9300)
    assert [(r["sync_run_id"], r["grouped"] > 0) for r in groups] == [(r, r >= 9204) for r in retained]
    assert 9204 in retained and retained[0] < 9204, "runs before and after the split are kept"
    others = target.query(f"SELECT COUNT(split_group) AS n FROM {snapshot} WHERE sync_id <> 4567")
    assert others.to_pylist() == [{"n": 0}]


def test_replaying_the_latest_run_changes_nothing(demo: Demo, spark: SparkSession, tmp_path: Path) -> None:
    target = registry().open(TargetURL.parse(demo.url))
    tables = (CHANGELOG, SNAPSHOT, RUNS)

    def contents() -> dict[str, list[tuple[Any, ...]]]:
        return {
            t.name: sorted(map(str, target.query(f"SELECT * FROM {target.relation(t).render()}").to_pylist()))
            for t in tables
        }

    before = contents()
    latest = max((s for s in history(demo.now, SCALE) if s.run.sync_id == 4567), key=lambda s: s.index)
    storage = Location.parse(str(tmp_path / "storage"))
    config = demo_config(Config(storage=storage), target.capabilities.layouts)
    with SyncLog(target, config, spark) as log:
        log.write_run(latest.run, records(spark, latest, SCALE))
        assert contents() == before


def test_an_older_run_than_the_snapshot_holds_is_refused(
    demo: Demo, spark: SparkSession, tmp_path: Path
) -> None:
    target = registry().open(TargetURL.parse(demo.url))
    changelog = target.relation(CHANGELOG).render()

    def rows() -> int:
        return int(target.query(f"SELECT COUNT(*) AS n FROM {changelog}").column(0)[0].as_py())

    before = rows()
    runs = sorted((s for s in history(demo.now, SCALE) if s.run.sync_id == 4567), key=lambda s: s.index)
    older = runs[-2]
    storage = Location.parse(str(tmp_path / "storage"))
    config = demo_config(Config(storage=storage), target.capabilities.layouts)
    with SyncLog(target, config, spark) as log:
        with pytest.raises(InputError, match="which its hightouch snapshot already holds"):
            log.write_run(older.run, records(spark, older, SCALE))
        assert rows() == before
