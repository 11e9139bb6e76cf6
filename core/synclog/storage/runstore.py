"""The run store: validated canonical batches of runs in progress, kept until the run is loaded.

    <storage>/runs/<sync_id>/<sync_run_id>/run.json                     the run's manifest
    <storage>/runs/<sync_id>/<sync_run_id>/<write>@<owner>/<batch>-p<task>.parquet

A write's Spark tasks (`synclog.write_job`) keep their canonical rows here through a
`StoreWriter` (`synclog.storage.store_task`), one file per batch under a folder of the write's
own in each run it holds, and report each file with its row count, its records by status and how
many of them the destination accepted. Only when no row broke a rule does the driver commit
(`commit_write`): each run's `run.json` (`synclog.storage.run_state`) then names the write's
files for each batch it carries, and the files of the copies they replace are deleted. A batch
written again replaces its earlier copy; a write that fails or is refused leaves every run as it
was (`abort_write`).

The driver finds a run's files only through its manifest. What of a run still waits for the
target is the spool's (`synclog.storage.spool`), kept in the same manifest.
"""

from __future__ import annotations

import json
import posixpath
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from synclog.canonical import canonical_schema
from synclog.model import RecordStatus, Run
from synclog.payload_schema import FieldType, schema_of
from synclog.storage.files import read_frame, remove
from synclog.storage.manifest import Manifest, StoredFile
from synclog.storage.owners import tagged
from synclog.storage.run_state import RunState, RunStates, unpacked
from synclog.storage.store_task import PARTITION, RunKey, StoreWriter

RUN_IDENTIFIERS = 100_000
"""At most this many identifier hashes does `run.json` keep for a run (`RunState.identifiers`)."""


@dataclass(frozen=True)
class Written:
    """What one write put in the store for one run: its batches, each with its records by status."""

    statuses: Mapping[int, Mapping[str, int]]

    @property
    def batches(self) -> tuple[int, ...]:
        return tuple(sorted(self.statuses))

    @property
    def records(self) -> int:
        """Records kept, over every batch."""
        return sum(sum(counts.values()) for counts in self.statuses.values())

    def counted(self, batches: Iterable[int] | None = None) -> dict[str, int]:
        """Records by status of `batches` (every batch by default)."""
        total: Counter[str] = Counter()
        for number in self.batches if batches is None else batches:
            total.update(self.statuses.get(number, {}))
        return dict(total)


@dataclass
class _Committed:
    """One run's part of a write's reports, gathered for `RunStore.commit_write`."""

    files: dict[int, list[StoredFile]]
    statuses: dict[int, Counter[str]]
    accepted: Counter[int]
    types: dict[int, set[str]]
    hashes: dict[int, set[int] | None]
    held: int = 0


