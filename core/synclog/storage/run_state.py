"""`run.json`: what the run store knows of one run, read and replaced whole.

    <storage>/runs/<sync_id>/<sync_run_id>/run.json

It names the files that hold each kept batch of the run (`RunStore`), with what the write's
tasks counted of them, and what still waits for the target (`Spool`). Only the process that
loads the run replaces it: a writer in place, a `BackgroundLog`'s thread, or the loader that
serves the storage (`synclog.loading`); the lock below orders that process's threads.
"""

from __future__ import annotations

import base64
import json
import posixpath
import struct
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from synclog.model import Run
from synclog.storage.files import publish
from synclog.storage.location import Location
from synclog.storage.manifest import StoredFile

STATE = "run.json"


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
    few: see `synclog.storage.runstore.RUN_IDENTIFIERS`)."""
    loaded: bool = False
    """The tables hold the finished run; the loader is taking its end out of the queue (see
    `RunStore.loaded`)."""

    def to_json(self) -> str:
        batches = {str(n): [vars(f) for f in files] for n, files in self.batches.items()}
        state = {"run": self.run.to_dict(), "batches": batches, "pending": list(self.pending)}
        statuses = {str(n): dict(counts) for n, counts in self.statuses.items()}
        types = {str(n): list(pairs) for n, pairs in self.payload_types.items()}
        extra = {"finished": self.finished, "statuses": statuses, "writes": self.writes}
        extra["accepted"] = {str(n): count for n, count in self.accepted.items()}
        extra["payload_types"] = types
        extra["refused"] = self.refused
        extra["identifiers"] = {str(n): packed(hashes) for n, hashes in self.identifiers.items()}
        extra["loaded"] = self.loaded
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
            identifiers={int(n): unpacked(hashes) for n, hashes in data.get("identifiers", {}).items()},
            loaded=bool(data.get("loaded", False)),
        )


class RunStates:
    """The `run.json` of every run under `<storage>/runs`."""

    def __init__(self, location: Location) -> None:
        self.location = location
        self.lock = threading.RLock()
        """Held while a `run.json` is read and replaced: threads of one process take turns."""

    def folder(self, run: Run) -> str:
        """`<sync_id>/<sync_run_id>`: the run's folder, inside the location."""
        return f"{run.sync_id}/{run.sync_run_id}"

    def get(self, run: Run) -> RunState | None:
        """`run`'s manifest, or None when the store holds nothing of it."""
        return self.read(self.location.path(posixpath.join(self.folder(run), STATE)))

    def put(self, state: RunState) -> None:
        """Replace `state.run`'s manifest whole (readers see the old one or the new one)."""
        data = state.to_json().encode()
        path = self.location.path(posixpath.join(self.folder(state.run), STATE))
        publish(self.location.filesystem(), path, lambda stream: stream.write(data))

    def read(self, path: str) -> RunState | None:
        """The manifest at `path`, or None when there is none."""
        fs = self.location.filesystem()
        try:
            with fs.open_input_stream(path) as stream:
                return RunState.from_json(stream.read().decode())
        except FileNotFoundError:
            return None

    def every(self) -> Iterator[RunState]:
        """Every run's manifest, from one listing of the whole store (some object stores, the
        GCS emulator, list no folders one level down)."""
        fs = self.location.filesystem()
        found = fs.get_file_info(pafs.FileSelector(self.location.root, allow_not_found=True, recursive=True))
        for info in found:
            inside = posixpath.relpath(info.path, self.location.root).split("/")
            if info.type == pafs.FileType.File and len(inside) == 3 and inside[2] == STATE:
                state = self.read(info.path)
                if state is not None:
                    yield state


def packed(hashes: tuple[int, ...]) -> str:
    """Identifier hashes as run.json keeps them: base64 of their 8-byte little-endian forms (a
    run's 100,000 read and written in a millisecond or two, not as many JSON numbers)."""
    return base64.b64encode(struct.pack(f"<{len(hashes)}q", *hashes)).decode()


def unpacked(text: str) -> tuple[int, ...]:
    data = base64.b64decode(text)
    return struct.unpack(f"<{len(data) // 8}q", data)
