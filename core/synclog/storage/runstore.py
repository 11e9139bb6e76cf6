"""The run store: validated canonical batches of runs in progress, kept until the run is loaded.

    <storage>/runs/<sync_id>/<sync_run_id>/run.json                     the run's manifest
    <storage>/runs/<sync_id>/<sync_run_id>/<write>@<owner>/<batch>-p<task>.parquet

A write's Spark tasks (`synclog.write_job`) keep their canonical rows here through a
`StoreWriter`, one file per batch under a folder of the write's own, and report each file with
its row count, its records by status and how many of them the destination accepted. Only when
no row broke a rule does the driver commit (`commit_write`): `run.json` (which it alone writes,
replacing it whole) then names the write's files for each batch it carries, and the files of the
copies they replace are deleted. A batch written again replaces its earlier copy; a write that
fails or is refused leaves the run as it was (`abort_write`).

`run.json` also says which batches still wait for the target (`pending`) and whether the run
has finished: the store doubles as the spool that `SyncLog.flush` empties. The driver finds
the runs with something pending by listing the `run.json` files; data files are only ever
found through a manifest.

A `BackgroundLog` (`synclog.background`) queues work here too, in order: a batch
as the engine gave it, in an Arrow file of its own, before any check but its columns' (`queue`),
and a run's end (`queue_finish`). `run.json` names each queued item with the process that loads
it; what a gone process left queued, the next writer or `flush` loads. A queued batch whose
values break a rule is moved out of the run, to `<storage>/refused/<sync_id>/<sync_run_id>/`,
where it stays (nothing of it reached a log table) until someone deletes it.

    <storage>/runs/<sync_id>/<sync_run_id>/q-<id>.arrow@<owner>          a queued batch
"""

from __future__ import annotations

import base64
import contextlib
import json
import posixpath
import struct
import threading
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.ipc as ipc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from synclog.canonical import canonical_schema
from synclog.model import RecordStatus, Run
from synclog.payload_schema import FieldType, schema_of
from synclog.storage.files import PartFiles, publish, read_frame, remove
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest, StoredFile
from synclog.storage.owners import MARK, gone, owner, tagged

STATE = "run.json"
PARTITION = "batch_number"
TASK_IDENTIFIERS = 20_000
"""At most this many identifier hashes, over all its batches, does a write's task report
(`StoreTask`); a task holding more reports none, so the driver receives a bounded number per task
whatever the run's size."""
RUN_IDENTIFIERS = 100_000
"""At most this many identifier hashes does `run.json` keep for a run (`RunState.identifiers`)."""


@dataclass(frozen=True)
class Queued:
    """Work a `BackgroundLog` queued for its loads (`synclog.background`): a batch (`path`, the
    Arrow file of the records as given) or the run's end (`finished`, the run as it ended)."""

    owner: str
    """The tag of the process that loads it (`synclog.storage.owners`)."""
    path: str = ""
    batches: tuple[int, ...] = ()
    finished: Run | None = None

    @property
    def orphaned(self) -> bool:
        """Whether the process that was to load it is gone (then the next writer or `flush` does)."""
        return gone(self.owner)

    def to_dict(self) -> dict[str, object]:
        ended = self.finished.to_dict() if self.finished else None
        return {"owner": self.owner, "path": self.path, "batches": list(self.batches), "finished": ended}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Queued:
        ended = data.get("finished")
        return cls(
            owner=str(data["owner"]),
            path=str(data.get("path", "")),
            batches=tuple(int(n) for n in data.get("batches", ())),
            finished=Run.from_dict(ended) if isinstance(ended, dict) else None,
        )


@dataclass(frozen=True)
class Pending:
    """Batches of a run that a target could not take yet, whether the run has finished, and what
    gone processes left queued for it."""

    run: Run
    batches: tuple[int, ...]
    finished: bool
    refused: str | None = None
    """Why a layout refused the finished run (an InputError), where one did: it stays kept."""
    queued: tuple[Queued, ...] = ()


