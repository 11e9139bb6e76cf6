"""Crash points, enumerated: one small write, its finish and a retention, with the target's
connection failing at one statement boundary after another (`synclog_testing.crash`); each time
the target is healed, what waits is flushed and a failed retention run again, and then every
table must equal the reference model's: nothing lost, nothing doubled, each column of each
table recorded once in `synclog_versions`.

A trial starts from an empty target: two runs of one sync are logged first (one older than the
retention, one on the day the crashed write goes to, finished, so that the hightouch tables exist
without `split_group`); then the crashed steps: a run of a second sync whose number the first's
older run has, two batches on that day (one with split groups: the hightouch tables gain a column,
a view and a `synclog_versions` row), its finish, and `cleanup`. A dry pass counts the step's
boundaries and says what each is; the trials crash at each one (`SYNCLOG_CRASH_POINTS=all`), or
at a few drawn from a seed that is printed (`SYNCLOG_CRASH_SEED` draws them again; CI's default).
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import pyarrow.fs as pafs
from pyspark.sql import SparkSession

from synclog.batches import Write
from synclog.config import Config, SyncSettings
from synclog.errors import TargetError
from synclog.layouts.hightouch import BASELINE, CHANGELOG, SNAPSHOT, table_for
from synclog.layouts.registry import layout
from synclog.model import Run, RunStatus
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.targets.connector import Connector
from synclog.targets.lake import LakeTarget
from synclog.targets.sql import VERSIONS_TABLE, SqlTarget
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.base import ConformanceBase
from synclog_testing.crash import CRASH_MARK, CrashPlan, watch
from synclog_testing.model_machine import Sync
from synclog_testing.reference import Layouts, Record, ReferenceLog
from synclog_testing.reference.observed import differences, expected, observed_tables

POINTS_ENV = "SYNCLOG_CRASH_POINTS"
"""`all`: a trial at every boundary; a number: that many boundaries drawn (else the class's);
`at:61,369`: those boundaries (a failure's message names its boundary)."""
PART_ENV = "SYNCLOG_CRASH_PART"
"""`k/n` with `all`: only every n-th boundary from the k-th (1-based), a sweep run in n parts."""
SEED_ENV = "SYNCLOG_CRASH_SEED"
"""The seed the drawn boundaries come from (else a new one each run, printed)."""
RETENTION_DAYS = 7

Pick = Callable[[list[str]], list[int]]
"""Which boundaries to crash at, given what the dry pass saw at each."""


@dataclass
class CrashSite:
    """What the trials run against: how to open the target (a new connection each time), its
    settings (storage is given per trial), Spark, and what else of it to watch."""

    url: str
    open: Callable[[TargetSettings], Target]
    settings: TargetSettings
    storage: Location
    spark: SparkSession
    folder: Path
    """A local folder of the test's own, for the plan."""
    calls: Sequence[str] = ()
    """Methods of the target that reach the warehouse outside its client (`crash.watch`)."""
    partition_columns: tuple[str, ...] = ()
    trials: list[str] = field(default_factory=list)
    """What each trial crashed at, as it ran."""


class Scenario:
    """The runs, records and times of every trial, and the reference model of what they log."""

    def __init__(self, target: Target, now: datetime) -> None:
        caps = target.capabilities
        self.now = now
        self.day = (now - timedelta(days=2)).replace(hour=10, minute=0, second=0, microsecond=0)
        self.first, self.second = Sync(1, 4101), Sync(1, 4102)
        old = now - timedelta(days=RETENTION_DAYS + 3)
        self.expired = self.first.run(1, old, full_model=False)
        self.kept = self.first.run(2, self.day - timedelta(hours=1), full_model=False)
        self.crashed = self.second.run(1, self.day - timedelta(minutes=30), full_model=False)
        self.ended = replace(
            self.crashed, status=RunStatus.SUCCEEDED, finished_at=self.day + timedelta(minutes=20)
        )
        self.layouts = Layouts(
            caps.layouts,
            run_metadata=caps.run_metadata_columns,
            fields_column=caps.fields_column,
            max_json_bytes=caps.max_json_bytes,
        )
        self.config_defaults = SyncSettings(layouts=caps.layouts, retention_days=RETENTION_DAYS)

    def records(
        self, prefix: str, batch: int, started: datetime, count: int, split: str | None = None
    ) -> list[Record]:
        return [
            Record(
                f"{prefix}-{batch}-{i}",
                "upsert",
                "rejected" if i == 1 else "succeeded",
                "INVALID_EMAIL: no such address" if i == 1 else None,
                f'{{"id": "{prefix}-{i}", "seats": {i}}}',
                batch,
                started,
                started + timedelta(seconds=30),
                split_group=split,
            )
            for i in range(count)
        ]

    def model(self) -> ReferenceLog:
        """What the tables hold once every step ran."""
        model = ReferenceLog(self.layouts, RETENTION_DAYS)
        for run, records in self.setup_writes():
            model.write(run, records)
        model.write(self.crashed, self.crashed_records())
        model.finish(self.ended)
        model.cleanup(self.now)
        return model

    def setup_writes(self) -> list[tuple[Run, list[Record]]]:
        """Two runs of the first sync, left open: one older than the retention, one on the day the
        crashed write goes to."""
        return [
            (self.expired, self.records("old", 0, self.expired.started_at, 3)),
            (self.kept, self.records("kept", 0, self.day, 3)),
        ]

    def crashed_records(self) -> list[Record]:
        late = self.day + timedelta(minutes=10)
        return self.records("new", 0, self.day, 2) + self.records("new", 1, late, 2, split="treatment")

    def set_up(self, target: Target, log: SyncLog) -> None:
        """What is logged before the crashed steps (the target answers throughout): the hightouch
        tables as a sync without split groups left them, and the first sync's runs (one job)."""
        if "hightouch" in target.capabilities.layouts:
            fields = target.capabilities.fields_column
            target.ensure(
                [table_for(t, fields=fields, splits=False) for t in (CHANGELOG, SNAPSHOT, BASELINE)]
            )
        log.write_all([Write(run, [r.as_input() for r in records]) for run, records in self.setup_writes()])

    def crashed_steps(self, log: SyncLog) -> bool:
        """The write, its finish and the retention; whether the retention must run again (it
        failed: an outage). A write or finish never fails on an outage: it keeps its batches."""
        log.write(self.crashed, [r.as_input() for r in self.crashed_records()])
        log.finish(self.ended)
        try:
            log.cleanup(self.now)
        except TargetError:
            return True
        return False

    def syncs(self) -> list[tuple[int, int, Sequence[int]]]:
        return [(s.org_id, s.sync_id, s.object_ids) for s in (self.first, self.second)]


def run_crash_points(site: CrashSite, pick: Pick | None = None, sample: int = 2) -> None:
    """The dry pass, then a trial crashing at each boundary `pick` chooses from what the dry pass
    saw (by default `$SYNCLOG_CRASH_POINTS`: `all`, or that many drawn; else `sample` drawn)."""
    plan = CrashPlan.create(site.folder)
    now = datetime.now(UTC).replace(microsecond=0)
    seen = _trial(site, plan, None, now)
    print(f"crash points: the dry pass saw {len(seen)} boundaries", flush=True)
    failures = []
    chosen = (pick or drawn(sample))(seen)
    for done, at in enumerate(chosen, 1):
        started, outcome = time.monotonic(), "passed"
        try:
            _trial(site, plan, at, now, seen[at])
        except AssertionError as exc:
            failures.append(str(exc))
            outcome = "FAILED"
        took = time.monotonic() - started
        print(
            f"crash trial {done} of {len(chosen)}: boundary {at} ({seen[at]}) {outcome}, {took:.1f} s",
            flush=True,
        )
    if failures:
        raise AssertionError("\n\n".join(failures))


def drawn(sample: int) -> Pick:
    """Every boundary where `$SYNCLOG_CRASH_POINTS` is `all`; else that many (or `sample`) drawn
    from a seed (`$SYNCLOG_CRASH_SEED`, else a new one, printed) among the boundaries right after
    a call that changed the warehouse, where a step that is not atomic is cut in two and an
    acknowledgement is lost."""
    wanted = os.environ.get(POINTS_ENV, "")
    seed = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))

    def pick(seen: list[str]) -> list[int]:
        if wanted == "all":
            part, parts = map(int, os.environ.get(PART_ENV, "1/1").split("/"))
            return list(range(part - 1, len(seen), parts))
        if wanted.startswith("at:"):
            return [int(at) for at in wanted[3:].split(",") if at.strip()]
        changes = [at for at, what in enumerate(seen) if changed(what)]
        chosen = sorted(random.Random(seed).sample(changes, min(int(wanted or sample), len(changes))))
        again = f"{SEED_ENV}={seed} draws them again"
        print(f"crash points {chosen} of {len(seen)} boundaries, drawn from seed {seed} ({again})")
        return chosen

    return pick


