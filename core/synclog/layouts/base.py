"""What a layout is: a set of tables and how to build their rows from the canonical frame."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import DataFrame

from synclog.capabilities import Capabilities
from synclog.layouts.table import ColumnType, Rows, TableSpec
from synclog.model import Run

_ARROW: dict[ColumnType, pa.DataType] = {
    ColumnType.BIGINT: pa.int64(),
    ColumnType.INTEGER: pa.int32(),
    ColumnType.STRING: pa.string(),
    ColumnType.JSON: pa.string(),
    ColumnType.TIMESTAMP: pa.timestamp("us", tz="UTC"),
    ColumnType.BOOLEAN: pa.bool_(),
}


def arrow_schema(table: TableSpec) -> pa.Schema:
    """The Arrow schema of `table`'s columns (JSON travels as text)."""
    return pa.schema([pa.field(c.name, _ARROW[c.type]) for c in table.columns])


def arrow_rows(table: TableSpec, rows: list[dict[str, Any]]) -> pa.Table:
    """A small Arrow table with exactly `table`'s columns, for rows built on the driver."""
    return pa.Table.from_pylist(rows, schema=arrow_schema(table))


def _nothing(_table: TableSpec) -> DataFrame | None:
    return None


@dataclass(frozen=True)
class LayoutContext:
    """What a layout builds its rows from."""

    run: Run
    records: DataFrame
    """The canonical frame of the batches being written (see `synclog.canonical`)."""
    capabilities: Capabilities
    previous: Callable[[TableSpec], DataFrame | None] = _nothing
    """What a table holds for the run's sync, to diff against (`Target.read_rows`); None if nothing."""


class Layout(ABC):
    """A family of log tables (census, hightouch, lake) built from the canonical frame."""

    name: ClassVar[str]
    tables: ClassVar[tuple[TableSpec, ...]]

    @abstractmethod
    def batch_rows(self, ctx: LayoutContext) -> Iterator[tuple[TableSpec, Rows]]:
        """Rows to load as soon as batches arrive, table by table."""

    def run_rows(self, ctx: LayoutContext) -> Iterator[tuple[TableSpec, Rows]]:
        """Rows to load once the run has ended; `ctx.records` then holds the whole run."""
        return iter(())