@dataclass(frozen=True)
class RunState:
    """What `run.json` holds: the run, its batches' files, and what waits for the target."""

    run: Run
    batches: Mapping[int, tuple[StoredFile, ...]] = field(default_factory=dict)
    pending: tuple[int, ...] = ()
    finished: bool = False
    statuses: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    """Per kept batch, its records as counted (`RecordStatus.counted`)."""
    accepted: Mapping[int, int] = field(default_factory=dict)
    """Per kept batch, its records the destination took (status `succeeded`, flagged or not)."""
    writes: int = 0
    """How many writes kept batches of the run: with more than one, `finish` looks for identifiers
    that several batches hold (see `SyncLog.finish`)."""
    payload_types: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """Per kept batch whose write computed them, its payloads' `field_types` pairs."""
    refused: str | None = None
    """Why a layout refused the finished run (see `Pending.refused`)."""
    identifiers: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    """Per kept batch whose write's tasks reported them, the hashes of its identifiers (a run's
    few: see `RUN_IDENTIFIERS`)."""
    queued: tuple[Queued, ...] = ()
    """What waits for a `BackgroundLog`'s load, in order (`synclog.background`)."""

    def to_json(self) -> str:
        batches = {str(n): [vars(f) for f in files] for n, files in self.batches.items()}
        state = {"run": self.run.to_dict(), "batches": batches, "pending": list(self.pending)}
        statuses = {str(n): dict(counts) for n, counts in self.statuses.items()}
        types = {str(n): list(pairs) for n, pairs in self.payload_types.items()}
        extra = {"finished": self.finished, "statuses": statuses, "writes": self.writes}
        extra["accepted"] = {str(n): count for n, count in self.accepted.items()}
        extra["payload_types"] = types
        extra["refused"] = self.refused
        extra["identifiers"] = {str(n): _packed(hashes) for n, hashes in self.identifiers.items()}
        extra["queued"] = [item.to_dict() for item in self.queued]
        return json.dumps({**state, **extra})

    @classmethod
    def from_json(cls, text: str) -> RunState:
        data = json.loads(text)
        return cls(
            run=Run.from_dict(data["run"]),
            batches={
                int(n): tuple(StoredFile(f["path"], int(f["rows"])) for f in files)
                for n, files in data["batches"].items()
            },
            pending=tuple(data["pending"]),
            finished=bool(data["finished"]),
            statuses={int(n): dict(counts) for n, counts in data.get("statuses", {}).items()},
            accepted={int(n): int(count) for n, count in data.get("accepted", {}).items()},
            writes=int(data.get("writes", 2)),  # unknown: check the run at finish
            payload_types={int(n): tuple(pairs) for n, pairs in data.get("payload_types", {}).items()},
            refused=data.get("refused"),
            identifiers={int(n): _unpacked(hashes) for n, hashes in data.get("identifiers", {}).items()},
            queued=tuple(Queued.from_dict(item) for item in data.get("queued", ())),
        )


@dataclass(frozen=True)
class Written:
    """What one write put in the store: its batches, and its records by status."""

    batches: tuple[int, ...]
    statuses: dict[str, int]


