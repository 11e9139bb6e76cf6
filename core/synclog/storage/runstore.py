"""The run store: validated canonical batches of runs in progress, kept until the run is loaded.

    <storage>/runs/<sync_id>/<sync_run_id>/run.json                     the run's manifest
    <storage>/runs/<sync_id>/<sync_run_id>/<write>@<owner>/<batch>-p<task>.parquet

One write is one Spark job: the executors validate the canonical rows, write them per batch
under a folder of the write's own, and report each file with its row count, status counts and
the first rule broken. Only when no row broke a rule does the driver commit: `run.json` (which
it alone writes, replacing it whole) then names the write's files for each batch it carries,
and the files of the copies they replace are deleted. A batch written again replaces its
earlier copy; a write that fails or is refused leaves the run as it was.

`run.json` also says which batches still wait for the target (`pending`) and whether the run
has finished: the store doubles as the spool that `SyncLog.flush` empties. The driver finds
the runs with something pending by listing the `run.json` files; data files are only ever
found through a manifest.
"""

from __future__ import annotations

import json
import posixpath
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from synclog.canonical import canonical_schema
from synclog.errors import InputError
from synclog.model import Run
from synclog.records import VIOLATION, raise_violation
from synclog.storage.files import PartFiles, publish, read_frame, remove, task_number, unreadable_file
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest, StoredFile
from synclog.storage.owners import tagged

STATE = "run.json"
PARTITION = "batch_number"
_RESULT = "key string, path string, rows long, statuses string, violation string"
_RESULT_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("path", pa.string()),
        ("rows", pa.int64()),
        ("statuses", pa.string()),
        ("violation", pa.string()),
    ]
)


@dataclass(frozen=True)
class Pending:
    """Batches of a run that a target could not take yet, and whether the run has finished."""

    run: Run
    batches: tuple[int, ...]
    finished: bool


