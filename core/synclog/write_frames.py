"""Many writes as one canonical frame, so that one Spark job validates, keeps and stages them all.

A loader hands `SyncLog.write_all` the batches many engines queued: writes of many runs of many
syncs. Each write keeps its identity in the `WRITE` column (its position in the call). Writes
given as Arrow (lists of dicts, pandas and Arrow are made Arrow at the edge) with the same columns
and the same payload policy go to Spark together, in one `createDataFrame`, and share the
canonical frame's one shuffle (`synclog.canonical`: the identifier checks are made within each
write); a Spark DataFrame is a group of its own. The groups' canonical frames are one union.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import IntegerType, StructField, StructType

from synclog.canonical import WRITE, canonical_frame
from synclog.model import Run
from synclog.privacy import PayloadTransform


@dataclass(frozen=True)
class Prepared:
    """One write whose columns were checked: ready for the job."""

    index: int
    """Its position among the writes of the call (`SyncLog.write_all`)."""
    run: Run
    records: DataFrame | pa.Table
    schema: StructType
    batches: tuple[int, ...] | None
    """The batch numbers it holds, where known without a Spark job (not for a Spark DataFrame)."""
    transform: PayloadTransform | None
    pattern: str
    """The sync's error-code pattern (`synclog.error_codes`)."""


def canonical_of(
    writes: Sequence[Prepared], spark: Callable[[], SparkSession], logged_at: datetime
) -> DataFrame:
    """One canonical frame holding every write of `writes` (`WRITE`: its position in `writes`)."""
    groups: dict[object, list[int]] = {}
    for position, write in enumerate(writes):
        groups.setdefault(_group_of(write, position), []).append(position)
    frames = []
    for members in groups.values():
        first = writes[members[0]]
        runs = {position: writes[position].run for position in members}
        records, schema = _records(writes, members, spark)
        frames.append(canonical_frame(runs, records, logged_at, first.transform, first.pattern, schema))
    return reduce(DataFrame.union, frames)


def _group_of(write: Prepared, position: int) -> object:
    """Writes that can go to Spark together: Arrow of one schema, one payload policy, one pattern."""
    if isinstance(write.records, DataFrame):
        return ("frame", position)
    policy = None if write.transform is None else write.run.sync_id
    return ("arrow", write.records.schema, policy, write.pattern)


def _records(
    writes: Sequence[Prepared], members: list[int], spark: Callable[[], SparkSession]
) -> tuple[DataFrame, StructType]:
    """The record results of a group, each row with its write's position (`WRITE`)."""
    first = writes[members[0]]
    if isinstance(first.records, DataFrame):
        return first.records.withColumn(WRITE, F.lit(members[0])), _with_write(first.schema)
    tables = []
    for position in members:
        table = writes[position].records
        assert isinstance(table, pa.Table)
        tables.append(table.append_column(WRITE, pa.array([position] * table.num_rows, pa.int32())))
    together = pa.concat_tables(tables)
    schema = from_arrow_schema(together.schema)
    return spark().createDataFrame(together, schema=schema), schema


def _with_write(schema: StructType) -> StructType:
    return StructType([*schema.fields, StructField(WRITE, IntegerType(), False)])
