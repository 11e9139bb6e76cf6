"""One Spark job per write: each task checks its slice of the run once, keeps it, and stages it.

The job's input is the canonical frame (`synclog.canonical`) with, beside its columns, one
struct column per staged load: the load's rows, a projection of the same canonical row, so
Spark computes them in the same pass. Each task then, batch by batch:

- looks for a broken rule (`VIOLATION`); from the first one on it writes nothing more, and
  goes on only to find the first broken rule of each write (`WRITE`) the job holds;
- keeps the canonical rows in the run store (`StoreWriter`: one file per run and batch number);
- hands each load's rows to the target's task-side stage writer (`SqlTarget.stage_writer`:
  staged files, or a COPY into the warehouse's invisible staging table); a load's rows are NULL
  for the writes whose runs do not load that table;

and returns, as its task result, a few short reports: its run-store files with their status
counts, each stage's reports and the first violation of each write. Nothing reaches the log
tables here: the driver commits (run store, then each load's swap) only when no task reported a
violation, and otherwise removes the write's files and lets the caller drop the stages.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from synclog.canonical import CANONICAL_COLUMNS, WRITE
from synclog.errors import InputError
from synclog.payload_schema import field_types
from synclog.records import VIOLATION
from synclog.storage.files import task_number, unreadable_file
from synclog.storage.store_task import StoreWriter
from synclog.targets.staging import StageWriter, TaskStage

_STORE, _VIOLATION = -1, -2
"""`part` of a report row that is not a load's: the run store's, a violation."""
_TYPES = "_payload_types"
"""The column of each row's payload `field_types`, when the write computes them."""
_HASH = "_identifier_hash"
"""The column of each row's identifier hash (NULL for a NULL identifier), for `StoreTask`."""
RESULT_SCHEMA = pa.schema([("part", pa.int32()), ("report", pa.string())])
RESULT = from_arrow_schema(RESULT_SCHEMA)
"""What each task returns (a StructType: a DDL string costs Spark Connect a round trip to parse)."""


@dataclass(frozen=True)
class StagedRows:
    """One table's rows as a struct column of the canonical row (NULL for rows it does not take),
    and the writer of its stage."""

    column: Column
    writer: StageWriter


@dataclass(frozen=True)
class JobResult:
    """What the tasks of a write reported."""

    store: list[str]
    """The run store's reports (`RunStore.commit_write`)."""
    stages: list[list[str]]
    """Per staged load, in order, its tasks' reports (`SqlTarget.load_staged`)."""
    violations: dict[int, str]
    """Per write (its `WRITE` index) whose rows break a rule, the first rule broken (a `VIOLATION`
    value, see `records.violation_error`). Where there is one, the job kept and staged nothing."""


def run_write_job(
    canonical: DataFrame, store: StoreWriter, staged: Sequence[StagedRows], *, payload_types: bool = False
) -> JobResult:
    """Run the write's one job (which may hold several writes, see `WRITE`).

    With `payload_types`, the tasks also report each batch's payload field types to the run
    store (`RunStore.payload_schema`), so the run's payload schema needs no pass of its own.
    The tasks also report the hashes of each batch's identifiers, where they are few
    (`RunStore.repeated_batches`). The caller removes the run store's folder and drops the
    stages when this raises.
    """
    loads = [rows.column.alias(f"_load{i}") for i, rows in enumerate(staged)]
    types = [field_types(F.col("record_payload")).alias(_TYPES)] if payload_types else []
    identifier = F.col("record_identifier")
    hashed = F.when(identifier.isNotNull(), F.xxhash64(identifier)).alias(_HASH)
    frame = canonical.select(*CANONICAL_COLUMNS, VIOLATION, WRITE, *types, hashed, *loads)
    task = _task(store, [rows.writer for rows in staged])
    try:
        done = frame.mapInArrow(task, RESULT).collect()
    except Exception as exc:
        unreadable = unreadable_file(exc)
        if unreadable is None:
            raise
        raise InputError(f"cannot read records {unreadable}") from None
    violations: dict[int, str] = {}
    for row in done:
        if row["part"] == _VIOLATION:
            write, _, found = row["report"].partition(":")
            violations[int(write)] = min(found, violations.get(int(write), found))
    stages: list[list[str]] = [[] for _ in staged]
    for row in done:
        if row["part"] >= 0:
            stages[row["part"]].append(row["report"])
    return JobResult(
        store=[row["report"] for row in done if row["part"] == _STORE],
        stages=stages,
        violations=violations,
    )


def _task(store: StoreWriter, writers: Sequence[StageWriter]):
    """The function each task runs (`mapInArrow`)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = task_number()
        kept = store.open(part)
        stages: list[TaskStage] = [writer.open(part) for writer in writers]
        violations: dict[int, str] = {}
        try:
            for batch in batches:
                _find_violations(batch, violations)
                if violations or not batch.num_rows:
                    continue  # a write is refused: nothing more needs keeping
                types = batch.column(_TYPES) if _TYPES in batch.schema.names else None
                kept.write(batch.select(CANONICAL_COLUMNS), types, batch.column(_HASH))
                for number, stage in enumerate(stages):
                    stage.write(_load_rows(batch.column(f"_load{number}")))
        except BaseException:
            for open_ in (kept, *stages):
                open_.abort()
            raise
        if violations:
            for open_ in (kept, *stages):
                open_.abort()
            yield _reports([(_VIOLATION, f"{write}:{found}") for write, found in violations.items()])
            return
        rows = [(_STORE, report) for report in kept.close()]
        for number, stage in enumerate(stages):
            rows += [(number, report) for report in stage.close()]
        yield _reports(rows)

    return run


def _find_violations(batch: pa.RecordBatch, violations: dict[int, str]) -> None:
    """Add the first rule each write breaks in `batch` to `violations` (per `WRITE` index)."""
    broken = batch.column(VIOLATION)
    if broken.null_count == len(broken):
        return
    found = pa.Table.from_arrays([batch.column(WRITE), broken], ["w", "v"]).filter(pc.is_valid(broken))
    for row in found.group_by("w").aggregate([("v", "min")]).to_pylist():
        write, first = int(row["w"]), row["v_min"]
        violations[write] = min(first, violations.get(write, first))


def _load_rows(column: pa.Array) -> pa.RecordBatch:
    """A load's rows out of its struct column, without the NULLs of writes that do not load it."""
    if column.null_count:
        column = column.filter(pc.is_valid(column))
    return pa.RecordBatch.from_struct_array(column)


def _reports(rows: list[tuple[int, str]]) -> pa.RecordBatch:
    parts, reports = zip(*rows, strict=True) if rows else ((), ())
    return pa.RecordBatch.from_pydict({"part": list(parts), "report": list(reports)}, schema=RESULT_SCHEMA)
