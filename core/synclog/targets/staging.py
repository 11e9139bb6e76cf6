"""Stage writers: how Spark tasks put a load's rows into its staging relation themselves.

A target's `SqlTarget.stage_writer` is pickled to the executors. Each task opens it for its
partition, writes its rows batch by batch and closes it; closing returns a few short texts
(a staged file's path and rows, a day's row count), never rows. The driver hands every task's
reports to the target's `load_staged`, which finishes filling the stage.

The same writer runs inside a write's one Spark job (`synclog.write_job`, where the tasks also
validate and keep the run), over a frame in a job of its own (`fill_from_frame`), or on the
driver for the few rows built there (`fill_from_table`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from synclog.capabilities import FileFormat
from synclog.naming import Relation
from synclog.storage.files import PartFiles, task_number
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest, StoredFile
from synclog.targets.keys import Keys
from synclog.targets.tables import TableSpec

REPORT_SCHEMA = pa.schema([("report", pa.string())])
REPORT = from_arrow_schema(REPORT_SCHEMA)
"""What a task that fills a stage returns: one row per report."""


class TaskStage(Protocol):
    """One task's part of a stage: rows in, reports out."""

    def write(self, batch: pa.RecordBatch) -> None:
        """Add rows (the table's columns, by name) to the stage."""

    def close(self) -> list[str]:
        """Make the task's rows count; return its reports."""

    def abort(self) -> None:
        """Undo what the task wrote (the write was refused or failed)."""


class StageWriter(Protocol):
    """Picklable: what each task opens to write its part of one stage."""

    def open(self, part: int) -> TaskStage:
        """The stage of Spark partition `part` (0 on the driver)."""


class Stages(Protocol):
    """A target whose loads the write's one Spark job can stage (`Target.stages`): a stage is
    opened per load, its tasks fill it through `stage_writer`, then the driver finishes it, swaps
    it into its table and releases it (the load protocol of `synclog.targets.sql`)."""

    def open_stage(self, table: TableSpec) -> Relation:
        """A fresh, empty staging relation for one load of `table` (as `Target.table_spec` gives it)."""

    def stage_writer(self, stage: Relation, table: TableSpec) -> StageWriter | None:
        """What the tasks write `stage` with; None: this load cannot be staged by tasks."""

    def load_staged(self, stage: Relation, table: TableSpec, reports: Sequence[str]) -> int:
        """Finish filling `stage` from the tasks' reports; return its rows."""

    def swap_staged(self, table: TableSpec, stage: Relation, count: int, keys: Keys) -> None:
        """Replace, atomically, the rows of `keys` by the `count` staged rows."""

    def release_stage(self, stage: Relation) -> None:
        """Drop `stage` and what was staged for it (also after a failed load)."""

    def raise_stage_failure(self, failure: Exception, table: TableSpec) -> None:
        """Raise the one-line error a failed job amounts to where a task filling a stage of
        `table` failed; return when the failure is not the stage's."""


@dataclass(frozen=True)
class FileStageWriter:
    """`Staging.FILES`: each task writes its rows as one file under `folder` in `storage`."""

    location: Location
    folder: str
    schema: pa.Schema
    file_format: FileFormat = FileFormat.PARQUET

    def open(self, part: int) -> TaskStage:
        return _FileStage(PartFiles(self.location, self.folder, self.schema, part, self.file_format))

    def manifest(self, reports: Iterable[str]) -> Manifest:
        """The staged files the tasks reported."""
        files = [json.loads(report) for report in reports]
        return Manifest(self.location, tuple(StoredFile(f["path"], int(f["rows"])) for f in files))


class _FileStage:
    def __init__(self, files: PartFiles) -> None:
        self.files = files

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.files.write("part", batch)

    def close(self) -> list[str]:
        return [json.dumps({"path": path, "rows": rows}) for _, path, rows in self.files.close()]

    def abort(self) -> None:
        self.files.abort()


def fill_from_frame(frame: DataFrame, writer: StageWriter) -> list[str]:
    """Run `writer` over `frame` in a Spark job of its own; every task's reports."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        stage = writer.open(task_number())
        try:
            for batch in batches:
                if batch.num_rows:
                    stage.write(batch)
        except BaseException:
            stage.abort()
            raise
        yield pa.RecordBatch.from_pydict({"report": stage.close()}, schema=REPORT_SCHEMA)

    return [row["report"] for row in frame.mapInArrow(task, REPORT).collect()]


def fill_from_table(table: pa.Table, writer: StageWriter) -> list[str]:
    """Run `writer` over a few rows on the driver, without a Spark job."""
    stage = writer.open(0)
    try:
        for batch in table.to_batches():
            stage.write(batch)
    except BaseException:
        stage.abort()
        raise
    return stage.close()
