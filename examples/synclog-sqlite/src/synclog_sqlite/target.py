"""The SQLite target: `sqlite:///logs.sqlite` is the main database file; each schema a layout
writes (census, hightouch_audit) is a file next to it, `logs.census.sqlite`, attached under the
schema's name, so tables are named `census.sync_log` as everywhere else.

What SQLite lacks, its capabilities say, and the core adapts: no CREATE SCHEMA
(`Schemas.ATTACHED`: the core calls `attach_schema`, which attaches the schema's file), no CREATE
OR REPLACE VIEW (`replace_view=False`), no JSON type (JSON is stored as TEXT), no QUALIFY, and a
CAST that follows type affinity (`read_casts=False`: read-backs take stored values as they are).
Timestamps are stored as ISO-8601 text in UTC with microseconds, `2026-03-01 08:00:00.000000+00:00`,
which sorts and compares as time does; the core casts query results to its Arrow types.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from synclog import plugin_api as api

CAPABILITIES = api.Capabilities(
    json_type="TEXT",
    casefold=api.Casefold.LOWER,
    max_identifier_length=128,
    transactions=True,
    merge=False,
    views=True,
    replace_view=False,
    schemas=api.Schemas.ATTACHED,
    read_casts=False,
    staging=api.Staging.FILES,
)

SCHEMAS_TABLE = "synclog_schemas"
"""In the main database: the schemas synclog attached, and their files (attached again on open)."""

_OUTAGES = (
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_CANTOPEN",
    "SQLITE_IOERR",
    "SQLITE_FULL",
    "SQLITE_READONLY",
)
"""Error codes of a file that cannot be opened, written or locked: outages, which writes survive.
Anything else (SQL SQLite rejects) is a bug and passes through as it is."""


def is_outage(exc: BaseException) -> bool:
    """sqlite3 raises one OperationalError for a locked file and for SQL it rejects: its error name
    (`SQLITE_BUSY`, or an extended one such as `SQLITE_IOERR_WRITE`) tells them apart."""
    name = getattr(exc, "sqlite_errorname", None) or ""  # on errors the SQLite library reports
    return isinstance(exc, sqlite3.Error) and name.startswith(_OUTAGES)


class SqliteDialect(api.SqlDialect):
    """Integers, text and SQLite's TIMESTAMP affinity."""

    type_names = {
        **api.SqlDialect.type_names,
        api.ColumnType.BIGINT: "INTEGER",
        api.ColumnType.STRING: "TEXT",
    }