class RunStore:
    """Canonical batches under `<storage>/runs`, by sync and run, with a manifest per run."""

    def __init__(self, storage: Location) -> None:
        self.location = storage.child("runs")
        self.refused = storage.child("refused")
        """Where a queued batch whose values break a rule is kept (`refuse`)."""
        self._lock = threading.RLock()
        """Held while `run.json` is read and replaced: the engine's thread queues while the loads
        behind it commit."""

    @property
    def root(self) -> str:
        """Where the store is, as a user would name it."""
        return self.location.uri()

    def _run_dir(self, run: Run) -> str:
        return f"{run.sync_id}/{run.sync_run_id}"

    def begin_write(self, run: Run) -> str:
        """A fresh folder, tagged with this process, for the files of one write of `run`."""
        stamp = f"w-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        return posixpath.join(self._run_dir(run), tagged(stamp))

    def writer(self, folder: str) -> StoreWriter:
        """What each Spark task of a write uses to keep its canonical rows under `folder`."""
        return StoreWriter(self.location, folder)

    def abort_write(self, folder: str) -> None:
        """Remove the files of a write that failed or was refused: the run stays as it was."""
        remove(self.location, folder)

    def commit_write(self, run: Run, reports: Iterable[str]) -> Written:
        """Make a write's files (its tasks' `StoreWriter` reports) the run's copies of their batches."""
        files: dict[int, list[StoredFile]] = {}
        per_batch: dict[int, Counter[str]] = {}
        accepted: Counter[int] = Counter()
        types: dict[int, set[str]] = {}
        hashes: dict[int, set[int] | None] = {}
        held_in_all = 0
        for report in reports:
            data = json.loads(report)
            number = int(data["batch"])
            files.setdefault(number, []).append(StoredFile(data["path"], int(data["rows"])))
            per_batch.setdefault(number, Counter()).update(data["statuses"])
            accepted[number] += int(data["accepted"])
            if "types" in data:
                types.setdefault(number, set()).update(data["types"])
            reported = _unpacked(data["identifiers"]) if "identifiers" in data else None
            held = hashes.setdefault(number, set())
            if reported is None or held is None or held_in_all > RUN_IDENTIFIERS:
                hashes[number] = None  # and past the run's cap none are kept (`_commit`)
                continue
            held_in_all -= len(held)
            held.update(reported)
            held_in_all += len(held)
        if held_in_all > RUN_IDENTIFIERS:
            hashes = {}
        kept = {n: tuple(f) for n, f in files.items()}
        identifiers = {n: tuple(sorted(h)) for n, h in hashes.items() if h is not None}
        self._commit(run, kept, per_batch, accepted, types, identifiers)
        return Written(tuple(sorted(files)), dict(sum(per_batch.values(), Counter())))

    def _commit(
        self,
        run: Run,
        batches: Mapping[int, tuple[StoredFile, ...]],
        statuses: Mapping[int, Mapping[str, int]],
        accepted: Mapping[int, int],
        types: Mapping[int, set[str]],
        identifiers: Mapping[int, tuple[int, ...]],
    ) -> None:
        with self._lock:
            before = self.state(run) or RunState(run)
            payload_types = {n: t for n, t in before.payload_types.items() if n not in batches}
            payload_types.update({n: tuple(sorted(t)) for n, t in types.items()})
            hashes = {n: h for n, h in before.identifiers.items() if n not in batches}
            hashes.update(identifiers)
            if sum(len(h) for h in hashes.values()) > RUN_IDENTIFIERS:
                hashes = {}  # too many to keep in run.json: `finish` reads the identifiers themselves
            self._save(
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
        for number in batches:
            for old in before.batches.get(number, ()):
                fs.delete_file(self.location.path(old.path))

    def read(self, spark: SparkSession, run: Run, batches: Iterable[int] | None = None) -> DataFrame:
        """The canonical frame of `run`'s kept batches (all of them by default)."""
        state = self.state(run) or RunState(run)
        wanted = state.batches if batches is None else {n: state.batches[n] for n in batches}
        manifest = Manifest(self.location, tuple(f for files in wanted.values() for f in files))
        return read_frame(spark, manifest, canonical_schema())

    def statuses(self, run: Run) -> dict[str, int]:
        """Records of `run`'s kept batches as counted (`RecordStatus.counted`); a batch written
        again counts once."""
        state = self.state(run)
        total: Counter[str] = Counter()
        for counts in state.statuses.values() if state else ():
            total.update(counts)
        return dict(total)

    def accepted(self, run: Run) -> int:
        """Records of `run`'s kept batches that the destination took (status `succeeded`, flagged
        or not); a batch written again counts once. A batch kept by an earlier synclog, which did
        not count them, counts its unflagged succeeded records."""
        state = self.state(run)
        if state is None:
            return 0
        older = {n: counts.get(RecordStatus.SUCCEEDED, 0) for n, counts in state.statuses.items()}
        return sum({**older, **state.accepted}.values())

    def identifiers(self, spark: SparkSession, run: Run) -> DataFrame | None:
        """`record_identifier` and `batch_number` of `run`'s kept batches (None: nothing kept yet).

        Only those two columns of the files are read.
        """
        state = self.state(run)
        if state is None or not state.batches:
            return None
        files = tuple(f for kept in state.batches.values() for f in kept)
        schema = T.StructType([canonical_schema()["record_identifier"], canonical_schema()[PARTITION]])
        return read_frame(spark, Manifest(self.location, files), schema)

    def repeated_batches(self, run: Run) -> tuple[int, ...] | None:
        """The kept batches holding an identifier hash that another kept batch holds too, from the
        hashes the writes' tasks reported; None when a batch was kept without them. Equal hashes
        of different identifiers make a batch look repeated, never the reverse."""
        state = self.state(run)
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
        state = self.state(run)
        if state is None or set(state.payload_types) != set(state.batches):
            return None
        return schema_of(pair for pairs in state.payload_types.values() for pair in pairs)

    def writes(self, run: Run) -> int:
        """How many writes kept batches of `run` (see `RunState.writes`)."""
        state = self.state(run)
        return state.writes if state else 0

    def has(self, run: Run) -> bool:
        """Whether any batch of `run` is kept."""
        state = self.state(run)
        return state is not None and bool(state.batches)

    def drop(self, run: Run) -> None:
        """Forget `run` once every layout has what it needs."""
        remove(self.location, self._run_dir(run))

    def mark_pending(
        self, run: Run, batches: Iterable[int], *, finished: bool, refused: str | None = None
    ) -> Pending:
        """Remember that `batches` (added to those already pending) still wait for the target,
        and that the run has finished (as `run` says); `refused` says why a layout refused it."""
        with self._lock:
            state = self.state(run) or RunState(run)
            state = replace(
                state,
                run=run if finished else state.run,
                pending=tuple(sorted({*batches, *state.pending})),
                finished=finished or state.finished,
                refused=refused,
            )
            self._save(state)
        return _pending(state) or Pending(state.run, state.pending, state.finished)

    def pending_of(self, run: Run) -> Pending | None:
        """What of `run` still waits for the target, if anything."""
        return _pending(self.state(run))

    def all_pending(self) -> list[Pending]:
        """Every run with something waiting for the target, or queued by a gone process, oldest
        run first."""
        found = [_pending(self._load(path)) for path in self._state_files()]
        return sorted((p for p in found if p), key=lambda p: p.run.started_at)

    def clear_pending(self, run: Run) -> None:
        """The target has every batch of `run` that was waiting (a finished run's run-level
        tables still wait, until `drop`)."""
        with self._lock:
            state = self.state(run)
            if state is not None and state.pending:
                self._save(replace(state, pending=()))

    # -- queued for the loads behind the engine ------------------------------------------------

    def queue(self, run: Run, records: pa.Table) -> Queued:
        """Keep `records` (one write's batches, as given) for a load behind the engine; durable
        when this returns."""
        numbers = pc.unique(records.column(PARTITION)).drop_null().to_pylist() if records.num_rows else []
        name = f"q-{uuid.uuid4().hex[:12]}.arrow{MARK}{owner()}"
        path = posixpath.join(self._run_dir(run), name)

        def write(stream: pa.NativeFile) -> None:
            with ipc.new_file(stream, records.schema) as out:
                out.write_table(records)

        publish(self.location.filesystem(), self.location.path(path), write)
        item = Queued(owner(), path, tuple(sorted(int(n) for n in numbers)))
        self._enqueue(run, item)
        return item

    def queue_finish(self, run: Run) -> Queued:
        """Keep `run`, ended, for its finish behind the engine; durable when this returns."""
        item = Queued(owner(), finished=run)
        self._enqueue(run, item)
        return item

    def _enqueue(self, run: Run, item: Queued) -> None:
        with self._lock:
            state = self.state(run) or RunState(run)
            self._save(replace(state, queued=(*state.queued, item)))

    def read_queued(self, item: Queued) -> pa.Table:
        """The records of a queued batch."""
        with self.location.filesystem().open_input_file(self.location.path(item.path)) as handle:
            return ipc.open_file(handle).read_all()

    def dequeue(self, run: Run, item: Queued) -> None:
        """`item` is done with: forget it (and its file)."""
        with self._lock:
            state = self.state(run)
            if state is not None and item in state.queued:
                self._save(replace(state, queued=tuple(q for q in state.queued if q != item)))
        if item.path:
            with contextlib.suppress(FileNotFoundError):
                self.location.filesystem().delete_file(self.location.path(item.path))

    def refuse(self, run: Run, item: Queued) -> str:
        """Move a queued batch whose values break a rule out of the run, into `refused/`; where
        it is kept now, as a user would name it."""
        kept = posixpath.join(self._run_dir(run), posixpath.basename(item.path).partition(MARK)[0])
        fs = self.location.filesystem()
        self.refused.filesystem().create_dir(self.refused.path(self._run_dir(run)), recursive=True)
        fs.move(self.location.path(item.path), self.refused.path(kept))
        with self._lock:
            state = self.state(run)
            if state is not None:
                self._save(replace(state, queued=tuple(q for q in state.queued if q != item)))
        return self.refused.uri(kept)

    def queued_of(self, run: Run) -> tuple[Queued, ...]:
        """What waits for a load behind the engine for `run`, in order."""
        state = self.state(run)
        return state.queued if state else ()

    def state(self, run: Run) -> RunState | None:
        """`run`'s manifest, or None when the store holds nothing of it."""
        return self._load(self.location.path(posixpath.join(self._run_dir(run), STATE)))

    def _save(self, state: RunState) -> None:
        data = state.to_json().encode()
        path = self.location.path(posixpath.join(self._run_dir(state.run), STATE))
        publish(self.location.filesystem(), path, lambda stream: stream.write(data))

    def _load(self, path: str) -> RunState | None:
        fs = self.location.filesystem()
        try:
            with fs.open_input_stream(path) as stream:
                return RunState.from_json(stream.read().decode())
        except FileNotFoundError:
            return None

    def _state_files(self) -> Iterator[str]:
        """Every `<sync>/<run>/run.json`, from one listing of the whole store (some object stores,
        the GCS emulator, list no folders one level down)."""
        fs = self.location.filesystem()
        found = fs.get_file_info(pafs.FileSelector(self.location.root, allow_not_found=True, recursive=True))
        for info in found:
            inside = posixpath.relpath(info.path, self.location.root).split("/")
            if info.type == pafs.FileType.File and len(inside) == 3 and inside[2] == STATE:
                yield info.path


def _packed(hashes: tuple[int, ...]) -> str:
    """Identifier hashes as run.json keeps them: base64 of their 8-byte little-endian forms (a
    run's 100,000 read and written in a millisecond or two, not as many JSON numbers)."""
    return base64.b64encode(struct.pack(f"<{len(hashes)}q", *hashes)).decode()


def _unpacked(text: str) -> tuple[int, ...]:
    data = base64.b64decode(text)
    return struct.unpack(f"<{len(data) // 8}q", data)


def _pending(state: RunState | None) -> Pending | None:
    orphans = tuple(item for item in state.queued if item.orphaned) if state else ()
    if state is None or not (state.pending or state.finished or orphans):
        return None
    return Pending(state.run, state.pending, state.finished, refused=state.refused, queued=orphans)


@dataclass(frozen=True)
class StoreWriter:
    """The run store's side of a write's Spark tasks: one file per batch number and task.

    Pickled to the executors; `open` gives the task's writer, whose `close` reports each file
    (batch, path, rows, records by status) as one JSON text for `RunStore.commit_write`.
    """

    location: Location
    folder: str

    def open(self, part: int) -> StoreTask:
        schema = to_arrow_schema(canonical_schema(), timezone="UTC")
        return StoreTask(PartFiles(self.location, self.folder, schema, part))


class StoreTask:
    """One task's run-store files (see `StoreWriter`)."""

    def __init__(self, files: PartFiles) -> None:
        self.files = files
        self.counts: dict[str, Counter[str]] = {}
        self.accepted: Counter[str] = Counter()
        self.types: dict[str, set[str]] = {}
        self.hashes: dict[str, set[int] | None] = {}
        self.held = 0
        """How many hashes the task holds; past `TASK_IDENTIFIERS` it reports none."""

    def write(
        self, batch: pa.RecordBatch, payload_types: pa.Array | None = None, hashes: pa.Array | None = None
    ) -> None:
        """Keep canonical rows, split by batch number; `payload_types` (the rows' `field_types`)
        and `hashes` (of their identifiers; up to `TASK_IDENTIFIERS` in all) are reported per batch."""
        column = batch.column(PARTITION)
        for number in pc.unique(column).to_pylist():
            chosen = pc.equal(column, number)
            rows = batch.filter(chosen)
            key = str(number)
            self.files.write(key, rows)
            statuses = rows.column("status")
            outcomes = zip(statuses.to_pylist(), rows.column("invalid_reason").to_pylist(), strict=True)
            self.counts.setdefault(key, Counter()).update(RecordStatus.counted(*o).value for o in outcomes)
            self.accepted[key] += pc.sum(pc.equal(statuses, RecordStatus.SUCCEEDED.value)).as_py() or 0
            if payload_types is not None:
                pairs = pc.unique(pc.list_flatten(payload_types.filter(chosen))).to_pylist()
                self.types.setdefault(key, set()).update(pairs)
            held = self.hashes.setdefault(key, set())
            if hashes is None or held is None or self.held > TASK_IDENTIFIERS:
                self.hashes[key] = None
                continue
            self.held -= len(held)
            held.update(pc.unique(hashes.filter(chosen)).drop_null().to_pylist())
            self.held += len(held)
            if self.held > TASK_IDENTIFIERS:
                self.hashes = dict.fromkeys(self.hashes)

    def close(self) -> list[str]:
        """Publish the files; one report per file."""
        reports = []
        for key, path, rows in self.files.close():
            report = {"batch": int(key), "path": path, "rows": rows, "statuses": self.counts[key]}
            report["accepted"] = self.accepted[key]
            if key in self.types:
                report["types"] = sorted(self.types[key])
            held = self.hashes.get(key)
            if held is not None:
                report["identifiers"] = _packed(tuple(sorted(held)))
            reports.append(json.dumps(report))
        return reports

    def abort(self) -> None:
        """Drop the unfinished files."""
        self.files.abort()
