"""The run store's side of a write's Spark tasks: each keeps its canonical rows, one file per batch.

A write's one job (`synclog.write_job`) may hold batches of several runs (the loader coalesces
what many engines queued); every run has its own folder for the write (`RunStore.begin_write`).
Each task splits its rows by run and batch number, writes one file per (run, batch), and reports
each file with its row count, its records by status, how many the destination accepted, and,
where they are few, the hashes of its identifiers, as one JSON text for `RunStore.commit_write`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema

from synclog.canonical import canonical_schema
from synclog.model import RecordStatus
from synclog.storage.files import PartFiles
from synclog.storage.location import Location
from synclog.storage.run_state import packed

PARTITION = "batch_number"
TASK_IDENTIFIERS = 20_000
"""At most this many identifier hashes, over all its batches, does a write's task report
(`StoreTask`); a task holding more reports none, so the driver receives a bounded number per task
whatever the run's size."""

RunKey = tuple[int, int]
"""(sync_id, sync_run_id)."""


@dataclass(frozen=True)
class StoreWriter:
    """Pickled to the executors: the folder of the write for each of its runs; `open` gives a
    task's writer."""

    location: Location
    folders: Mapping[RunKey, str]

    def open(self, part: int) -> StoreTask:
        return StoreTask(self, part)


class StoreTask:
    """One task's run-store files (see the module's doc)."""

    def __init__(self, writer: StoreWriter, part: int) -> None:
        self.writer, self.part = writer, part
        self.schema = to_arrow_schema(canonical_schema(), timezone="UTC")
        self.files: dict[RunKey, PartFiles] = {}
        self.counts: dict[tuple[RunKey, str], Counter[str]] = {}
        self.accepted: Counter[tuple[RunKey, str]] = Counter()
        self.types: dict[tuple[RunKey, str], set[str]] = {}
        self.hashes: dict[tuple[RunKey, str], set[int] | None] = {}
        self.held = 0
        """How many hashes the task holds; past `TASK_IDENTIFIERS` it reports none."""

    def write(
        self, batch: pa.RecordBatch, payload_types: pa.Array | None = None, hashes: pa.Array | None = None
    ) -> None:
        """Keep canonical rows, split by run and batch number; `payload_types` (the rows'
        `field_types`) and `hashes` (of their identifiers; up to `TASK_IDENTIFIERS` in all) are
        reported per batch."""
        syncs, runs, numbers = (batch.column(c) for c in ("sync_id", "sync_run_id", PARTITION))
        keys = pa.Table.from_arrays([syncs, runs, numbers], ["s", "r", "b"]).group_by(["s", "r", "b"])
        for found in keys.aggregate([]).to_pylist():
            chosen = pc.and_(
                pc.and_(pc.equal(syncs, found["s"]), pc.equal(runs, found["r"])),
                pc.equal(numbers, found["b"]),
            )
            run: RunKey = (found["s"], found["r"])
            self._keep(run, str(found["b"]), batch.filter(chosen), chosen, payload_types, hashes)

    def _keep(
        self,
        run: RunKey,
        key: str,
        rows: pa.RecordBatch,
        chosen: pa.Array,
        payload_types: pa.Array | None,
        hashes: pa.Array | None,
    ) -> None:
        if run not in self.files:
            self.files[run] = PartFiles(
                self.writer.location, self.writer.folders[run], self.schema, self.part
            )
        self.files[run].write(key, rows)
        statuses = rows.column("status")
        outcomes = zip(statuses.to_pylist(), rows.column("invalid_reason").to_pylist(), strict=True)
        self.counts.setdefault((run, key), Counter()).update(RecordStatus.counted(*o).value for o in outcomes)
        self.accepted[(run, key)] += pc.sum(pc.equal(statuses, RecordStatus.SUCCEEDED.value)).as_py() or 0
        if payload_types is not None:
            pairs = pc.unique(pc.list_flatten(payload_types.filter(chosen))).to_pylist()
            self.types.setdefault((run, key), set()).update(pairs)
        held = self.hashes.setdefault((run, key), set())
        if hashes is None or held is None or self.held > TASK_IDENTIFIERS:
            self.hashes[(run, key)] = None
            return
        self.held -= len(held)
        held.update(pc.unique(hashes.filter(chosen)).drop_null().to_pylist())
        self.held += len(held)
        if self.held > TASK_IDENTIFIERS:
            self.hashes = dict.fromkeys(self.hashes)

    def close(self) -> list[str]:
        """Publish the files; one report per file."""
        reports = []
        for run, files in self.files.items():
            for key, path, rows in files.close():
                report = {"sync": run[0], "run": run[1], "batch": int(key), "path": path, "rows": rows}
                report["statuses"] = self.counts[(run, key)]
                report["accepted"] = self.accepted[(run, key)]
                if (run, key) in self.types:
                    report["types"] = sorted(self.types[(run, key)])
                held = self.hashes.get((run, key))
                if held is not None:
                    report["identifiers"] = packed(tuple(sorted(held)))
                reports.append(json.dumps(report))
        return reports

    def abort(self) -> None:
        """Drop the unfinished files."""
        for files in self.files.values():
            files.abort()
