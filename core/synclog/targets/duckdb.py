"""The embedded default target: a DuckDB file, loaded in bulk from the staged Parquet files.

DuckDB's own module is imported when a target opens, not with this module: a process that only
names the target (an engine whose batches a loader loads, `synclog plugins`) never pays for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from synclog.capabilities import Capabilities, Casefold
from synclog.errors import ConfigError, TargetError, first_line
from synclog.naming import Relation
from synclog.storage.manifest import Manifest
from synclog.targets.base import TargetSettings, TargetType
from synclog.targets.sql import SqlTarget
from synclog.targets.sql_client import DbApiClient
from synclog.targets.sql_dialect import Params, SqlDialect
from synclog.targets.sql_loaders import FileLoader
from synclog.targets.tables import ColumnType, TableSpec
from synclog.urls import MEMORY, TargetURL

CAPABILITIES = Capabilities(
    json_type="JSON",
    casefold=Casefold.LOWER,
    max_identifier_length=255,
    transactions=True,
    exclusive=True,
)

MEMORY_LIMIT = "memory_limit"
DEFAULT_MEMORY_LIMIT = "512MB"
"""DuckDB's memory (its buffer pool: stages, hash tables, cached blocks) inside the driver process.
DuckDB's own default is 80% of the machine's RAM, and the driver holds the Spark driver too;
beyond the limit DuckDB spills to `<database>.tmp`, so a load's memory does not grow with its rows."""
_OPTIONS = (MEMORY_LIMIT,)


class DuckDBDialect(SqlDialect):
    """Standard SQL, timestamps with their time zone; stages are temporary tables."""

    type_names = {**SqlDialect.type_names, ColumnType.TIMESTAMP: "TIMESTAMPTZ"}
    temporary_stages = True


class DuckDBClient(DbApiClient):
    """Statements run on the connection itself (a DuckDB cursor is a connection of its own, with
    its own transactions and temporary tables); results come as Arrow from DuckDB."""

    begin_sql = "BEGIN TRANSACTION"

    @contextmanager
    def cursor(self, sql: str, params: Params = ()) -> Iterator[Any]:
        with self.errors():
            yield self.connection.execute(sql, self.driver_params(params))

    def affected_rows(self, cursor: Any) -> int:
        """DuckDB answers DML with one row holding the affected count."""
        result = cursor.fetchall()
        if result and len(result[0]) == 1 and isinstance(result[0][0], int):
            return int(result[0][0])
        return 0

    def query_bound(self, sql: str, params: Params) -> pa.Table:
        with self.errors():
            return self.connection.sql(sql, params=self.driver_params(params)).to_arrow_table()

    def batches_bound(self, sql: str, params: Params, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        with self.errors():
            yield from self.connection.sql(sql, params=self.driver_params(params)).to_arrow_reader(
                self.chunk_rows
            )


class DuckDBTarget(SqlTarget, FileLoader):
    """A DuckDB database file (or `:memory:`)."""

    client: DuckDBClient

    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        import duckdb

        path = database_path(url)
        memory_limit = settings.options_for(url, _OPTIONS).get(MEMORY_LIMIT, DEFAULT_MEMORY_LIMIT)
        try:
            if path != MEMORY:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            connection = duckdb.connect(path)
        except (OSError, duckdb.Error) as exc:
            raise TargetError(f"cannot open DuckDB database {path}: {exc}") from None
        connection.execute("SET TimeZone = 'UTC'")
        try:
            connection.execute("SET memory_limit = ?", [memory_limit])
        except duckdb.Error as exc:
            connection.close()
            raise ConfigError(f"DuckDB memory_limit {memory_limit!r}: {first_line(exc)}") from None
        # Outages: the file cannot be opened or is locked, the connection is gone, a transaction conflicts.
        outages = (duckdb.OperationalError, duckdb.TransactionException)
        client = DuckDBClient(connection, outages, f"DuckDB {path}", DuckDBDialect(capabilities))
        super().__init__(url, settings, capabilities, client)
        self.path = path

    # -- loading: a temporary stage filled from the staged files ------------------------------

    def stage_relation(self, relation: Relation) -> Relation:
        stage = super().stage_relation(relation)
        return Relation(database="temp", schema="main", name=stage.name, casefold=stage.casefold)

    def load_files(self, stage: Relation, table: TableSpec, manifest: Manifest) -> int:
        """DuckDB reads the Parquet files itself (downloaded first from an object store), in its
        own bounded memory, into the stage."""
        q = self.dialect.quote
        columns = ", ".join(q(c) for c in table.column_names())
        picked = ", ".join(_cast(q(c.name), c.type) for c in table.columns)
        with manifest.local_paths() as paths:
            return self.client.execute(
                f"INSERT INTO {stage.render()} ({columns}) SELECT {picked} FROM read_parquet(?)", [paths]
            )


def _cast(column: str, type_: ColumnType) -> str:
    if type_ is ColumnType.JSON:
        return f"CAST({column} AS JSON) AS {column}"
    if type_ is ColumnType.TIMESTAMP:
        return f"CAST({column} AS TIMESTAMPTZ) AS {column}"
    return column


def database_path(url: TargetURL) -> str:
    """The file a `duckdb:///relative.duckdb` or `duckdb:////absolute.duckdb` URL names."""
    return url.file_path()


def _refined(capabilities: Capabilities, url: TargetURL, _settings: TargetSettings) -> Capabilities:
    """A DuckDB file is locked by the process that has it open; `:memory:` is nobody else's."""
    return capabilities if url.file_path() != MEMORY else replace(capabilities, exclusive=False)


TARGET_TYPE = TargetType(
    name="duckdb",
    schemes=("duckdb",),
    capabilities=CAPABILITIES,
    summary="Embedded DuckDB file (the default); JSON payloads",
    opener=DuckDBTarget,
    example_url="duckdb:///synclog.duckdb",
    file_url=True,
    refine=_refined,
)
