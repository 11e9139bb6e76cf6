"""Record results in whatever form an engine holds them, made one Spark DataFrame at the edge.

`SyncLog.write` takes a Spark DataFrame, a pandas DataFrame, a pyarrow Table or RecordBatch, or
a list of dicts (one per record). Everything but a Spark DataFrame goes through Arrow once and
becomes a Spark DataFrame by `createDataFrame` (classic or Spark Connect alike). Only the
columns of the record schema (`synclog.INPUT_SCHEMA`) are kept; their types are checked
afterwards, like a Spark DataFrame's, by `records.check_columns`.

Timestamps without a time zone (naive datetimes, pandas' `datetime64` without tz, Arrow's
`timestamp` without tz, Spark's `TIMESTAMP_NTZ`) are taken to be UTC, whatever the Spark
session's time zone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from synclog.errors import InputError, first_line
from synclog.model import Run
from synclog.records import INPUT_ARROW_SCHEMA, INPUT_SCHEMA

if TYPE_CHECKING:
    import pandas as pd

Batch: TypeAlias = "DataFrame | pd.DataFrame | pa.Table | pa.RecordBatch | Sequence[Mapping[str, Any]]"
"""What `SyncLog.write` accepts as record results."""

_KNOWN = set(INPUT_SCHEMA.fieldNames())


@dataclass(frozen=True)
class Write:
    """One write of a run: record results of one or more of its batches (see `SyncLog.write_all`)."""

    run: Run
    records: Batch


def normalized(batch: Batch) -> DataFrame | pa.Table:
    """`batch` as a Spark DataFrame (naive timestamps read as UTC) or, anything else, as Arrow
    (`as_arrow`)."""
    return _naive_as_utc(batch) if isinstance(batch, DataFrame) else as_arrow(batch)


def as_frame(batch: Batch, spark: Callable[[], SparkSession]) -> tuple[DataFrame, T.StructType]:
    """`batch` as a Spark DataFrame, and its schema; `spark()` gives the session for anything but a
    Spark DataFrame, whose schema is then known without asking Spark."""
    records = normalized(batch)
    if isinstance(records, DataFrame):
        return records, records.schema
    table = records
    schema = from_arrow_schema(table.schema)
    return spark().createDataFrame(table, schema=schema), schema


def as_arrow(batch: Batch) -> pa.Table:
    """`batch` (anything but a Spark DataFrame) as an Arrow table of its record-schema columns, its
    timestamps in microseconds, UTC (InputError for what Arrow cannot hold)."""
    table = _as_arrow(batch)
    try:
        names = table.column_names
        return pa.Table.from_arrays(
            [_conformed(table.column(n), table.schema.field(n).type, n) for n in names], names=names
        )
    except pa.ArrowException as exc:
        raise InputError(f"record results: {first_line(exc)}") from None


def _as_arrow(batch: Batch) -> pa.Table:
    """The record-schema columns of `batch` as an Arrow table (InputError for anything else)."""
    try:
        if is_frame(batch, "pandas"):
            frame = cast("pd.DataFrame", batch)
            kept = [c for c in frame.columns if c in _KNOWN]
            return pa.Table.from_pandas(frame[kept], preserve_index=False)
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        if isinstance(batch, pa.Table):
            return batch.select([c for c in batch.column_names if c in _KNOWN])
        if isinstance(batch, Sequence) and not isinstance(batch, str | bytes):
            if not all(isinstance(row, Mapping) for row in batch):
                raise InputError("record results: a list of records must hold dicts only")
            if not batch:
                return INPUT_ARROW_SCHEMA.empty_table()
            present = {key for row in batch for key in row if key in _KNOWN}
            return pa.Table.from_pylist([{k: row.get(k) for k in present} for row in batch])
    except pa.ArrowException as exc:
        raise InputError(f"record results: {first_line(exc)}") from None
    raise InputError(
        "record results must be a Spark or pandas DataFrame, a pyarrow Table or RecordBatch, "
        f"or a list of dicts, got {type(batch).__name__}"
    )


def is_frame(batch: object, package: str) -> bool:
    """Whether `batch` is a DataFrame of `package` (pandas, pyspark), asked of its class alone: no
    import, and no look into `sys.modules`, where another thread's import may be half done."""
    return any(
        k.__name__ == "DataFrame" and k.__module__.startswith(f"{package}.") for k in type(batch).__mro__
    )


def _conformed(column: pa.ChunkedArray, kind: pa.DataType, name: str) -> pa.ChunkedArray:
    """A column Spark takes as the record schema means it: naive or nanosecond timestamps become
    microseconds in UTC, and an all-NULL column (Arrow's null type) gets the schema's type."""
    if pa.types.is_null(kind):
        return column.cast(INPUT_ARROW_SCHEMA.field(name).type)
    if pa.types.is_timestamp(kind) and (kind.tz is None or kind.unit != "us"):
        return column.cast(pa.timestamp("us", tz=kind.tz or "UTC"), safe=False)
    return column


def _naive_as_utc(frame: DataFrame) -> DataFrame:
    """`frame` with its `TIMESTAMP_NTZ` record columns read as UTC wall-clock times."""
    naive = [
        f.name for f in frame.schema.fields if f.name in _KNOWN and isinstance(f.dataType, T.TimestampNTZType)
    ]
    if not naive:
        return frame
    zone = frame.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    return frame.withColumns({name: _utc(F.col(name), zone) for name in naive})


def _utc(naive: Column, zone: str) -> Column:
    """The instant whose UTC wall-clock time is `naive` (a cast alone would read it in `zone`)."""
    return F.convert_timezone(F.lit("UTC"), F.lit(zone), naive).cast("timestamp")