READS = re.compile(r"^after (fetch_bound|query_bound|batches_bound|\S+ (SELECT|SHOW|LIST|DESCRIBE)\b)", re.I)
"""A boundary after a call that only read (a query, a listing)."""


def changed(what: str) -> bool:
    """Whether boundary `what` (as `CrashPlan.seen` says it) comes right after a call that may
    have changed the warehouse (a statement other than a query, a COMMIT, a file written, moved or
    deleted, a stage load)."""
    return what.startswith("after ") and not READS.match(what) and what != "after BEGIN"


def _trial(site: CrashSite, plan: CrashPlan, at: int | None, now: datetime, what: str = "") -> list[str]:
    """One trial from an empty target; what the dry pass (`at` None) saw at each boundary."""
    storage = site.storage.child(f"trial-{'dry' if at is None else at}")
    settings = replace(site.settings, storage=storage)
    plain = site.open(settings)
    scenario = Scenario(plain, now)
    try:
        empty(plain)
        plan.arm(None)

        def opened() -> Target:
            if plan.down:
                raise TargetError(f"{site.url}: the target does not answer ({CRASH_MARK})")
            target = site.open(settings)
            watch(target, plan, site.calls)
            return target

        config = Config(defaults=scenario.config_defaults, storage=storage)
        where = "the dry pass" if at is None else f"a crash at boundary {at} ({what})"
        with SyncLog(Connector(plain.url, plain.capabilities, opened), config, site.spark) as log:
            scenario.set_up(plain, log)
            plan.arm(at)
            again = scenario.crashed_steps(log)
            seen = plan.seen()
            plan.heal()
            log.flush()
            if again:
                log.cleanup(now)
            if log.spool.every():
                raise AssertionError(f"after {where}, runs still wait for the target")
        want = expected(scenario.model().tables([s for _, s, _ in scenario.syncs()]))
        lake = _lake_root(plain)
        got = observed_tables(plain, list(want), scenario.syncs(), site.partition_columns, lake)
        problems = differences(want, got) + versions_problems(plain, site.partition_columns)
        if problems:
            lines = "\n".join(problems[:30])
            raise AssertionError(f"after {where}, the log tables differ from the reference model:\n{lines}")
        return seen
    finally:
        plain.close()


