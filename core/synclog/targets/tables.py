"""The tables a target holds, warehouse-neutral: columns with logical types, keys, and retention."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

import pyarrow as pa
from pyspark.sql import types as T


class ColumnType(StrEnum):
    """Logical column types; each target maps them to its physical types."""

    BIGINT = "bigint"
    INTEGER = "integer"
    STRING = "string"
    JSON = "json"
    TIMESTAMP = "timestamp"
    BOOLEAN = "boolean"

    def spark(self) -> T.DataType:
        """The Spark type a frame carries for this column (JSON travels as text)."""
        return _SPARK[self]

    def arrow(self) -> pa.DataType:
        """The Arrow type of this column in staged files and read-backs (JSON travels as text)."""
        return _ARROW[self]


_SPARK: dict[ColumnType, T.DataType] = {
    ColumnType.BIGINT: T.LongType(),
    ColumnType.INTEGER: T.IntegerType(),
    ColumnType.STRING: T.StringType(),
    ColumnType.JSON: T.StringType(),
    ColumnType.TIMESTAMP: T.TimestampType(),
    ColumnType.BOOLEAN: T.BooleanType(),
}


_ARROW: dict[ColumnType, pa.DataType] = {
    ColumnType.BIGINT: pa.int64(),
    ColumnType.INTEGER: pa.int32(),
    ColumnType.STRING: pa.string(),
    ColumnType.JSON: pa.string(),
    ColumnType.TIMESTAMP: pa.timestamp("us", tz="UTC"),
    ColumnType.BOOLEAN: pa.bool_(),
}


@dataclass(frozen=True)
class Column:
    """One column of a log table."""

    name: str
    type: ColumnType
    description: str = ""
    run_metadata: bool = False
    """Source/destination ids: left out where a target cannot carry them."""


@dataclass(frozen=True)
class TableSpec:
    """A table a layout writes: its columns, how a replay replaces rows, and retention."""

    layout: str
    schema: str
    name: str
    columns: tuple[Column, ...]
    replace_key: tuple[str, ...]
    """Rows whose key matches an incoming row's key are replaced, atomically, by the new ones."""
    time_column: str | None = None
    """Day-partitioning and retention column (the batch's own time)."""
    retained: bool = False
    """Whether retention deletes expired rows from this table."""
    view: str | None = None
    """Name of the public view over this table, when readers query a view."""
    run_metadata: bool = False
    """A metadata table, written only where the target carries run metadata."""

    def column_names(self) -> list[str]:
        """Column names in table order."""
        return [c.name for c in self.columns]

    def spark_schema(self) -> T.StructType:
        """The Spark schema of the frames loaded into this table."""
        return T.StructType([T.StructField(c.name, c.type.spark(), True) for c in self.columns])

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of this table's rows."""
        return pa.schema([pa.field(c.name, c.type.arrow()) for c in self.columns])

    def without_run_metadata(self) -> TableSpec:
        """The same table minus the source/destination id columns."""
        return replace(self, columns=tuple(c for c in self.columns if not c.run_metadata))

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}"
