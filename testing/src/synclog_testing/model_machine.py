"""Stateful property-based tests: random sequences of what sync engines and schedulers do, run
against a real target and compared, table by table after every step, with the reference model.

Each sequence writes three syncs (two in one organisation, one in another) whose runs share
numbers (1, 2, 3…, as a scheduler's per-sync counter gives them) and whose records share
identifiers; runs start in any order of their ids. Steps: write batches of an open run (NULL
and repeated identifiers within and across batches), write a batch again (also into another
day), finish a run as succeeded or failed, write a whole run at once or again, a write the
contract refuses, the target going down and coming back (`flush`), and retention. A failure
shrinks to a minimal sequence, printed as the steps that reproduce it.

Sequences share the target (each has syncs of its own) and each has storage of its own, so
a sequence costs its steps, not a new warehouse. How many run: the Hypothesis profile named by
`$SYNCLOG_MODEL_PROFILE` (`ci`, the default: a few dozen; `soak`: many).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.errors import InputError, TargetError
from synclog.model import Behaviour, Connection, DestinationObject, Run, RunStatus, SourceObject
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.targets.connector import Connector
from synclog.writer import SyncLog
from synclog_testing.reference import Layouts, Record, ReferenceLog, Refused
from synclog_testing.reference.observed import differences, expected, lake_tables, sql_tables

PROFILE_ENV = "SYNCLOG_MODEL_PROFILE"
EXAMPLES_ENV = "SYNCLOG_MODEL_SEQUENCES"
"""Sequences per target, instead of the profile's number (`make soak` sets it)."""
STATS_ENV = "SYNCLOG_MODEL_STATS"
"""A file each run of sequences appends one JSON line to: its sequences and steps (`make soak`)."""
settings.register_profile(
    "ci",
    max_examples=24,
    stateful_step_count=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
settings.register_profile(
    "soak",
    max_examples=200,
    stateful_step_count=10,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

RETENTION_DAYS = 7
SHORT_RETENTION_DAYS = 3
"""The second sync keeps its rows for fewer days than the others."""
IDENTIFIERS = ("a", "b", "c", "d")
MESSAGES = ("INVALID_EMAIL: bad address", "rate limited", None)


@dataclass
class Sync:
    org_id: int
    sync_id: int

    def run(self, number: int, started_at: datetime, full_model: bool) -> Run:
        base = self.sync_id * 10
        return Run(
            org_id=self.org_id,
            workspace_id=self.org_id * 10,
            sync_id=self.sync_id,
            sync_run_id=number,
            primary_key="id",
            behaviour=Behaviour.MIRROR if full_model else Behaviour.UPSERT,
            source=Connection(base + 1, "Postgres::Connection", "warehouse"),
            source_object=SourceObject(
                base + 2, "DataWarehouse::Query", f"model of {self.sync_id}", model_id=7
            ),
            destination=Connection(base + 3, "Salesforce::Connection", "crm"),
            destination_object=DestinationObject(base + 4, "Salesforce::ObjectTypes::Contact", "Contact"),
            started_at=started_at,
            model_id=7,
            model_name=f"model of {self.sync_id}",
            full_model=full_model,
        )

    @property
    def object_ids(self) -> list[int]:
        return [self.sync_id * 10 + n for n in range(1, 5)]


@dataclass(repr=False)
class OpenRun:
    """A run the sequence has started: what it wrote, batch by batch, and whether it finished."""

    run: Run
    batches: dict[int, list[Record]] = field(default_factory=dict)
    finished: bool = False

    def __repr__(self) -> str:
        """Short, for shrunk sequences: which of the sequence's syncs, the run's id, its start."""
        run = self.run
        whole = ", whole model" if run.full_model else ""
        return (
            f"run {run.sync_run_id} of sync #{run.sync_id % 10} (started {run.started_at:%m-%d %H:%M}{whole})"
        )


@st.composite
def batches_of(draw: st.DrawFn, run: Run, numbers: list[int], shift_days: int = 0) -> list[Record]:
    """One to four records for each batch in `numbers`."""
    records = []
    for number in numbers:
        started = run.started_at + timedelta(minutes=number, days=shift_days)
        for _ in range(draw(st.integers(1, 4))):
            identifier = draw(st.sampled_from((*IDENTIFIERS, None)))
            status = draw(st.sampled_from(("succeeded", "succeeded", "rejected", "aborted")))
            operation = draw(st.sampled_from(("upsert", "upsert", "update", "delete", "create", "mirror")))
            version = draw(st.integers(0, 2))
            records.append(
                Record(
                    record_identifier=identifier,
                    operation=operation,
                    status=status,
                    status_message=draw(st.sampled_from(MESSAGES)) if status == "rejected" else None,
                    record_payload=json.dumps({"id": identifier, "v": version}),
                    batch_number=number,
                    batch_started_at=started,
                    batch_completed_at=started + timedelta(seconds=30),
                    split_group=draw(st.sampled_from((None, None, None, "control"))),
                    error_code=draw(st.sampled_from((None, None, "E42"))) if status == "rejected" else None,
                )
            )
    return records


@dataclass
class Harness:
    """What a sequence runs against: the target, how to open it again, Spark, where storage goes."""

    target: Target
    url: str
    settings: TargetSettings
    spark: SparkSession
    storage: Location
    lake_root: Callable[[], tuple[Any, str]] | None = None
    """For a lake: its filesystem and root."""
    partition_columns: tuple[str, ...] = ()
    """Columns the target's storage adds after a table's own (lower case), left out of the reads."""
    counted: Counter[str] = field(default_factory=Counter)
    """Sequences run and steps taken (each checked against the model)."""


def machine_for(harness: Harness) -> type[RuleBasedStateMachine]:
    """The state machine class of one target."""
    caps = harness.target.capabilities
    layouts = Layouts(caps.layouts, run_metadata=caps.run_metadata_columns, fields_column=caps.fields_column)
    sequence = itertools.count()
    now = datetime.now(UTC).replace(microsecond=0)
    counted = harness.counted

    class LogMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            counted["sequences"] += 1
            base = random.Random(next(sequence)).randrange(10**6, 10**9) * 10  # syncs of its own
            self.syncs = [Sync(1, base + 1), Sync(1, base + 2), Sync(2, base + 3)]
            per_sync = {self.syncs[1].sync_id: SHORT_RETENTION_DAYS}
            self.model = ReferenceLog(layouts, RETENTION_DAYS, per_sync)
            self.down = False
            storage = harness.storage.child(f"sequence-{base}")
            config = Config(
                defaults=SyncSettings(layouts=caps.layouts, retention_days=RETENTION_DAYS),
                syncs={s: SyncSettings(layouts=caps.layouts, retention_days=d) for s, d in per_sync.items()},
                storage=storage,
            )
            self.log = SyncLog(Connector(harness.target.url, caps, self._open), config, harness.spark)
            self.open_runs: list[OpenRun] = []

        def _open(self) -> Target:
            if self.down:
                raise TargetError(f"{harness.url}: the target is down (the sequence's outage)")
            return registry().open(
                harness.target.url, replace(harness.settings, storage=self.log.config.storage)
            )

        def teardown(self) -> None:
            self.log.close()

        # -- steps -------------------------------------------------------------------------------

        @initialize(numbers=st.lists(st.integers(1, 3), min_size=3, max_size=3), data=st.data())
        def start_a_run_of_each_sync(self, numbers: list[int], data: st.DataObject) -> None:
            """Each sync starts a run; their numbers collide as per-sync counters' do."""
            for sync, number in enumerate(numbers):
                self._start(sync, number, data)

        @rule(sync=st.integers(0, 2), number=st.integers(1, 4), data=st.data())
        def start_run(self, sync: int, number: int, data: st.DataObject) -> None:
            self._start(sync, number, data)

        @precondition(lambda self: self._unfinished())
        @rule(data=st.data())
        def write_batches(self, data: st.DataObject) -> None:
            run = data.draw(st.sampled_from(self._unfinished()), "run")
            numbers = data.draw(st.lists(st.integers(0, 2), min_size=1, max_size=2, unique=True), "batches")
            self._write(run, data.draw(batches_of(run.run, sorted(numbers)), "records"))

        @precondition(lambda self: self._unfinished(written=True))
        @rule(data=st.data(), shift_days=st.sampled_from((0, 0, 1)))
        def write_a_batch_again(self, data: st.DataObject, shift_days: int) -> None:
            """The same records again, or moved to another day (a replay days later)."""
            run = data.draw(st.sampled_from(self._unfinished(written=True)), "run")
            number = data.draw(st.sampled_from(sorted(run.batches)), "batch")
            moved = timedelta(days=shift_days)
            records = [
                replace(
                    r,
                    batch_started_at=r.batch_started_at + moved,
                    batch_completed_at=r.batch_completed_at + moved,
                )
                for r in run.batches[number]
            ]
            self._write(run, records)

        @precondition(lambda self: self._unfinished())
        @rule(data=st.data(), status=st.sampled_from((RunStatus.SUCCEEDED, RunStatus.FAILED)))
        def finish(self, data: st.DataObject, status: RunStatus) -> None:
            run = data.draw(st.sampled_from(self._unfinished()), "run")
            ended = replace(
                run.run,
                status=status,
                finished_at=run.run.started_at + timedelta(minutes=30),
                error="destination unreachable" if status is RunStatus.FAILED else None,
            )
            refused = self._expect(lambda: self.model.finish(ended))
            self._outcome(refused, lambda: self.log.finish(ended))
            if refused is None:
                run.finished, run.run = True, ended

        @rule(sync=st.integers(0, 2), number=st.integers(1, 4), data=st.data())
        def write_whole_run(self, sync: int, number: int, data: st.DataObject) -> None:
            """`write_run`: a new run at once, or a finished run written again whole."""
            run = self._start(sync, number, data)
            if run.batches and not run.finished:
                return
            if run.finished:
                records = [r for n in sorted(run.batches) for r in run.batches[n]]
            else:
                numbers = data.draw(
                    st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True), "batches"
                )
                records = data.draw(batches_of(run.run, sorted(numbers)), "records")
            whole = replace(run.run, finished_at=run.run.started_at + timedelta(minutes=20))
            refused = self._expect(lambda: self.model.write_run(whole, records))
            self._outcome(refused, lambda: self.log.write_run(whole, [r.as_input() for r in records]))
            if refused is None:
                run.batches = _by_batch(records)
                run.finished, run.run = True, whole

        @precondition(lambda self: self.open_runs)
        @rule(data=st.data())
        def write_what_the_contract_refuses(self, data: st.DataObject) -> None:
            """A record with an unknown status: an InputError, and nothing logged."""
            run = data.draw(st.sampled_from(self.open_runs), "run")
            record = Record("a", "upsert", "exploded", None, "{}", 0, run.run.started_at, run.run.started_at)
            refused = self.model.refusal(run.run)  # a run older than its snapshot's is refused first
            try:
                self.log.write(run.run, [record.as_input()])
            except InputError as exc:
                if refused is None:
                    assert "'status' has unknown value 'exploded'" in str(exc), f"refused for: {exc}"
                else:
                    assert refused.explains(str(exc)), f"expected {refused}, refused for: {exc}"
            else:
                raise AssertionError("a record with status 'exploded' was logged")

        @precondition(lambda self: not self.down)
        @rule()
        def target_goes_down(self) -> None:
            self.down, self.model.up = True, False
            self.log.connector.reset()

        @precondition(lambda self: self.down)
        @rule()
        def target_comes_back_and_flush(self) -> None:
            self.down, self.model.up = False, True
            self.model.flush()
            self.log.flush()

        @precondition(lambda self: not self.down)
        @rule()
        def cleanup(self) -> None:
            self.model.cleanup(now)
            self.log.cleanup(now)

        # -- checks --------------------------------------------------------------------------------

        @invariant()
        def tables_match_the_model(self) -> None:
            counted["steps"] += 1
            syncs = [s.sync_id for s in self.syncs]
            want = expected(self.model.tables(syncs))
            got = self._observed(list(want))
            problems = differences(want, got)
            assert not problems, "the log tables differ from the reference model:\n" + "\n".join(
                problems[:40]
            )

        @invariant()
        def what_waits_matches_the_model(self) -> None:
            kept = [
                ((p.run.sync_id, p.run.sync_run_id), p.batches, p.finished)
                for p in self.log.store.all_pending()
            ]
            assert sorted(kept) == sorted(self.model.pending())

        # -- helpers -------------------------------------------------------------------------------

        def _start(self, sync: int, number: int, data: st.DataObject) -> OpenRun:
            """Run `number` of a sync: the one started already, else a new one (at any time of the
            last twelve days, whatever its number: runs are ordered by time, not by id)."""
            key = (self.syncs[sync].sync_id, number)
            known = next((r for r in self.open_runs if self._key(r.run) == key), None)
            if known is not None:
                return known
            days_ago = data.draw(st.integers(0, 12), "days ago")
            hour = data.draw(st.integers(0, 23), "hour")
            started = (now - timedelta(days=days_ago)).replace(hour=hour, minute=0, second=0)
            run = self.syncs[sync].run(
                number, min(started, now - timedelta(hours=1)), data.draw(st.booleans())
            )
            opened = OpenRun(run)
            self.open_runs.append(opened)
            return opened

        def _unfinished(self, written: bool = False) -> list[OpenRun]:
            return [r for r in self.open_runs if not r.finished and (r.batches or not written)]

        def _write(self, run: OpenRun, records: list[Record]) -> None:
            refused = self._expect(lambda: self.model.write(run.run, records))
            self._outcome(refused, lambda: self.log.write(run.run, [r.as_input() for r in records]))
            if refused is None:
                run.batches.update(_by_batch(records))

        @staticmethod
        def _expect(step: Callable[[], None]) -> Refused | None:
            try:
                step()
            except Refused as exc:
                return exc
            return None

        @staticmethod
        def _outcome(refused: Refused | None, step: Callable[[], Any]) -> None:
            if refused is None:
                step()
                return
            try:
                step()
            except InputError as exc:
                assert refused.explains(str(exc)), f"expected {refused}, refused for: {exc}"
                return
            raise AssertionError(f"synclog took what the model refuses: {refused}")

        @staticmethod
        def _key(run: Run) -> tuple[int, int]:
            return (run.sync_id, run.sync_run_id)

        def _observed(self, names: list[str]) -> dict[str, Any]:
            if harness.lake_root is not None:
                fs, root = harness.lake_root()
                folders = [f"sync_tracking_datasets/{s.org_id}/{s.sync_id}" for s in self.syncs]
                facts = [
                    f"metadata/{s.org_id}/{table}/{object_id}.parquet"
                    for s in self.syncs
                    for table, object_id in zip(
                        ("source_objects", "destinations", "destination_objects"),
                        (s.object_ids[1], s.object_ids[2], s.object_ids[3]),
                        strict=True,
                    )
                ]
                return lake_tables(fs, root, folders, facts)
            ids = [i for s in self.syncs for i in s.object_ids]
            syncs = [s.sync_id for s in self.syncs]
            return sql_tables(harness.target, names, syncs, ids, harness.partition_columns)

    return LogMachine


def _by_batch(records: list[Record]) -> dict[int, list[Record]]:
    batches: dict[int, list[Record]] = {}
    for r in records:
        batches.setdefault(r.batch_number, []).append(r)
    return batches


def profile() -> settings:
    """The Hypothesis settings of this run (`$SYNCLOG_MODEL_PROFILE`, `ci` by default)."""
    return settings.get_profile(os.environ.get(PROFILE_ENV, "ci"))


def run_sequences(harness: Harness, examples: int | None = None) -> None:
    """Run the target's sequences: `$SYNCLOG_MODEL_SEQUENCES`, else `examples`, else the
    profile's number. With `$SYNCLOG_MODEL_STATS` set, append how many ran, and whether they failed."""
    chosen = profile()
    wanted = os.environ.get(EXAMPLES_ENV)
    count = int(wanted) if wanted else examples
    if count is not None:
        chosen = settings(chosen, max_examples=count)
    started = time.perf_counter()
    failing, failure = 0, ""
    try:
        run_state_machine_as_test(machine_for(harness), settings=chosen)
    except BaseException as exc:
        failing, failure = 1, " ".join([f"{type(exc).__name__}:", *str(exc).strip().splitlines()[:1]])
        raise
    finally:
        stats = os.environ.get(STATS_ENV)
        if stats:
            line = {
                "target": harness.url.split(":", 1)[0],
                **harness.counted,
                "failing": failing,
                "failure": failure,
                "seconds": round(time.perf_counter() - started, 1),
            }
            with open(stats, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
