"""What a layout is: a set of tables and how to build their rows from the canonical frame."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

from pyspark.sql import DataFrame

from synclog.capabilities import Capabilities
from synclog.model import Run
from synclog.payload_schema import FieldType
from synclog.targets.base import Target
from synclog.targets.rows import Rows
from synclog.targets.tables import TableSpec


@dataclass(frozen=True)
class Load:
    """Rows for one table, and what they replace (see `Target.replace_rows`)."""

    table: TableSpec
    rows: Rows
    scope: Mapping[str, Any] = field(default_factory=dict)
    """Column → value: every row of the table matching it is replaced (empty: by `replace_key`)."""


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
    payload_schema: Mapping[str, FieldType] | None = None
    """For `run_rows`, the run's payload schema as its writes computed it (None: not computed)."""


class Layout(ABC):
    """A family of log tables (census, hightouch, lake) built from the canonical frame."""

    name: ClassVar[str]
    tables: ClassVar[tuple[TableSpec, ...]]
    needs_payload_schema: ClassVar[bool] = False
    """The layout records the run's payload schema: each write's tasks compute it as they go
    (`LayoutContext.payload_schema`), so it costs no pass of its own."""

    @abstractmethod
    def batch_rows(self, ctx: LayoutContext) -> Iterator[Load]:
        """Loads to make as soon as batches arrive, table by table."""

    def run_rows(self, ctx: LayoutContext) -> Iterator[Load]:
        """Loads to make once the run has ended; `ctx.records` then holds the whole run."""
        return iter(())

    def admit(self, run: Run, target: Target, ensure: Callable[[TableSpec], None]) -> None:
        """Raise InputError when the layout's tables on `target` cannot take `run` at all (checked
        before the run's first batch is logged; `ensure` makes a table exist first). Nothing
        by default: most layouts take any run."""
        return


class Phase(Enum):
    """When loads are made (the value names the step in a write's timings)."""

    BATCHES = "load"
    """As batches arrive: `Layout.batch_rows`."""
    RUN = "finish"
    """Once the run has ended: `Layout.run_rows`."""

    def loads(self, layout: Layout, ctx: LayoutContext) -> Iterator[Load]:
        """The loads `layout` makes in this phase."""
        return layout.batch_rows(ctx) if self is Phase.BATCHES else layout.run_rows(ctx)
