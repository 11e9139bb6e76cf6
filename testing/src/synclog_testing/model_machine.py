"""Stateful property-based tests: random sequences of what sync engines and schedulers do, run
against a real target and compared, table by table after every step, with the reference model.

Each sequence writes three syncs (two in one organisation, one in another) whose runs share
numbers (1, 2, 3…, as a scheduler's per-sync counter gives them) and whose records share
identifiers; runs start in any order of their ids. Steps: write batches of an open run (NULL
and repeated identifiers within and across batches; as dicts, pandas or Arrow; payloads whose
fields change between writes, some oversized or non-ASCII; see `synclog_testing.model_records`),
write a batch again (also into another day), finish a run as succeeded or failed, write a whole
run at once or again, a write the contract refuses, the target going down and coming back
(`flush`), time moving on, and retention; and, as engines that a loader serves do, batches and
ends of runs queued (`synclog.storage.queue`), the loader loading what is queued, in ticks
(`synclog.loading`: many runs' writes in one job), and the loader killed in the middle of a tick
and started again (the model takes what was queued, in the order it was queued, once). A
sequence may give its target a small JSON size limit, the run store a small identifier cap, and
its third sync a payload policy. A failure shrinks to a minimal sequence, printed as the steps
that reproduce it.

Sequences share the target (each has syncs of its own) and each has storage of its own, so
a sequence costs its steps, not a new warehouse. How many run: the Hypothesis profile named by
`$SYNCLOG_MODEL_PROFILE`: `ci`, the default, runs a fixed, derandomized set and a third as many
sequences drawn fresh each run from a seed it prints (`$SYNCLOG_MODEL_SEED` draws them again);
`soak` runs many, all fresh; `mutants` runs CI's without shrinking a failure (`make mutants`).
Each situation a sequence reaches (runs of one number in two syncs, a refused run, a replay, an
outage, …) is a Hypothesis `event`; `$SYNCLOG_MODEL_STATS` counts the sequences that ran and
reached each.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, Phase, event, seed, settings
from hypothesis import strategies as st
from hypothesis.internal.observability import with_observability_callback
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pyspark.sql import SparkSession

from synclog.batches import as_arrow
from synclog.config import Config, SyncSettings
from synclog.errors import InputError, TargetError
from synclog.loading.drain import Outcome, load_tick
from synclog.loading.tick import choose
from synclog.model import Behaviour, Connection, DestinationObject, Run, RunStatus, SourceObject
from synclog.plugins.manager import registry
from synclog.privacy import PayloadPolicy
from synclog.storage import runstore
from synclog.storage.location import Location
from synclog.storage.queue import LOADER, LoadQueue, Queued, target_key
from synclog.storage.refused import Refusals
from synclog.targets.base import Target, TargetSettings
from synclog.targets.connector import Connector
from synclog.writer import SyncLog
from synclog_testing.loader_stops import KILL_POINTS, stopped_at
from synclog_testing.model_records import (
    ASCII,
    FORMS,
    MASK_KEY,
    MASK_KEY_ENV,
    POLICIES,
    SMALL_JSON_BYTES,
    UNICODE,
    batches_of,
    handed_over,
    oversized,
    shape,
)
from synclog_testing.reference import Layouts, Record, ReferenceLog, Refused
from synclog_testing.reference.observed import differences, expected, observed_tables

PROFILE_ENV = "SYNCLOG_MODEL_PROFILE"
EXAMPLES_ENV = "SYNCLOG_MODEL_SEQUENCES"
"""Sequences per target, instead of the profile's number (`make soak` sets it)."""
SEED_ENV = "SYNCLOG_MODEL_SEED"
"""The seed the fresh sequences are drawn from (else a new one each run, printed)."""
STATS_ENV = "SYNCLOG_MODEL_STATS"
"""A file each run of sequences appends one JSON line to: the sequences that ran, their steps and
the situations they reached, the seed, and whether they failed (`make soak`)."""
settings.register_profile(
    "ci",
    max_examples=8,
    stateful_step_count=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
settings.register_profile(
    "mutants",
    settings.get_profile("ci"),
    max_examples=22,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
"""More sequences than CI's, without shrinking (`make mutants`): a failure is the verdict, not a
report to read."""
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
START_DAYS_AGO = 6
"""How far before the real clock a sequence's time starts (it moves on from there)."""
SMALL_IDENTIFIER_CAP = 2
"""The run store's identifier cap in some sequences: runs of a few records go past it."""
KEY = MASK_KEY.encode()
SITUATIONS = (
    "two syncs wrote runs of one number",
    "a run refused",
    "a batch written again",
    "a finished run written again",
    "an outage",
    "time moved on",
    "retention removed rows",
    "records handed over as pandas",
    "records handed over as arrow",
    "payload fields changed between writes",
    "fields given apart from the payload",
    "an append",
    "an oversized payload",
    "a small JSON size limit",
    "a non-ASCII payload",
    "non-ASCII identifiers",
    "a payload policy",
    "a run past the run store's identifier cap",
    "a loader loaded queued batches",
    "a loader was killed in a tick and started again",
)
"""What a sequence may reach, each a Hypothesis event: `$SYNCLOG_MODEL_STATS` counts the sequences
that reached each (bench/SOAK.md)."""


def reached(situation: str) -> None:
    """Note that the running sequence reached `situation` (one of `SITUATIONS`)."""
    assert situation in SITUATIONS, situation
    event(situation)


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
    """Sequences that ran (not those Hypothesis discarded), steps taken (each checked against the
    model), and the sequences that reached each situation."""
    last_steps: int = 0
    """The steps of the sequence that ran last."""
    numbered: Iterator[int] = field(default_factory=itertools.count)
    """Numbers the sequences run on the target, whichever machine class runs them: each number
    gives a sequence syncs and storage of its own."""
    situations: Counter[str] = field(default_factory=Counter)
    """Per situation (a Hypothesis event), the sequences that ran and reached it."""


def machine_for(harness: Harness) -> type[RuleBasedStateMachine]:
    """The state machine class of one target."""
    caps = harness.target.capabilities
    now = datetime.now(UTC).replace(microsecond=0)

    class LogMachine(RuleBasedStateMachine):
        log: SyncLog
        config: Config
        queue: LoadQueue
        queued: dict[Queued, tuple[OpenRun, list[Record] | Run]]
        """What engines that a loader serves queued, not drained yet: each item's run and its
        records (a write) or the run as it ended (an end)."""

        def __init__(self) -> None:
            super().__init__()
            base = random.Random(next(harness.numbered)).randrange(10**6, 10**9) * 10  # syncs of its own
            self.syncs = [Sync(1, base + 1), Sync(1, base + 2), Sync(2, base + 3)]
            self.storage = harness.storage.child(f"sequence-{base}")
            self.down = False
            self.clock = now - timedelta(days=START_DAYS_AGO)
            """The sequence's time: runs start before it, retention runs at it; it moves on."""
            self.open_runs: list[OpenRun] = []
            self.steps = 0
            self.shapes: dict[int, set[frozenset[str]]] = {}
            """Per sync, the payload shapes its runs wrote."""
            self.restore_cap: Callable[[], None] | None = None

        def _open(self) -> Target:
            if self.down:
                raise TargetError(f"{harness.url}: the target is down (the sequence's outage)")
            opened = registry().open(harness.target.url, replace(harness.settings, storage=self.storage))
            opened.capabilities = self.caps  # the sequence's JSON size limit, if it has one
            return opened

        def teardown(self) -> None:
            harness.last_steps = self.steps
            if self.restore_cap is not None:
                self.restore_cap()
            if hasattr(self, "log"):
                self.log.close()

        # -- steps -------------------------------------------------------------------------------

        @initialize(numbers=st.lists(st.integers(1, 3), min_size=3, max_size=3), data=st.data())
        def start_a_run_of_each_sync(self, numbers: list[int], data: st.DataObject) -> None:
            """What the sequence's target and syncs are like, then each sync starts a run; their
            numbers collide as per-sync counters' do."""
            self._set_up(data)
            for sync, number in enumerate(numbers):
                self._start(sync, number, data)

        @rule(sync=st.integers(0, 2), number=st.integers(1, 4), data=st.data())
        def start_run(self, sync: int, number: int, data: st.DataObject) -> None:
            self._start(sync, number, data)

        @precondition(lambda self: self._unfinished())
        @rule(data=st.data())
        def write_batches(self, data: st.DataObject) -> None:
            run, records = self._drawn_batches(data)
            self._write(run, records, data)

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
            reached("a batch written again")
            self._write(run, records, data)

        @precondition(lambda self: self._unfinished())
        @rule(data=st.data(), status=st.sampled_from((RunStatus.SUCCEEDED, RunStatus.FAILED)))
        def finish(self, data: st.DataObject, status: RunStatus) -> None:
            run = data.draw(st.sampled_from(self._unfinished()), "run")
            ended = _ended(run.run, status)
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
                reached("a finished run written again")
            else:
                numbers = data.draw(
                    st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True), "batches"
                )
                records = data.draw(batches_of(run.run, sorted(numbers), self.identifiers), "records")
            whole = replace(run.run, finished_at=run.run.started_at + timedelta(minutes=20))
            given = self._handed_over(records, data)
            refused = self._expect(lambda: self.model.write_run(whole, records))
            self._outcome(refused, lambda: self.log.write_run(whole, given))
            if refused is None:
                self._wrote(run, records)
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
                    reached("a run refused")
                    assert refused.explains(str(exc)), f"expected {refused}, refused for: {exc}"
            else:
                raise AssertionError("a record with status 'exploded' was logged")

        @precondition(lambda self: self._unfinished())
        @rule(data=st.data())
        def queue_batches(self, data: st.DataObject) -> None:
            """An engine that a loader serves hands batches over: queued now, logged by a drain."""
            run, records = self._drawn_batches(data)
            item = self.queue.put(run.run, as_arrow(self._handed_over(records, data)), LOADER)
            self.queued[item] = (run, records)

        @precondition(lambda self: self._unfinished())
        @rule(data=st.data(), status=st.sampled_from((RunStatus.SUCCEEDED, RunStatus.FAILED)))
        def queue_the_end(self, data: st.DataObject, status: RunStatus) -> None:
            """An engine that a loader serves hands a run's end over: no more writes of it follow."""
            run = data.draw(st.sampled_from(self._unfinished()), "run")
            ended = _ended(run.run, status)
            self.queued[self.queue.put_end(ended, LOADER)] = (run, ended)
            run.finished = True  # the engine is done with it; a refusal at the drain opens it again

        @precondition(lambda self: self.queued)
        @rule()
        def the_loader_drains_the_queue(self) -> None:
            """The loader loads what is queued, tick by tick; the model takes it in queue order."""
            reached("a loader loaded queued batches")
            self._drain()

        @precondition(lambda self: self.queued)
        @rule(point=st.sampled_from(sorted(KILL_POINTS)))
        def the_loader_is_killed_in_a_tick_and_started_again(self, point: str) -> None:
            """The loader dies at `point` of its first tick (nothing of that tick is told or
            undone); a new loader, with a log of its own, loads the queue from where it is."""
            reached("a loader was killed in a tick and started again")
            try:
                with stopped_at(KILL_POINTS[point], _LoaderKilled(point)):
                    self._tick()
            except _LoaderKilled:
                pass
            self.log.close()
            self.log = SyncLog(
                Connector(harness.target.url, self.caps, self._open), self.config, harness.spark
            )
            self._drain()

        @precondition(lambda self: not self.down)
        @rule()
        def target_goes_down(self) -> None:
            reached("an outage")
            self.down, self.model.up = True, False
            self.log.connector.reset()

        @precondition(lambda self: self.down)
        @rule()
        def target_comes_back_and_flush(self) -> None:
            self.down, self.model.up = False, True
            self.model.flush()
            self.log.flush()

        @precondition(lambda self: self.clock < now)
        @rule(hours=st.integers(1, 96))
        def time_moves_on(self, hours: int) -> None:
            """Hours or days pass before the next step (never past the real clock)."""
            reached("time moved on")
            self.clock = min(self.clock + timedelta(hours=hours), now)

        @precondition(lambda self: not self.down)
        @rule()
        def cleanup(self) -> None:
            before = sum(sum(rows.values()) for rows in self.model.tables().values())
            self.model.cleanup(self.clock)
            self.log.cleanup(self.clock)
            if sum(sum(rows.values()) for rows in self.model.tables().values()) < before:
                reached("retention removed rows")

        # -- checks --------------------------------------------------------------------------------

        @invariant()
        def tables_match_the_model(self) -> None:
            self.steps += 1
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
                ((p.run.sync_id, p.run.sync_run_id), p.batches, p.finished) for p in self.log.spool.every()
            ]
            assert sorted(kept) == sorted(self.model.pending())

        # -- helpers -------------------------------------------------------------------------------

        def _drawn_batches(self, data: st.DataObject) -> tuple[OpenRun, list[Record]]:
            """An unfinished run and one or two of its batches' records, drawn."""
            run = data.draw(st.sampled_from(self._unfinished()), "run")
            numbers = data.draw(st.lists(st.integers(0, 2), min_size=1, max_size=2, unique=True), "batches")
            records = data.draw(batches_of(run.run, sorted(numbers), self.identifiers), "records")
            return run, records

        def _set_up(self, data: st.DataObject) -> None:
            """Draw what the target and the syncs are like for this sequence (a JSON size limit,
            the run store's identifier cap, a payload policy of the third sync, non-ASCII
            identifiers), then `set_up` with it."""
            json_limit = data.draw(st.sampled_from((None, SMALL_JSON_BYTES)), "JSON size limit")
            if json_limit is not None:
                reached("a small JSON size limit")
            small_cap = data.draw(st.booleans(), "a small identifier cap")
            policy = data.draw(st.sampled_from((None, None, *POLICIES)), "payload policy")
            identifiers = data.draw(st.sampled_from((ASCII, ASCII, UNICODE)), "identifiers")
            if identifiers is UNICODE:
                reached("non-ASCII identifiers")
            if policy is not None:
                reached("a payload policy")
            self.set_up(json_limit, small_cap, policy, identifiers)

        def set_up(
            self,
            json_limit: int | None = None,
            small_cap: bool = False,
            policy: PayloadPolicy | None = None,
            identifiers: tuple[str, ...] = ASCII,
        ) -> None:
            """Open the log and make the model alike, for a target and syncs like this (by
            default: the target's own JSON limit and identifier cap, no policy, ASCII)."""
            limits = [b for b in (caps.max_json_bytes, json_limit) if b is not None]
            self.caps = replace(caps, max_json_bytes=min(limits)) if limits else caps
            if small_cap:
                self.restore_cap = _small_identifier_cap(SMALL_IDENTIFIER_CAP)
            self.identifiers = identifiers
            per_sync = {self.syncs[1].sync_id: SHORT_RETENTION_DAYS}
            settings = {s: SyncSettings(layouts=caps.layouts, retention_days=d) for s, d in per_sync.items()}
            policies = {}
            if policy is not None:
                policies[self.syncs[2].sync_id] = policy
                settings[self.syncs[2].sync_id] = SyncSettings(layouts=caps.layouts, policy=policy)
            config = Config(
                defaults=SyncSettings(layouts=caps.layouts, retention_days=RETENTION_DAYS),
                syncs=settings,
                storage=self.storage,
            )
            layouts = Layouts(
                caps.layouts,
                run_metadata=caps.run_metadata_columns,
                fields_column=caps.fields_column,
                max_json_bytes=self.caps.max_json_bytes,
            )
            self.model = ReferenceLog(layouts, RETENTION_DAYS, per_sync, policies=policies, mask_key=KEY)
            self.config = config
            self.log: SyncLog = SyncLog(
                Connector(harness.target.url, self.caps, self._open), config, harness.spark
            )
            self.queue: LoadQueue = LoadQueue(self.storage, target_key(self.log.url))
            self.queued: dict[Queued, tuple[OpenRun, list[Record] | Run]] = {}
            """What engines that a loader serves queued, not drained yet: each item's run and its
            records (a write) or the run as it ended (an end)."""

        def _tick(self) -> list[Outcome]:
            """One tick of the loader over the whole queue."""
            tick = choose(self.queue, self.queue.items(), lambda _: True)
            return load_tick(self.log, self.queue, Refusals(self.storage), tick) if tick else []

        def _drain(self) -> None:
            """Ticks until the queue is empty; then the model takes every queued item, in the
            order it was queued, and each item's outcome must be what the model made of it."""
            outcomes: dict[Queued, Outcome] = {}
            while self.queue.items():
                outcomes.update((o.item, o) for o in self._tick())
            for item in sorted(self.queued, key=lambda queued: queued.seq):
                run, given = self.queued.pop(item)
                if isinstance(given, Run):
                    refused = self._expect(lambda: self.model.finish(given))  # noqa: B023
                    if refused is None:
                        run.run = given
                    else:
                        run.finished = False
                else:
                    refused = self._expect(lambda: self.model.write(run.run, given))  # noqa: B023
                    if refused is None:
                        self._wrote(run, given)
                told = outcomes.get(item)
                if told is None:  # loaded before a kill took the loader: the model had it the same
                    continue
                if refused is None:
                    assert not isinstance(told.result, InputError), (
                        f"the loader refused {item}: {told.result}"
                    )
                else:
                    assert isinstance(told.result, InputError), f"the loader took {item}: {refused}"
                    assert refused.explains(_reason(str(told.result))), f"expected {refused}: {told.result}"

        def _start(self, sync: int, number: int, data: st.DataObject) -> OpenRun:
            """Run `number` of a sync: the one started already, else a new one (at any time of the
            twelve days before the sequence's time, whatever its number: runs are ordered by
            time, not by id)."""
            key = (self.syncs[sync].sync_id, number)
            known = next((r for r in self.open_runs if self._key(r.run) == key), None)
            if known is not None:
                return known
            days_ago = data.draw(st.integers(0, 12), "days ago")
            hour = data.draw(st.integers(0, 23), "hour")
            started = (self.clock - timedelta(days=days_ago)).replace(hour=hour, minute=0, second=0)
            run = self.syncs[sync].run(
                number, min(started, self.clock - timedelta(hours=1)), data.draw(st.booleans())
            )
            opened = OpenRun(run)
            self.open_runs.append(opened)
            return opened

        def _unfinished(self, written: bool = False) -> list[OpenRun]:
            return [r for r in self.open_runs if not r.finished and (r.batches or not written)]

        def _write(self, run: OpenRun, records: list[Record], data: st.DataObject) -> None:
            given = self._handed_over(records, data)
            refused = self._expect(lambda: self.model.write(run.run, records))
            self._outcome(refused, lambda: self.log.write(run.run, given))
            if refused is None:
                self._wrote(run, records)

        def _handed_over(self, records: list[Record], data: st.DataObject) -> Any:
            form = data.draw(st.sampled_from(FORMS), "handed over as")
            if form != "dicts":
                reached(f"records handed over as {form}")
            return handed_over(records, form)

        def _wrote(self, run: OpenRun, records: list[Record]) -> None:
            """Keep what a write the model took logged, and note the situations it made."""
            run.batches.update(_by_batch(records))
            sync = run.run.sync_id
            if any(
                o.run.sync_run_id == run.run.sync_run_id and o.run.sync_id != sync and o.batches
                for o in self.open_runs
            ):
                reached("two syncs wrote runs of one number")
            shapes = self.shapes.setdefault(sync, set())
            shapes.update(shape(r) for r in records)
            if len(shapes) > 1:
                reached("payload fields changed between writes")
            for name, happened in (
                ("an append", any(r.operation == "append" for r in records)),
                ("fields given apart from the payload", any(r.fields is not None for r in records)),
                ("an oversized payload", any(oversized(r) for r in records)),
                ("a non-ASCII payload", any(not r.record_payload.isascii() for r in records)),
            ):
                if happened:
                    reached(name)
            held = {r.record_identifier for rs in run.batches.values() for r in rs} - {None}
            if self.restore_cap is not None and len(held) > SMALL_IDENTIFIER_CAP:
                reached("a run past the run store's identifier cap")

        def _expect(self, step: Callable[[], None]) -> Refused | None:
            try:
                step()
            except Refused as exc:
                reached("a run refused")
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
            syncs = [(s.org_id, s.sync_id, s.object_ids) for s in self.syncs]
            lake = None if harness.lake_root is None else harness.lake_root()
            return observed_tables(harness.target, names, syncs, harness.partition_columns, lake)

    return LogMachine


