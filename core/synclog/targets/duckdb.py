"""The embedded default target: a DuckDB file, loaded in bulk from Parquet or Arrow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pyarrow as pa
from pyspark.sql import DataFrame

from synclog.capabilities import Capabilities, Casefold
from synclog.errors import ConfigError, TargetError
from synclog.layouts.table import ColumnType, TableSpec
from synclog.plugins.hookspecs import hookimpl
from synclog.staging import parquet_stage
from synclog.targets.base import Rows, TargetSettings, TargetType
from synclog.targets.sql import SqlTarget
from synclog.urls import TargetURL

CAPABILITIES = Capabilities(
    json_type="JSON",
    casefold=Casefold.LOWER,
    max_identifier_length=255,
    transactions=True,
    merge=False,
    staging_formats=("parquet", "arrow"),
    embedded=True,
)

_STAGE = "_synclog_stage"


class DuckDBTarget(SqlTarget):
    """A DuckDB database file (or `:memory:`)."""

    capabilities: ClassVar[Capabilities] = CAPABILITIES
    type_names: ClassVar[dict[ColumnType, str]] = {
        ColumnType.BIGINT: "BIGINT",
        ColumnType.INTEGER: "INTEGER",
        ColumnType.STRING: "VARCHAR",
        ColumnType.JSON: "JSON",
        ColumnType.TIMESTAMP: "TIMESTAMPTZ",
        ColumnType.BOOLEAN: "BOOLEAN",
    }

    def __init__(self, url: TargetURL, settings: TargetSettings) -> None:
        super().__init__(url, settings)
        self.path = database_path(url)
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self.connection = duckdb.connect(self.path)
        except (OSError, duckdb.Error) as exc:
            raise TargetError(f"cannot open DuckDB database {self.path}: {exc}") from None
        self.connection.execute("SET TimeZone = 'UTC'")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        result = self.connection.execute(sql, list(params)).fetchall()
        # DuckDB answers DML with one row holding the affected count.
        if result and len(result[0]) == 1 and isinstance(result[0][0], int):
            return int(result[0][0])
        return 0

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.connection.execute(sql, list(params)).fetchall()

    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        return self.connection.sql(sql, params=list(params) or None).to_arrow_table()

    def export_parquet(self, sql: str, params: Sequence[Any], path: str, schema: pa.Schema) -> None:
        # DuckDB streams the result into the file; the query already names and casts the columns.
        self.connection.sql(sql, params=list(params) or None).write_parquet(path)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.connection.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    def replace_rows(self, table: TableSpec, rows: Rows) -> int:
        spec = self.table_spec(table)
        if isinstance(rows, DataFrame):
            with parquet_stage(rows, self.settings.staging_dir) as files:
                if not files:
                    return 0
                return self._load(spec, "read_parquet(?)", [files])
        self.connection.register("_synclog_arrow", rows)
        try:
            return self._load(spec, "_synclog_arrow", [])
        finally:
            self.connection.unregister("_synclog_arrow")

    def _load(self, table: TableSpec, source: str, params: list[Any]) -> int:
        relation = self.relation(table)
        names = table.column_names()
        columns = ", ".join(self.quote(c) for c in names)
        picked = ", ".join(_cast(self.quote(c.name), c.type) for c in table.columns)
        with self.transaction():
            self.connection.execute(
                f"CREATE OR REPLACE TEMP TABLE {_STAGE} AS SELECT {picked} FROM {source}", params
            )
            self.connection.execute(
                f"DELETE FROM {relation.render()} WHERE {self.key_match_sql(_STAGE, table.replace_key)}"
            )
            self.connection.execute(
                f"INSERT INTO {relation.render()} ({columns}) SELECT {columns} FROM {_STAGE}"
            )
            (count,) = self.connection.execute(f"SELECT count(*) FROM {_STAGE}").fetchone()
            self.connection.execute(f"DROP TABLE {_STAGE}")
        return int(count)

    def close(self) -> None:
        self.connection.close()


def _cast(column: str, type_: ColumnType) -> str:
    if type_ is ColumnType.JSON:
        return f"CAST({column} AS JSON) AS {column}"
    if type_ is ColumnType.TIMESTAMP:
        return f"CAST({column} AS TIMESTAMPTZ) AS {column}"
    return column


def database_path(url: TargetURL) -> str:
    """The file a `duckdb:///relative.duckdb` or `duckdb:////absolute.duckdb` URL names."""
    if url.host:
        raise ConfigError(
            f"{url}: a DuckDB URL has no host; use duckdb:///relative.duckdb "
            "or duckdb:////absolute/path.duckdb"
        )
    path = url.path[1:] if url.path.startswith("/") else url.path
    if not path:
        raise ConfigError(f"{url}: name a database file, e.g. duckdb:///synclog.duckdb")
    return path


TARGET_TYPE = TargetType(
    name="duckdb",
    schemes=("duckdb",),
    capabilities=CAPABILITIES,
    summary="Embedded DuckDB file (the default); JSON payloads",
    opener=DuckDBTarget,
    example_url="duckdb:///synclog.duckdb",
)


@hookimpl
def synclog_register_targets(register: Any) -> None:
    """Register the built-in DuckDB target."""
    register(TARGET_TYPE)