class SqliteClient(api.DbApiClient):
    """sqlite3 over a connection in autocommit mode: `BEGIN IMMEDIATE` takes the write lock at
    once; timestamps are bound as ISO-8601 UTC text and booleans as 0 / 1."""

    begin_sql = "BEGIN IMMEDIATE"

    def batches_bound(self, sql: str, params: api.Params, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """The whole result as `query` gives it (booleans as 0 / 1, timestamps as text): the core
        casts it to `schema`, which SQLite's values do not take as they are."""
        yield from self.query_bound(sql, params).to_batches()

    def insert_rows(self, relation: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """One `executemany` of the core's INSERT, each row bound as every statement is."""
        insert = api.sql_statements.insert_values(relation, columns, self.dialect.placeholder)
        bound = [self.dialect.bind(insert, row) for row in rows]
        if bound:
            with self.errors():
                self.connection.executemany(bound[0][0], [self.driver_params(p) for _, p in bound])
        return len(rows)

    def driver_params(self, params: api.Params) -> Any:
        if isinstance(params, Sequence):
            return [_value(value) for value in params]
        return {name: _value(value) for name, value in params.items()}


class SqliteTarget(api.SqlTarget, api.FileLoader, api.SchemaAttacher):
    """A SQLite database file (or `sqlite:///:memory:`), with a file per schema."""

    client: SqliteClient

    def __init__(
        self, url: api.TargetURL, settings: api.TargetSettings, capabilities: api.Capabilities
    ) -> None:
        self.path = url.file_path()  # the core has refused a missing file to read-only commands
        where, outages = f"SQLite {self.path}", (OSError, is_outage)
        with api.outages(outages, where):
            if self.path != api.MEMORY:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        client = SqliteClient(connection, outages, where, SqliteDialect(capabilities))
        super().__init__(url, settings, capabilities, client)
        self.client.execute(
            f"CREATE TABLE IF NOT EXISTS main.{SCHEMAS_TABLE} (name TEXT PRIMARY KEY, file TEXT)"
        )
        for name, file in self.client.fetch(f"SELECT name, file FROM main.{SCHEMAS_TABLE}"):
            self._attach(name, file)

    # -- schemas are attached files; introspection by PRAGMA -----------------------------------

    def schema_file(self, schema: str) -> str:
        """The file of `schema`, next to the main one: `logs.sqlite` → `logs.census.sqlite`."""
        if self.path == api.MEMORY:
            return api.MEMORY
        main = Path(self.path)
        return str(main.with_name(f"{main.stem}.{schema}{main.suffix}"))

    def _attached(self) -> set[str]:
        return {row[1] for row in self.client.fetch("PRAGMA database_list")}

    def _attach(self, schema: str, file: str) -> None:
        if file != api.MEMORY and not Path(file).is_absolute() and self.path != api.MEMORY:
            file = str(Path(self.path).parent / file)
        self.client.execute(f"ATTACH DATABASE ? AS {self.dialect.quote(schema)}", [file])

    def attach_schema(self, relation: api.Relation) -> None:
        """Attach the schema's file under its name (creating it), and remember it in the main file."""
        schema = relation.parts[-2]
        if schema in self._attached():
            return
        file = self.schema_file(schema)
        self._attach(schema, file)
        stored = file if file == api.MEMORY else Path(file).name
        self.client.execute(f"INSERT OR REPLACE INTO main.{SCHEMAS_TABLE} VALUES (?, ?)", [schema, stored])

    def _attach_recorded(self, schema: str) -> bool:
        """Attach `schema` if another connection created it since this one opened (the main file
        lists it); whether it is attached now."""
        recorded = self.client.fetch(f"SELECT file FROM main.{SCHEMAS_TABLE} WHERE name = ?", [schema])
        if recorded:
            self._attach(schema, recorded[0][0])
        return bool(recorded)

    def existing_columns(self, relation: api.Relation) -> list[str] | None:
        schema, name = relation.parts[-2], relation.parts[-1]
        if schema not in self._attached() and not self._attach_recorded(schema):
            return None
        rows = self.client.fetch(
            f"PRAGMA {self.dialect.quote(schema)}.table_info({self.dialect.quote(name)})"
        )
        return [row[1] for row in rows] or None

    # -- loading: a temporary stage filled from the staged Parquet files -----------------------

    def find_stages(self, relation: api.Relation) -> list[tuple[api.Relation, datetime | None]]:
        """None to sweep: a stage is a temporary table, which ends with its connection."""
        return []

    def stage_relation(self, relation: api.Relation) -> api.Relation:
        stage = super().stage_relation(relation)
        return api.Relation(schema="temp", name=stage.name, casefold=stage.casefold)

    def load_files(self, stage: api.Relation, table: api.TableSpec, manifest: api.Manifest) -> int:
        """Insert the staged files' rows into the stage, batch by batch (`insert_rows`), in one
        transaction."""
        columns = [self.dialect.quote(c) for c in table.column_names()]
        loaded = 0
        with self.client.transaction():
            for batch in manifest.batches(self.stage_schema(table)):
                rows = [list(row.values()) for row in batch.to_pylist()]
                loaded += self.client.insert_rows(stage.render(), columns, rows)
        return loaded


def _value(value: Any) -> Any:
    """A Python value as SQLite stores it: timestamps as UTC ISO-8601 text, booleans as 0 / 1."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, bool):
        return int(value)
    return value
