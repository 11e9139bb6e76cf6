"""One table's loads of several runs made into as few loads as they can be.

When a write (or a finish) holds several runs, each run's layouts give their loads of the same
table. Rows a Spark job computes as a projection of the write's canonical frame are staged by
that job (`SyncLog.write_all`: one struct column per table, NULL for the runs that do not load
it). Rows built on the driver (a run's metadata, its `synclog_runs` row) that replace by the
table's key are concatenated into one load, the last row of each key kept. Any other load (one
that replaces a scope of its own, or a frame) stays one load per run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F

from synclog.canonical import WRITE
from synclog.layouts.base import Load
from synclog.model import Run
from synclog.targets.rows import Rows
from synclog.targets.tables import TableSpec


@dataclass(frozen=True)
class Merged:
    """A load to make, and the runs whose rows it carries, with how many rows each gave."""

    table: TableSpec
    rows: Rows
    scope: Mapping[str, Any]
    runs: tuple[tuple[Run, int], ...]


def staged_column(parts: Sequence[tuple[Sequence[int], tuple[Column, ...]]], every: int) -> Column:
    """The struct column of one table's staged rows: `parts` gives, per run, the `WRITE`
    positions of its writes and its columns; `every` is how many writes the job holds (a run
    that holds them all needs no CASE)."""
    (writes, columns), *others = parts
    if not others and len(writes) == every:
        return F.struct(*columns)
    chosen = F.when(F.col(WRITE).isin(list(writes)), F.struct(*columns))
    for more, columns in others:
        chosen = chosen.when(F.col(WRITE).isin(list(more)), F.struct(*columns))
    return chosen


def merged(table: TableSpec, loads: Sequence[tuple[Run, Load]]) -> list[Merged]:
    """`loads` (one table's, of several runs, in order) as few loads as can be (see the module's doc)."""
    if len(loads) > 1 and all(_by_key(table, load) for _, load in loads):
        tables = [load.rows.local_table for _, load in loads]
        together = pa.concat_tables([t for t in tables if t is not None])
        counts = tuple(
            (run, load.rows.local_table.num_rows if load.rows.local_table else 0) for run, load in loads
        )
        rows = Rows.arrow(loads[0][1].rows.spark, _last_of_each_key(together, table.replace_key))
        return [Merged(table, rows, {}, counts)]
    return [Merged(table, load.rows, load.scope, ((run, -1),)) for run, load in loads]


def _by_key(table: TableSpec, load: Load) -> bool:
    """Whether `load` is rows built on the driver that replace by the table's key: without a
    scope, or with one that names exactly the key and that every row holds."""
    local = load.rows.local_table
    if local is None or not table.replace_key:
        return False
    if not load.scope:
        return True
    if set(load.scope) != set(table.replace_key) or not local.num_rows:
        return False
    return all(
        local.column(name).to_pylist() == [value] * local.num_rows for name, value in load.scope.items()
    )


def _last_of_each_key(rows: pa.Table, key: Sequence[str]) -> pa.Table:
    """`rows` with, of the rows that share a key, only the last."""
    numbered = rows.append_column("_position", pa.array(range(rows.num_rows), pa.int64()))
    last = numbered.group_by(list(key)).aggregate([("_position", "max")]).column("_position_max")
    return rows.take(pc.sort_indices(last))