def _lake_root(target: Target) -> tuple[pafs.FileSystem, str] | None:
    if not isinstance(target, LakeTarget):
        return None
    return target.location.filesystem(), target.location.root


def empty(target: Target) -> None:
    """Remove every log table, view, `synclog_versions` table and stage of `target` (the lake's
    files), so that a trial starts from nothing."""
    if isinstance(target, LakeTarget):
        target.fs.delete_dir_contents(target.location.root, missing_dir_ok=True)
        return
    if not isinstance(target, SqlTarget):
        raise TypeError(f"no way to empty a {type(target).__name__}")
    for table in _tables(target):
        relation = target.relation(table)
        for stage, _ in target.find_stages(relation):
            target.drop_stage(stage)
        if table.view and target.capabilities.views:
            target.client.execute(target.dialect.drop_view_sql(target.relation(table, table.view)))
        target.client.execute(f"DROP TABLE IF EXISTS {relation.render()}")
        target.client.execute(f"DROP TABLE IF EXISTS {relation.with_name(VERSIONS_TABLE).render()}")


def versions_problems(target: Target, partition_columns: Sequence[str] = ()) -> list[str]:
    """Where `synclog_versions` does not record each column of each log table exactly once."""
    if not isinstance(target, SqlTarget):
        return []
    problems = []
    for table in target.existing_tables(_tables(target)):
        relation = target.relation(table)
        stored = [
            c.lower() for c in target.existing_columns(relation) or () if c.lower() not in partition_columns
        ]
        versions = relation.with_name(VERSIONS_TABLE).render()
        name = target.capabilities.casefold.apply(table.name)
        rows = target.client.fetch(
            f"SELECT added_columns FROM {versions} WHERE table_name = {target.dialect.placeholder}", [name]
        )
        recorded = sorted(c.lower() for (added,) in rows for c in str(added or "").split(",") if c)
        if recorded != sorted(stored):
            problems.append(f"{versions}: {table.name} records {recorded}, the table has {sorted(stored)}")
    return problems


def _tables(target: Target) -> list[TableSpec]:
    return [target.table_spec(t) for name in target.capabilities.layouts for t in layout(name).tables]


class CrashConformance(ConformanceBase):
    """A crash at any statement boundary of a write, its finish and a retention loses and doubles
    nothing once the target is back (`synclog_testing.crash_points`)."""

    crash_calls: ClassVar[tuple[str, ...]] = ()
    """Methods of the target (dotted paths) that reach the warehouse outside its client, watched too."""
    crash_sample: ClassVar[int] = 2
    """Boundaries drawn per run where `$SYNCLOG_CRASH_POINTS` does not say."""

    def test_a_crash_at_any_statement_loses_and_doubles_nothing(
        self, target: Target, target_url: str, storage: Location, spark: SparkSession, tmp_path: Path
    ) -> None:
        site = self.crash_site(target, target_url, storage, spark, tmp_path)
        run_crash_points(site, sample=self.crash_sample)

    def crash_site(
        self, target: Target, target_url: str, storage: Location, spark: SparkSession, folder: Path
    ) -> CrashSite:
        """What the trials run against on this target."""
        kind, url = registry().for_url(target.url), TargetURL.parse(target_url)
        return CrashSite(
            target_url,
            lambda settings: kind.open(url, settings),
            self.settings,
            storage,
            spark,
            folder,
            self.crash_calls,
            self.partition_columns,
        )
