"""Crash points: a target whose connection fails before or after any one of its statements.

A `CrashPlan` numbers the statement boundaries a target passes: every call that reaches the
warehouse (a statement, a transaction's BEGIN and COMMIT, a stage load, a lake file written,
renamed or deleted) has two, before it (the call is never made) and after it (it was made, its
answer is lost: a COMMIT that is done but not acknowledged). A plan armed at boundary `k` fails
the call there, with the outage error the target's own client would raise (a TargetError; on the
lake's filesystem an OSError, which the lake turns into one), and the target stays down until the
plan heals: every later call fails too, as a connection that is gone. A dry pass (a plan armed
nowhere) counts the boundaries of a step and says what each one is.

`watch(target, plan)` puts a target's calls under the plan: a SQL target's client (the methods
every statement passes through, `SqlClient`'s and the driver-level ones the built-in clients add),
a `Staging.TASKS` target's task writers (each Spark task's stage load: opened, then closed, which
commits it), and, for the lake, the filesystem its driver and its executors write through. The
plan's state is a small file, so the Spark executors' calls count and fail alike.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import posixpath
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from synclog.capabilities import Staging
from synclog.errors import TargetError
from synclog.naming import Relation
from synclog.storage.location import Location
from synclog.targets.base import Target
from synclog.targets.lake import LakeTarget
from synclog.targets.sql import SqlTarget
from synclog.targets.staging import StageWriter, TaskStage
from synclog.targets.tables import TableSpec

T = TypeVar("T")

CRASH_MARK = "synclog-crash-point"
"""In the message of every error a plan raises (a failed Spark job's text carries it)."""

CLIENT_CALLS = ("execute_bound", "fetch_bound", "query_bound", "insert_rows", "cursor", "frame_bound", "run")
"""The calls of a SQL client that reach the warehouse, where the client has them: `SqlClient`'s
(`insert_rows` included, for a driver that sends rows its own way), a `DbApiClient`'s `cursor`
(which a target may use for a statement's full answer), Spark's `frame_bound` and BigQuery's
`run`. A call made inside another one is part of it (one boundary pair)."""
STREAM_CALLS = ("batches_bound",)
"""Calls whose answer is a stream of record batches (read whole here, then the after-boundary)."""


@dataclass(frozen=True)
class CrashPlan:
    """Where the crash happens: a JSON file of the boundaries passed, the one to fail at (or
    none), whether the target is down, and (in a dry pass) what each boundary is."""

    path: str

    @classmethod
    def create(cls, folder: Path) -> CrashPlan:
        plan = cls(str(folder / "crash-plan.json"))
        plan.arm(None)
        return plan

    def arm(self, at: int | None) -> None:
        """Count boundaries from 0 again; fail at boundary `at` (None: nowhere, a dry pass)."""
        self._write({"passed": 0, "at": at, "down": False, "seen": []})

    def heal(self) -> None:
        """The target answers again, and nothing fails any more."""
        with self._locked() as state:
            state.update(down=False, at=None)

    @property
    def down(self) -> bool:
        return bool(self._read()["down"])

    def seen(self) -> list[str]:
        """What each boundary passed was (`before …`, `after …`), in order."""
        return list(self._read()["seen"])

    def boundary(self, what: str, error: Callable[[str], Exception] = TargetError) -> None:
        """Pass one boundary (`before …` or `after …` a call); raise `error` where the plan fails."""
        with self._locked() as state:
            if state["down"]:
                raise error(f"{what}: the connection is gone ({CRASH_MARK} {state['at']} passed)")
            number = state["passed"]
            state["passed"] = number + 1
            if state["at"] is None:
                state["seen"].append(what)
            elif state["at"] == number:
                state["down"] = True
                raise error(f"{what}: the connection was lost ({CRASH_MARK} {number})")

    def call(
        self,
        what: str,
        step: Callable[[], T],
        error: Callable[[str], Exception] = TargetError,
        lost: Callable[[T], object] | None = None,
    ) -> T:
        """`step()` between its two boundaries (one pair however many calls it makes inside).
        Where the after-boundary fails, `lost(result)` ends what the call opened, as the warehouse
        ends a session whose connection is gone (its open load rolled back, its locks let go)."""
        if _depth() > 0:
            if self.down and not _server_side():
                raise error(f"{what}: the connection is gone ({CRASH_MARK})")
            return step()
        self.boundary(f"before {what}", error)
        with _inside():
            result = step()
        try:
            self.boundary(f"after {what}", error)
        except BaseException:
            if lost is not None:
                with _as_the_server():
                    lost(result)
            raise
        return result

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        with open(self.path, "r+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            state = json.load(handle)
            try:
                yield state
            finally:
                handle.seek(0)
                handle.truncate()
                json.dump(state, handle)

    def _read(self) -> dict[str, Any]:
        with open(self.path, encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
            return dict(json.load(handle))

    def _write(self, state: dict[str, Any]) -> None:
        with open(self.path, "a+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.seek(0)
            handle.truncate()
            json.dump(state, handle)


_LOCAL = threading.local()


def _depth() -> int:
    return int(getattr(_LOCAL, "depth", 0))


def _server_side() -> bool:
    return bool(getattr(_LOCAL, "server", False))


@contextmanager
def _as_the_server() -> Iterator[None]:
    """Calls made in the block are the warehouse's own, never failed: what it does when a
    session's connection is gone (its open transaction rolled back, its open load aborted)."""
    _LOCAL.server = True
    try:
        with _inside():
            yield
    finally:
        _LOCAL.server = False


@contextmanager
def _inside() -> Iterator[None]:
    """Calls made in the block are part of the call that made them."""
    _LOCAL.depth = _depth() + 1
    try:
        yield
    finally:
        _LOCAL.depth -= 1


def watch(target: Target, plan: CrashPlan, calls: Sequence[str] = ()) -> None:
    """Put every call `target` makes to its warehouse under `plan` (see the module), and the
    methods `calls` names (dotted paths from the target: `api.create_table`) too, for what a
    plugin sends another way than through its client."""
    if isinstance(target, LakeTarget):
        location = CrashingLocation.of(target.location, plan.path)
        target.location = location
        target.fs = location.filesystem()
    elif isinstance(target, SqlTarget):
        _watch_client(target.client, plan)
        if target.capabilities.staging is Staging.TASKS:
            _watch_task_writers(target, plan)
    for path in calls:
        owner_path, _, name = path.rpartition(".")
        owner: Any = target
        for part in filter(None, owner_path.split(".")):
            owner = getattr(owner, part)
        _wrap(owner, name, plan, f"{type(target).__name__}.{path}")


def _wrap(owner: Any, name: str, plan: CrashPlan, label: str) -> None:
    original = getattr(owner, name)

    @wraps(original)
    def watched(*args: Any, **kwargs: Any) -> Any:
        return plan.call(f"{label} {_shown(args)}", lambda: original(*args, **kwargs))

    setattr(owner, name, watched)


def _watch_client(client: Any, plan: CrashPlan) -> None:
    for name in CLIENT_CALLS:
        if not hasattr(client, name):
            continue
        if name == "cursor":
            _wrap_cursor(client, plan)
        else:
            _wrap(client, name, plan, name)
    for name in STREAM_CALLS:
        original = getattr(client, name)

        def streamed(
            *args: Any, _original: Any = original, _name: str = name, **kwargs: Any
        ) -> Iterator[pa.RecordBatch]:
            batches = plan.call(f"{_name} {_shown(args)}", lambda: list(_original(*args, **kwargs)))
            return iter(batches)

        setattr(client, name, streamed)
    _wrap_transaction(client, plan)


def _wrap_cursor(client: Any, plan: CrashPlan) -> None:
    """A `DbApiClient.cursor`: the statement runs as the block is entered; its answer is read in
    the block; the after-boundary is when the block ends."""
    original = client.cursor

    @contextmanager
    def cursor(sql: str, params: Any = ()) -> Iterator[Any]:
        if _depth() > 0:
            with original(sql, params) as opened:
                yield opened
            return
        what = f"cursor {_shown([sql])}"
        plan.boundary(f"before {what}")
        with _inside(), original(sql, params) as opened:
            yield opened
        plan.boundary(f"after {what}")

    client.cursor = cursor


def _wrap_transaction(client: Any, plan: CrashPlan) -> None:
    """BEGIN and COMMIT as calls of their own: a crash after BEGIN, inside the block or before
    COMMIT rolls the block back (as the warehouse does when the session's connection is gone,
    so nothing stays open there); one after COMMIT loses only its acknowledgement."""
    original = client.transaction

    @contextmanager
    def transaction() -> Iterator[None]:
        if _depth() > 0:
            with original():
                yield
            return
        opened: AbstractContextManager[None] = original()

        def rolled_back(_: object) -> None:
            lost = TargetError(f"the connection was lost ({CRASH_MARK})")
            with contextlib.suppress(TargetError):
                opened.__exit__(TargetError, lost, None)

        plan.call("BEGIN", opened.__enter__, lost=rolled_back)
        try:
            yield
            plan.boundary("before COMMIT")
        except BaseException as exc:
            with _as_the_server():
                if not opened.__exit__(type(exc), exc, exc.__traceback__):
                    raise
            return
        with _inside():
            opened.__exit__(None, None, None)
        plan.boundary("after COMMIT")

    client.transaction = transaction


def _watch_task_writers(target: SqlTarget, plan: CrashPlan) -> None:
    """Each Spark task's stage load under `plan`; the failed job it makes is an outage, as the
    target's own driver error in a task is (`raise_stage_failure`)."""
    task_writer = target.task_writer  # type: ignore[attr-defined]
    raise_stage_failure = target.raise_stage_failure

    def watched_writer(stage: Relation, table: TableSpec) -> StageWriter:
        return CrashingStageWriter(task_writer(stage, table), plan.path)

    def watched_failure(failure: Exception, table: TableSpec) -> None:
        text = str(failure)
        if CRASH_MARK in text:
            at = text.find(CRASH_MARK)
            raise TargetError(f"loading {table.name} failed: {text[at:].splitlines()[0]}") from None
        raise_stage_failure(failure, table)

    target.task_writer = watched_writer  # type: ignore[attr-defined]
    target.raise_stage_failure = watched_failure  # type: ignore[method-assign]


@dataclass(frozen=True)
class CrashingStageWriter:
    """A task writer (picklable) whose tasks' opening and closing (the load's commit) are calls
    under the plan at `plan_path`."""

    writer: StageWriter
    plan_path: str

    def open(self, part: int) -> TaskStage:
        plan = CrashPlan(self.plan_path)
        opened = plan.call(
            f"stage load of task {part} opened",
            lambda: self.writer.open(part),
            lost=lambda stage: stage.abort(),
        )
        return _CrashingTaskStage(opened, plan, part)


class _CrashingTaskStage:
    def __init__(self, stage: TaskStage, plan: CrashPlan, part: int) -> None:
        self.stage, self.plan, self.part = stage, plan, part

    def write(self, batch: pa.RecordBatch) -> None:
        self.stage.write(batch)

    def close(self) -> list[str]:
        closed = False

        def close() -> list[str]:
            nonlocal closed
            closed = True
            return self.stage.close()

        try:
            return self.plan.call(f"stage load of task {self.part} committed", close)
        except BaseException:
            if not closed:  # the load never reached its commit: the warehouse rolls it back
                self.stage.abort()
            raise

    def abort(self) -> None:
        self.stage.abort()


@dataclass(frozen=True)
class CrashingLocation(Location):
    """A `Location` whose filesystem (built in every process, the executors' included) passes
    each file written, renamed or deleted through the plan at `plan_path`; reads fail only while
    the target is down."""

    plan_path: str = ""

    @classmethod
    def of(cls, location: Location, plan_path: str) -> CrashingLocation:
        return cls(**{**vars(location), "plan_path": plan_path})

    def filesystem(self) -> pafs.FileSystem:
        real = Location.filesystem(self)
        return pafs.PyFileSystem(_CrashingFiles(real, CrashPlan(self.plan_path)))


class _CrashingFiles(pafs.FileSystemHandler):
    """pyarrow's filesystem handler over `fs`: its changes are calls under `plan`, failing with
    OSError (what a filesystem raises)."""

    def __init__(self, fs: pafs.FileSystem, plan: CrashPlan) -> None:
        self.fs, self.plan = fs, plan

    def _change(self, what: str, path: str, step: Callable[[], T]) -> T:
        return self.plan.call(f"{what} {posixpath.basename(path)}", step, OSError)

    def _read(self, step: Callable[[], T]) -> T:
        if self.plan.down:
            raise OSError(f"the storage does not answer ({CRASH_MARK})")
        return step()

    def get_type_name(self) -> str:
        return f"crashing-{self.fs.type_name}"

    def normalize_path(self, path: str) -> str:
        return str(self.fs.normalize_path(path))

    def equals(self, other: Any) -> bool:
        return isinstance(other, _CrashingFiles) and bool(self.fs.equals(other.fs))

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self._read(lambda: self.fs.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self._read(lambda: self.fs.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self._change("create_dir", path, lambda: self.fs.create_dir(path, recursive=recursive))

    def delete_dir(self, path: str) -> None:
        self._change("delete_dir", path, lambda: self.fs.delete_dir(path))

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._change(
            "delete_dir_contents",
            path,
            lambda: self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok),
        )

    def delete_root_dir_contents(self) -> None:
        self._change("delete_root_dir_contents", "/", self.fs.delete_root_dir_contents)

    def delete_file(self, path: str) -> None:
        self._change("delete_file", path, lambda: self.fs.delete_file(path))

    def move(self, src: str, dest: str) -> None:
        self._change("move", dest, lambda: self.fs.move(src, dest))

    def copy_file(self, src: str, dest: str) -> None:
        self._change("copy_file", dest, lambda: self.fs.copy_file(src, dest))

    def open_input_stream(self, path: str) -> Any:
        return self._read(lambda: self.fs.open_input_stream(path))

    def open_input_file(self, path: str) -> Any:
        return self._read(lambda: self.fs.open_input_file(path))

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        def opened() -> Any:
            if isinstance(self.fs, pafs.LocalFileSystem):  # as `published` does for a local disk
                self.fs.create_dir(posixpath.dirname(path), recursive=True)
            return self.fs.open_output_stream(path, metadata=metadata)

        return self._change("open_output_stream", path, opened)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self._change(
            "open_append_stream", path, lambda: self.fs.open_append_stream(path, metadata=metadata)
        )


def _shown(args: Sequence[Any]) -> str:
    """A call's first argument, short (a statement's first words, a relation)."""
    if not args:
        return ""
    first = args[0]
    text = " ".join(str(first).split())
    return text if len(text) <= 90 else text[:87] + "…"
