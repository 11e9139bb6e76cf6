"""The load queue: what engines made durable for a load behind them, one file per write or end.

    <storage>/queue/<target>/<sync_id>/<sync_run_id>/<seq>-<engine>.<kind>@<loader>

An engine's `BackgroundLog` puts each batch it is handed here as it was given (an Arrow file of
the records, the run in its schema's metadata) and each run's end (a JSON file of the run as it
ended), and returns once the file is published whole. Nothing else is written by the engine:
the files are the queue. `<target>` keeps apart what different targets on one storage wait for
(`target_key`); `<seq>` orders a run's items as their engine made them durable; `<engine>` is the
owner tag of the process that queued the item (`synclog.storage.owners`); `<loader>` says who
loads it:

- `loader`: whichever loader serves the storage and target (`synclog.loading`); it waits for
  one, however long;
- an owner tag: the process whose `BackgroundLog` loads its own items (no loader ran when it
  opened); once that process is gone, any loader, the next `BackgroundLog`, or `synclog flush`
  takes them over.

Whoever loads an item removes its file once the item is loaded (or refused, see
`synclog.storage.refused`); until then a failure leaves it where it is, in order.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import threading
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from synclog.model import Run
from synclog.storage.files import publish
from synclog.storage.location import Location
from synclog.storage.owners import MARK, gone, owner
from synclog.urls import TargetURL

LOADER = "loader"
"""The `<loader>` of an item that whichever loader serves the storage and target loads."""
RUN_METADATA = b"synclog.run"
"""The key, in a queued write's Arrow schema metadata, of its run (JSON)."""
PARTITION = "batch_number"
_NAME = re.compile(
    r"(?P<seq>\d{20})-(?P<engine>[A-Za-z0-9_-]+)\.(?P<kind>arrow|end)@(?P<loader>[A-Za-z0-9_-]+)"
)
_sequence_lock = threading.Lock()
_last_sequence = 0


def target_key(url: TargetURL) -> str:
    """A name for the target in storage paths: equal for URLs that name the same tables (a
    database file by its absolute path), without its password or its query's values."""
    url = url.resolved()
    seen = (
        f"{url.scheme}://{url.user or ''}@{url.host}:{url.port or ''}{url.path}?{','.join(sorted(url.query))}"
    )
    return hashlib.sha256(seen.encode()).hexdigest()[:16]


def _sequence() -> str:
    """The next position of this process's items: nanoseconds since the epoch, never repeated,
    so that items of one run sort as they were queued."""
    global _last_sequence
    with _sequence_lock:
        _last_sequence = max(_last_sequence + 1, time.time_ns())
        return f"{_last_sequence:020d}"


@dataclass(frozen=True, order=True)
class Queued:
    """One queued write (`kind` arrow) or end of a run (`kind` end), by its file."""

    sync_id: int
    sync_run_id: int
    seq: str
    engine: str
    kind: str
    loader: str

    @property
    def name(self) -> str:
        return f"{self.seq}-{self.engine}.{self.kind}{MARK}{self.loader}"

    @property
    def path(self) -> str:
        """The item's file, inside the queue's location."""
        return posixpath.join(str(self.sync_id), str(self.sync_run_id), self.name)

    @property
    def run_key(self) -> tuple[int, int]:
        return (self.sync_id, self.sync_run_id)

    @property
    def is_end(self) -> bool:
        return self.kind == "end"

    @property
    def served(self) -> bool:
        """Whether whichever loader serves the storage loads it (not one engine's own log)."""
        return self.loader == LOADER

    @property
    def orphaned(self) -> bool:
        """Whether the process whose own log was to load it is gone."""
        return not self.served and gone(self.loader)

    @classmethod
    def parse(cls, path: str) -> Queued | None:
        """The item a path inside the queue names (`<sync>/<run>/<name>`); None for anything else
        (a file being published, say)."""
        parts = path.split("/")
        found = _NAME.fullmatch(parts[-1]) if len(parts) == 3 else None
        if found is None or not (parts[0].lstrip("-").isdigit() and parts[1].lstrip("-").isdigit()):
            return None
        return cls(
            int(parts[0]), int(parts[1]), found["seq"], found["engine"], found["kind"], found["loader"]
        )


class LoadQueue:
    """The queue of one target under `<storage>/queue/<target>` (see the module's doc)."""

    def __init__(self, storage: Location, target: str) -> None:
        self.location = storage.child(f"queue/{target}")

    def put(self, run: Run, records: pa.Table, loader: str) -> Queued:
        """Queue a write of `run`: durable when this returns."""
        item = Queued(run.sync_id, run.sync_run_id, _sequence(), owner(), "arrow", loader)
        schema = records.schema.with_metadata({RUN_METADATA: json.dumps(run.to_dict()).encode()})

        def write(stream: pa.NativeFile) -> None:
            with ipc.new_file(stream, schema) as out:
                out.write_table(records.replace_schema_metadata(schema.metadata))

        publish(self.location.filesystem(), self.location.path(item.path), write)
        return item

    def put_end(self, run: Run, loader: str) -> Queued:
        """Queue the end of `run` (as it ended): durable when this returns."""
        item = Queued(run.sync_id, run.sync_run_id, _sequence(), owner(), "end", loader)
        data = json.dumps(run.to_dict()).encode()
        publish(self.location.filesystem(), self.location.path(item.path), lambda out: out.write(data))
        return item

    def items(self) -> list[Queued]:
        """Every item queued, each run's in order (one listing of the whole queue)."""
        found = self.location.filesystem().get_file_info(
            pafs.FileSelector(self.location.root, allow_not_found=True, recursive=True)
        )
        parsed = (Queued.parse(self.location.relative(info.path)) for info in found)
        return sorted(item for item in parsed if item is not None)

    def read(self, item: Queued) -> tuple[Run, pa.Table]:
        """A queued write's run and records."""
        with self.location.filesystem().open_input_file(self.location.path(item.path)) as handle:
            table = ipc.open_file(handle).read_all()
        run = Run.from_dict(json.loads((table.schema.metadata or {})[RUN_METADATA]))
        return run, table.replace_schema_metadata(None)

    def ended(self, item: Queued) -> Run:
        """A queued end's run, as it ended."""
        with self.location.filesystem().open_input_stream(self.location.path(item.path)) as stream:
            return Run.from_dict(json.loads(stream.read().decode()))

    def remove(self, item: Queued) -> None:
        """`item` is done with: forget it."""
        try:
            self.location.filesystem().delete_file(self.location.path(item.path))
        except FileNotFoundError:
            return

    def file(self, item: Queued) -> str:
        """The item's file as the filesystem names it."""
        return self.location.path(item.path)


def batch_numbers(records: pa.Table) -> tuple[int, ...]:
    """The batch numbers a queued write holds."""
    if not records.num_rows or PARTITION not in records.column_names:
        return ()
    return tuple(sorted(int(n) for n in pc.unique(records.column(PARTITION)).drop_null().to_pylist()))
