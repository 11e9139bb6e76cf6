"""The client of a SQL target: run statements, fetch rows, insert rows, commit together, stream results.

`SqlTarget` holds a `SqlClient` (`target.client`) and sends all its SQL through it; the client
binds each statement by its dialect first (`SqlDialect.bind`). `DbApiClient` is the client over a
DB-API 2.0 connection (PEP 249): cursors, `BEGIN`/`COMMIT`/`ROLLBACK`, results as Arrow, streamed
in chunks; a plugin subclasses it only where its driver differs, or implements `SqlClient` itself
over a driver of another kind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any, ClassVar, final

import pyarrow as pa

from synclog.errors import Outage, TargetError, outages
from synclog.targets import export, sql_statements
from synclog.targets.sql_dialect import Params, SqlDialect
from synclog.targets.sql_statements import Statement


class SqlClient(ABC):
    """A connection to a warehouse spoken to in SQL, in its `dialect`.

    Every statement a SQL target sends passes through the public methods here (`execute`,
    `fetch`, `query`, `result_batches`, `insert_rows`, `transaction`), which take the core's SQL
    (`dialect.placeholder` marking values) and bind it as the driver takes it (`SqlDialect.bind`)
    before the driver-level methods a client implements (`execute_bound`, `fetch_bound`,
    `query_bound`, optionally `batches_bound`): one place to watch, time or fail a target's
    statements."""

    chunk_rows: ClassVar[int] = export.CHUNK_ROWS
    """Rows per chunk when `result_batches` streams a result (a cursor's `fetchmany`, a page)."""

    def __init__(self, dialect: SqlDialect) -> None:
        self.dialect = dialect
        """The SQL this client's warehouse speaks; its parameter markers bind every statement."""

    @final
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return the affected row count where the driver knows it."""
        return self.execute_bound(*self.dialect.bind(sql, params))

    @final
    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query and return all its (small) result rows."""
        return self.fetch_bound(*self.dialect.bind(sql, params))

    @final
    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        """Run a read-only query and return its (small) result as Arrow."""
        return self.query_bound(*self.dialect.bind(sql, params))

    @final
    def result_batches(self, sql: str, params: Sequence[Any], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """A query's result in record batches: `schema`'s columns, in order (for read-backs)."""
        return self.batches_bound(*self.dialect.bind(sql, params), schema)

    @final
    def run_together(self, statements: Sequence[Statement]) -> int:
        """Run `statements` in one transaction; the rows they affected."""
        with self.transaction():
            return sum(self.execute(sql, params) for sql, params in statements)

    def insert_rows(self, relation: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """Insert `rows` (values in `columns`' order: quoted names) into `relation` (rendered): the
        one path rows the driver holds take into a table (`synclog_versions`' rows). This default
        runs `INSERT INTO relation (columns) VALUES (p, …)` per row; override where the driver
        sends rows another way (a data block over a native protocol)."""
        insert = sql_statements.insert_values(relation, columns, self.dialect.placeholder)
        return sum(self.execute(insert, row) for row in rows)

    @abstractmethod
    def execute_bound(self, sql: str, params: Params) -> int:
        """Run one statement whose parameters are bound as the driver takes them; the affected
        row count where the driver knows it."""

    @abstractmethod
    def fetch_bound(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        """Run a query bound as the driver takes it; all its (small) result rows."""

    @abstractmethod
    def query_bound(self, sql: str, params: Params) -> pa.Table:
        """Run a read-only query bound as the driver takes it; its (small) result as Arrow."""

    def batches_bound(self, sql: str, params: Params, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """`result_batches` of a query bound as the driver takes it. Columns are matched by position
        and cast to `schema`'s types by the caller. This default holds the whole result
        (`query_bound`); clients stream it in chunks."""
        yield from self.query_bound(sql, params).to_batches()

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """Everything inside commits together or not at all."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""


class DbApiClient(SqlClient):
    """A `SqlClient` over a DB-API 2.0 connection: a cursor per statement, the driver's errors
    among `outages` turned into one-line TargetErrors (naming `where`), transactions by
    `begin_sql`/COMMIT/ROLLBACK on a connection in autocommit mode, results as Arrow.

    Override points, where a driver differs: `begin_sql`, `driver_params` (values and their
    container as the driver takes them), `cursor`, `affected_rows` (a driver that answers DML
    with a row), `query_bound` and `batches_bound` (a driver with Arrow results of its own),
    `insert_rows` (a driver with a bulk insert), `transaction` (a driver with its own, or a
    warehouse without), `close`.
    """

    begin_sql: ClassVar[str] = "BEGIN"
    """The statement that starts a transaction (`BEGIN IMMEDIATE` on SQLite)."""

    def __init__(self, connection: Any, outages: Iterable[Outage], where: str, dialect: SqlDialect) -> None:
        super().__init__(dialect)
        self.connection = connection
        self.outages = tuple(outages)
        self.where = where

    @final
    def errors(self) -> AbstractContextManager[None]:
        """Inside, the driver's outages are one-line TargetErrors; any other error passes through."""
        return outages(self.outages, self.where)

    def driver_params(self, params: Params) -> Any:
        """What the driver's `execute` is given: the values, or None without any (so that a `%s`
        driver sends a statement without parameters as it is, `LIKE 'a%'` included)."""
        if isinstance(params, Sequence):
            return list(params) or None
        return dict(params) or None

    def affected_rows(self, cursor: Any) -> int:
        """The rows a statement affected: the cursor's `rowcount` (-1 where unknown: 0)."""
        return max(cursor.rowcount or 0, 0)

    @contextmanager
    def cursor(self, sql: str, params: Params = ()) -> Iterator[Any]:
        """A cursor that ran `sql`, closed when the block ends; the driver's outages as TargetErrors.
        Override where a statement runs on the connection itself (DuckDB, whose cursors are
        connections of their own)."""
        with self.errors():
            cursor = self.connection.cursor()
            try:
                cursor.execute(sql, self.driver_params(params))
                yield cursor
            finally:
                cursor.close()

    @final
    def execute_bound(self, sql: str, params: Params) -> int:
        with self.cursor(sql, params) as cursor:
            return self.affected_rows(cursor)

    @final
    def fetch_bound(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        with self.cursor(sql, params) as cursor:
            return [tuple(row) for row in cursor.fetchall()]

    def query_bound(self, sql: str, params: Params) -> pa.Table:
        """The result as Arrow, one column per column of the cursor's description, typed by Arrow
        from the values (the core casts it to the types it expects)."""
        with self.cursor(sql, params) as cursor:
            names = [column[0] for column in cursor.description or ()]
            rows = cursor.fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
        return pa.Table.from_arrays([pa.array(list(c)) for c in columns], names=names)

    def batches_bound(self, sql: str, params: Params, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """The result `fetchmany(chunk_rows)` at a time, typed with `schema`."""
        with self.cursor(sql, params) as cursor:
            while rows := cursor.fetchmany(self.chunk_rows):
                yield export.rows_batch(rows, schema)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """`begin_sql`, then COMMIT, or ROLLBACK when the block fails (the block's error is
        raised, not an outage that the ROLLBACK met)."""
        self.execute(self.begin_sql)
        try:
            yield
        except BaseException:
            with suppress(TargetError):
                self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def close(self) -> None:
        with self.errors():
            self.connection.close()
