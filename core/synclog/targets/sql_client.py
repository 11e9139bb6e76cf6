"""The connection half of a SQL target: run statements, fetch rows, commit together, stream results.

`SqlTarget` builds its SQL with `synclog.targets.sql_statements` and runs it through these
methods only; a plugin implements them over its driver.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import pyarrow as pa

from synclog.targets import export
from synclog.targets.sql_statements import Statement


class SqlClient(ABC):
    """A connection to a warehouse spoken to in SQL (`placeholder` and `close` are `Target`'s)."""

    chunk_rows: ClassVar[int] = export.CHUNK_ROWS
    """Rows per chunk when `result_batches` streams a result (a cursor's `fetchmany`, a page)."""

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return the affected row count where the driver knows it."""

    @abstractmethod
    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query and return all its (small) result rows."""

    @abstractmethod
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside commits together or not at all."""

    @abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        """Run a read-only query with positional parameters and return its (small) result."""

    def result_batches(self, sql: str, params: Sequence[Any], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """A query's result in record batches: `schema`'s columns, in order (for read-backs).

        Columns are matched by position and cast to `schema`'s types by the caller. This
        default holds the whole result (`query`); targets stream it in chunks.
        """
        yield from self.query(sql, params).to_batches()

    def run_together(self, statements: Sequence[Statement]) -> int:
        """Run `statements` in one transaction; the rows they affected."""
        with self.transaction():
            return sum(self.execute(sql, params) for sql, params in statements)