class _LoaderKilled(BaseException):
    """The loader's process ends here (a SIGKILL): nothing after it runs, no handler takes it."""


def _ended(run: Run, status: RunStatus) -> Run:
    """`run` as it ended with `status` half an hour after it started."""
    return replace(
        run,
        status=status,
        finished_at=run.started_at + timedelta(minutes=30),
        error="destination unreachable" if status is RunStatus.FAILED else None,
    )


def _reason(line: str) -> str:
    """The InputError within a loader's line of a refused write (`batch … refused: <why>; its
    records are in …`)."""
    return line.split(" refused: ", 1)[-1].rsplit("; its records are in ", 1)[0]


def _small_identifier_cap(cap: int) -> Callable[[], None]:
    """Let the run store keep at most `cap` identifier hashes a run (`runstore.RUN_IDENTIFIERS`,
    read by the driver), so a run of a few records goes past it as a run of 100,000 would; return
    what puts the store's own cap back."""
    kept = runstore.RUN_IDENTIFIERS
    runstore.RUN_IDENTIFIERS = cap

    def restore() -> None:
        runstore.RUN_IDENTIFIERS = kept

    return restore


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
    profile's number, besides the simplest sequence (which Hypothesis runs first); a derandomized
    profile's two thirds a fixed set, a third (at least one) drawn fresh from a
    seed (`$SYNCLOG_MODEL_SEED`, else a new one), which is printed and, on a failure, noted on it.
    With `$SYNCLOG_MODEL_STATS` set, append what ran, and whether it failed."""
    chosen = profile()
    wanted = os.environ.get(EXAMPLES_ENV)
    count = int(wanted) if wanted else (chosen.max_examples if examples is None else examples)
    drawn = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))
    shares: list[tuple[settings, int, int | None]] = [(chosen, count, drawn)]
    if chosen.derandomize:
        fresh = max(1, count // 3)
        shares = [(chosen, count - fresh, None), (settings(chosen, derandomize=False), fresh, drawn)]
    # Hypothesis tries the simplest sequence (the first rule at every step, with its least values)
    # before any other: one more example per run, so that `count` sequences are drawn.
    runs = [(settings(each, max_examples=share + 1), fixed) for each, share, fixed in shares if share > 0]
    again = f"{SEED_ENV}={drawn} draws them again"
    print(f"model sequences on {harness.url.split(':', 1)[0]}: fresh ones from seed {drawn} ({again})")
    started = time.perf_counter()
    failing, failure = 0, ""
    try:
        with with_observability_callback(_counting(harness)), _mask_key():
            for each, fixed in runs:
                machine = machine_for(harness)
                run_state_machine_as_test(machine if fixed is None else seed(fixed)(machine), settings=each)
    except BaseException as exc:
        failing, failure = 1, " ".join([f"{type(exc).__name__}:", *str(exc).strip().splitlines()[:1]])
        exc.add_note(f"The fresh sequences were drawn from seed {drawn}: {again}.")
        raise
    finally:
        stats = os.environ.get(STATS_ENV)
        if stats:
            line = {
                "target": harness.url.split(":", 1)[0],
                "sequences": harness.counted["sequences"],
                "steps": harness.counted["steps"],
                "situations": dict(sorted(harness.situations.items())),
                "seed": drawn,
                "failing": failing,
                "failure": failure,
                "seconds": round(time.perf_counter() - started, 1),
            }
            with open(stats, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")


def _counting(harness: Harness) -> Callable[[Any], None]:
    """An observer of Hypothesis's test cases that counts, into `harness`, the sequences that ran
    through (not those discarded or failing), their steps and the situations (events) they reached."""

    def count(observation: Any) -> None:
        if getattr(observation, "type", None) != "test_case" or observation.status != "passed":
            return
        harness.counted["sequences"] += 1
        harness.counted["steps"] += harness.last_steps
        harness.situations.update(name for name in observation.features if name in SITUATIONS)

    return count


@contextmanager
def _mask_key() -> Iterator[None]:
    """The key of the payload policies' HMAC masks in the environment, as a sync's would be."""
    kept = os.environ.get(MASK_KEY_ENV)
    os.environ[MASK_KEY_ENV] = MASK_KEY
    try:
        yield
    finally:
        if kept is None:
            del os.environ[MASK_KEY_ENV]
        else:
            os.environ[MASK_KEY_ENV] = kept