@dataclass(frozen=True)
class RunState:
    """What `run.json` holds: the run, its batches' files, and what waits for the target."""

    run: Run
    batches: Mapping[int, tuple[StoredFile, ...]] = field(default_factory=dict)
    pending: tuple[int, ...] = ()
    finished: bool = False
    statuses: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    """Per kept batch, its records by canonical status."""

    def to_json(self) -> str:
        batches = {str(n): [vars(f) for f in files] for n, files in self.batches.items()}
        state = {"run": self.run.to_dict(), "batches": batches, "pending": list(self.pending)}
        statuses = {str(n): dict(counts) for n, counts in self.statuses.items()}
        return json.dumps({**state, "finished": self.finished, "statuses": statuses})

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

    @property
    def root(self) -> str:
        """Where the store is, as a user would name it."""
        return self.location.uri()

    def _run_dir(self, run: Run) -> str:
        return f"{run.sync_id}/{run.sync_run_id}"

    def write(self, run: Run, canonical: DataFrame) -> Written:
        """Validate and keep the batches of `canonical` (with its `VIOLATION` column).

        Raises the InputError of the first violation found, having kept nothing.
        """
        folder = posixpath.join(
            self._run_dir(run), tagged(f"w-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}")
        )
        try:
            try:
                done = canonical.mapInArrow(_batch_writer(self.location, folder), _RESULT).collect()
            except Exception as exc:
                unreadable = unreadable_file(exc)
                if unreadable is None:
                    raise
                raise InputError(f"cannot read records {unreadable}") from None
            violations = sorted(row["violation"] for row in done if row["violation"])
            if violations:
                raise_violation(violations[0])
        except BaseException:
            remove(self.location, folder)
            raise
        files: dict[int, list[StoredFile]] = {}
        per_batch: dict[int, Counter[str]] = {}
        for row in done:
            number = int(row["key"])
            files.setdefault(number, []).append(StoredFile(row["path"], row["rows"]))
            per_batch.setdefault(number, Counter()).update(json.loads(row["statuses"]))
        self._commit(run, {n: tuple(f) for n, f in files.items()}, per_batch)
        return Written(tuple(sorted(files)), dict(sum(per_batch.values(), Counter())))

    def _commit(
        self,
        run: Run,
        batches: Mapping[int, tuple[StoredFile, ...]],
        statuses: Mapping[int, Mapping[str, int]],
    ) -> None:
        before = self.state(run) or RunState(run)
        self._save(
            replace(
                before,
                run=run,
                batches={**before.batches, **batches},
                statuses={**before.statuses, **{n: dict(c) for n, c in statuses.items()}},
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
        """The records of `run`'s kept batches by canonical status (a batch written again counts once)."""
        state = self.state(run)
        total: Counter[str] = Counter()
        for counts in state.statuses.values() if state else ():
            total.update(counts)
        return dict(total)

    def has(self, run: Run) -> bool:
        """Whether any batch of `run` is kept."""
        state = self.state(run)
        return state is not None and bool(state.batches)

    def drop(self, run: Run) -> None:
        """Forget `run` once every layout has what it needs."""
        remove(self.location, self._run_dir(run))

    def mark_pending(self, run: Run, batches: Iterable[int], *, finished: bool) -> Pending:
        """Remember that `batches` (added to those already pending) still wait for the target."""
        state = self.state(run) or RunState(run)
        state = replace(
            state,
            pending=tuple(sorted({*batches, *state.pending})),
            finished=finished or state.finished,
        )
        self._save(state)
        return Pending(state.run, state.pending, state.finished)

    def pending_of(self, run: Run) -> Pending | None:
        """What of `run` still waits for the target, if anything."""
        return _pending(self.state(run))

    def all_pending(self) -> list[Pending]:
        """Every run with something waiting for the target, oldest run first."""
        found = [_pending(self._load(path)) for path in self._state_files()]
        return sorted((p for p in found if p), key=lambda p: p.run.started_at)

    def clear_pending(self, run: Run) -> None:
        """The target has everything of `run` that was waiting."""
        state = self.state(run)
        if state is not None and (state.pending or state.finished):
            self._save(replace(state, pending=(), finished=False))

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
        fs = self.location.filesystem()
        syncs = pafs.FileSelector(self.location.root, allow_not_found=True)
        for sync in fs.get_file_info(syncs):
            if sync.type != pafs.FileType.Directory:
                continue
            for run in fs.get_file_info(pafs.FileSelector(sync.path)):
                if run.type == pafs.FileType.Directory:
                    yield posixpath.join(run.path, STATE)


def _pending(state: RunState | None) -> Pending | None:
    if state is None or not (state.pending or state.finished):
        return None
    return Pending(state.run, state.pending, state.finished)


def _batch_writer(
    location: Location, folder: str
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The task of a write: one file per batch number, status counts, and the first violation."""
    schema = to_arrow_schema(canonical_schema(), timezone="UTC")

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = PartFiles(location, folder, schema, task_number())
        counts: dict[str, Counter[str]] = {}
        violation: str | None = None
        try:
            for batch in batches:
                table = pa.Table.from_batches([batch])
                found = table.column(VIOLATION).drop_null().to_pylist()
                if found:
                    violation = min([*found, *([violation] if violation else [])])
                if violation is not None:
                    continue  # the write is refused: nothing more needs storing
                for number in table.column(PARTITION).unique().to_pylist():
                    rows = table.filter(pc.equal(table.column(PARTITION), number))
                    key = str(number)
                    for part in rows.to_batches():
                        files.write(key, part)
                    counts.setdefault(key, Counter()).update(rows.column("status").to_pylist())
        except BaseException:
            files.abort()
            raise
        written = files.close()
        rows = [
            {"key": key, "path": path, "rows": n, "statuses": json.dumps(counts[key]), "violation": None}
            for key, path, n in written
        ]
        if violation is not None:
            rows.append({"key": "", "path": "", "rows": 0, "statuses": "{}", "violation": violation})
        yield pa.RecordBatch.from_pylist(rows, schema=_RESULT_SCHEMA)

    return write