class RunStore:
    """Canonical batches under `<storage>/runs`, by sync and run, with a manifest per run."""

    def __init__(self, states: RunStates) -> None:
        self.states = states
        self.location = states.location

    @property
    def root(self) -> str:
        """Where the store is, as a user would name it."""
        return self.location.uri()

    def begin_write(self, run: Run) -> str:
        """A fresh folder, tagged with this process, for the files of one write of `run`."""
        stamp = f"w-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        return posixpath.join(self.states.folder(run), tagged(stamp))

    def writer(self, folders: Mapping[RunKey, str]) -> StoreWriter:
        """What each Spark task of a write uses to keep its canonical rows, under the write's
        folder of each run (`begin_write`)."""
        return StoreWriter(self.location, folders)

    def abort_write(self, folder: str) -> None:
        """Remove the files of a write that failed or was refused: the run stays as it was."""
        remove(self.location, folder)

    def commit_write(self, runs: Mapping[RunKey, Run], reports: Iterable[str]) -> dict[RunKey, Written]:
        """Make a write's files (its tasks' reports) the copies of their batches in each of `runs`;
        what the write kept of each run (a run of `runs` with no rows kept nothing)."""
        gathered: dict[RunKey, _Committed] = {}
        for report in reports:
            data = json.loads(report)
            key: RunKey = (int(data["sync"]), int(data["run"]))
            part = gathered.setdefault(key, _Committed({}, {}, Counter(), {}, {}))
            _gather(part, data)
        written: dict[RunKey, Written] = {}
        for key, run in runs.items():
            if key not in gathered:
                written[key] = Written({})
                continue
            part = gathered[key]
            if part.held > RUN_IDENTIFIERS:
                part.hashes = {}
            kept = {n: tuple(f) for n, f in part.files.items()}
            identifiers = {n: tuple(sorted(h)) for n, h in part.hashes.items() if h is not None}
            self._commit(run, kept, part.statuses, part.accepted, part.types, identifiers)
            written[key] = Written({n: dict(counts) for n, counts in part.statuses.items()})
        return written

    def _commit(
        self,
        run: Run,
        batches: Mapping[int, tuple[StoredFile, ...]],
        statuses: Mapping[int, Mapping[str, int]],
        accepted: Mapping[int, int],
        types: Mapping[int, set[str]],
        identifiers: Mapping[int, tuple[int, ...]],
    ) -> None:
        with self.states.lock:
            found = self.states.get(run)
            stale = found.batches if found is not None and found.loaded else {}
            before = found if found is not None and not found.loaded else RunState(run)
            payload_types = {n: t for n, t in before.payload_types.items() if n not in batches}
            payload_types.update({n: tuple(sorted(t)) for n, t in types.items()})
            hashes = {n: h for n, h in before.identifiers.items() if n not in batches}
            hashes.update(identifiers)
            if sum(len(h) for h in hashes.values()) > RUN_IDENTIFIERS:
                hashes = {}  # too many to keep in run.json: `finish` reads the identifiers themselves
            self.states.put(
                replace(
                    before,
                    run=before.run if before.finished else run,  # a finished run keeps how it ended
                    batches={**before.batches, **batches},
                    statuses={**before.statuses, **{n: dict(c) for n, c in statuses.items()}},
                    accepted={**before.accepted, **accepted},
                    writes=before.writes + 1,
                    payload_types=payload_types,
                    identifiers=hashes,
                )
            )
        fs = self.location.filesystem()
        replaced = [old for number in batches for old in before.batches.get(number, ())]
        for old in [*replaced, *(f for files in stale.values() for f in files)]:
            fs.delete_file(self.location.path(old.path))

    def read(self, spark: SparkSession, run: Run, batches: Iterable[int] | None = None) -> DataFrame:
        """The canonical frame of `run`'s kept batches (all of them by default)."""
        state = self.states.get(run) or RunState(run)
        wanted = state.batches if batches is None else {n: state.batches[n] for n in batches}
        manifest = Manifest(self.location, tuple(f for files in wanted.values() for f in files))
        return read_frame(spark, manifest, canonical_schema())

    def statuses(self, run: Run) -> dict[str, int]:
        """Records of `run`'s kept batches as counted (`RecordStatus.counted`); a batch written
        again counts once."""
        state = self.states.get(run)
        total: Counter[str] = Counter()
        for counts in state.statuses.values() if state else ():
            total.update(counts)
        return dict(total)

    def accepted(self, run: Run) -> int:
        """Records of `run`'s kept batches that the destination took (status `succeeded`, flagged
        or not); a batch written again counts once. A batch kept by an earlier synclog, which did
        not count them, counts its unflagged succeeded records."""
        state = self.states.get(run)
        if state is None:
            return 0
        older = {n: counts.get(RecordStatus.SUCCEEDED, 0) for n, counts in state.statuses.items()}
        return sum({**older, **state.accepted}.values())

    def identifiers(self, spark: SparkSession, run: Run) -> DataFrame | None:
        """`record_identifier` and `batch_number` of `run`'s kept batches (None: nothing kept yet).

        Only those two columns of the files are read.
        """
        state = self.states.get(run)
        if state is None or not state.batches:
            return None
        files = tuple(f for kept in state.batches.values() for f in kept)
        schema = T.StructType([canonical_schema()["record_identifier"], canonical_schema()[PARTITION]])
        return read_frame(spark, Manifest(self.location, files), schema)

    def repeated_batches(self, run: Run) -> tuple[int, ...] | None:
        """The kept batches holding an identifier hash that another kept batch holds too, from the
        hashes the writes' tasks reported; None when a batch was kept without them. Equal hashes
        of different identifiers make a batch look repeated, never the reverse."""
        state = self.states.get(run)
        if state is None or set(state.identifiers) != set(state.batches):
            return None
        holders: dict[int, set[int]] = {}
        for number, hashes in state.identifiers.items():
            for value in hashes:
                holders.setdefault(value, set()).add(number)
        return tuple(sorted({n for held in holders.values() if len(held) > 1 for n in held}))

    def payload_schema(self, run: Run) -> dict[str, FieldType] | None:
        """The payload schema of `run`'s kept batches, from the pairs their writes computed;
        None when a batch was written without them (then it takes a pass over the run)."""
        state = self.states.get(run)
        if state is None or set(state.payload_types) != set(state.batches):
            return None
        return schema_of(pair for pairs in state.payload_types.values() for pair in pairs)

    def writes(self, run: Run) -> int:
        """How many writes kept batches of `run` (see `RunState.writes`)."""
        state = self.states.get(run)
        return state.writes if state else 0

    def has(self, run: Run) -> bool:
        """Whether any batch of `run` is kept."""
        state = self.states.get(run)
        return state is not None and bool(state.batches)

    def known(self, run: Run) -> bool:
        """Whether the store holds anything of `run` (kept batches, or a pending mark)."""
        return self.states.get(run) is not None

    def loaded(self, run: Run) -> None:
        """Mark `run` loaded: the tables hold it as it ended, and its end is leaving a loader's
        queue before `drop`. Until then its end may come again (a loader stopped before it left the
        queue), and is finished again from the run's records; a write of the run, after a loader
        stopped before `drop`, starts the run afresh, as after `drop`."""
        with self.states.lock:
            state = self.states.get(run)
            if state is not None:
                self.states.put(replace(state, loaded=True, pending=(), finished=False))

    def drop(self, run: Run) -> None:
        """Forget `run` once every layout has what it needs."""
        remove(self.location, self.states.folder(run))


def _gather(part: _Committed, data: Mapping[str, Any]) -> None:
    """Add one task report (`StoreTask.close`) to its run's part of the write."""
    number = int(data["batch"])
    part.files.setdefault(number, []).append(StoredFile(data["path"], int(data["rows"])))
    part.statuses.setdefault(number, Counter()).update(data["statuses"])
    part.accepted[number] += int(data["accepted"])
    if "types" in data:
        part.types.setdefault(number, set()).update(data["types"])
    reported = unpacked(data["identifiers"]) if "identifiers" in data else None
    held = part.hashes.setdefault(number, set())
    if reported is None or held is None or part.held > RUN_IDENTIFIERS:
        part.hashes[number] = None  # and past the run's cap none are kept (`_commit`)
        return
    part.held -= len(held)
    held.update(reported)
    part.held += len(held)
