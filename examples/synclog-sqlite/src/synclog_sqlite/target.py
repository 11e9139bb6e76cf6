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
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

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


class SqliteTarget(api.SqlTarget, api.FileLoader, api.SchemaAttacher):
    """A SQLite database file (or `sqlite:///:memory:`), with a file per schema."""

    placeholder: ClassVar[str] = "?"
    type_names: ClassVar[dict[api.ColumnType, str]] = {
        api.ColumnType.BIGINT: "INTEGER",
        api.ColumnType.INTEGER: "INTEGER",
        api.ColumnType.STRING: "TEXT",
        api.ColumnType.TIMESTAMP: "TIMESTAMP",
        api.ColumnType.BOOLEAN: "BOOLEAN",
    }

    def __init__(
        self, url: api.TargetURL, settings: api.TargetSettings, capabilities: api.Capabilities
    ) -> None:
        super().__init__(url, settings, capabilities)
        self.path = url.file_path()  # the core has refused a missing file to read-only commands
        with self._errors():
            if self.path != api.MEMORY:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self.connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.execute(
                f"CREATE TABLE IF NOT EXISTS main.{SCHEMAS_TABLE} (name TEXT PRIMARY KEY, file TEXT)"
            )
            for name, file in self.fetch(f"SELECT name, file FROM main.{SCHEMAS_TABLE}"):
                self._attach(name, file)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except (sqlite3.OperationalError, OSError) as exc:
            code = getattr(exc, "sqlite_errorname", "") or ""
            if isinstance(exc, OSError) or code.startswith(_OUTAGES):
                raise api.TargetError(f"SQLite {self.path}: {api.first_line(exc)}") from None
            raise

    # -- the connection ------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._errors():
            return max(self.connection.execute(sql, _params(params)).rowcount, 0)

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._errors():
            return self.connection.execute(sql, _params(params)).fetchall()

    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        """The result as Arrow: integers, floats and text as SQLite returns them (timestamps as
        ISO-8601 text, booleans as 0 / 1); the core casts to the types it expects."""
        with self._errors():
            cursor = self.connection.execute(sql, _params(params))
            names = [d[0] for d in cursor.description or ()]
            rows = cursor.fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
        return pa.Table.from_arrays([pa.array(list(c)) for c in columns], names=names)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def close(self) -> None:
        self.connection.close()

    # -- schemas are attached files; introspection by PRAGMA -----------------------------------

    def schema_file(self, schema: str) -> str:
        """The file of `schema`, next to the main one: `logs.sqlite` → `logs.census.sqlite`."""
        if self.path == api.MEMORY:
            return api.MEMORY
        main = Path(self.path)
        return str(main.with_name(f"{main.stem}.{schema}{main.suffix}"))

    def _attached(self) -> set[str]:
        return {row[1] for row in self.fetch("PRAGMA database_list")}

    def _attach(self, schema: str, file: str) -> None:
        if file != api.MEMORY and not Path(file).is_absolute() and self.path != api.MEMORY:
            file = str(Path(self.path).parent / file)
        self.execute(f"ATTACH DATABASE ? AS {self.quote(schema)}", [file])

    def attach_schema(self, relation: api.Relation) -> None:
        """Attach the schema's file under its name (creating it), and remember it in the main file."""
        schema = relation.parts[-2]
        if schema in self._attached():
            return
        file = self.schema_file(schema)
        self._attach(schema, file)
        stored = file if file == api.MEMORY else Path(file).name
        self.execute(f"INSERT OR REPLACE INTO main.{SCHEMAS_TABLE} VALUES (?, ?)", [schema, stored])

    def _attach_recorded(self, schema: str) -> bool:
        """Attach `schema` if another connection created it since this one opened (the main file
        lists it); whether it is attached now."""
        recorded = self.fetch(f"SELECT file FROM main.{SCHEMAS_TABLE} WHERE name = ?", [schema])
        if recorded:
            self._attach(schema, recorded[0][0])
        return bool(recorded)

    def existing_columns(self, relation: api.Relation) -> list[str] | None:
        schema, name = relation.parts[-2], relation.parts[-1]
        if schema not in self._attached() and not self._attach_recorded(schema):
            return None
        rows = self.fetch(f"PRAGMA {self.quote(schema)}.table_info({self.quote(name)})")
        return [row[1] for row in rows] or None

    # -- loading: a temporary stage filled from the staged Parquet files -----------------------

    def find_stages(self, relation: api.Relation) -> list[tuple[api.Relation, datetime | None]]:
        """None to sweep: a stage is a temporary table, which ends with its connection."""
        return []

    def stage_relation(self, relation: api.Relation) -> api.Relation:
        stage = super().stage_relation(relation)
        return api.Relation(schema="temp", name=stage.name, casefold=stage.casefold)

    def load_files(self, stage: api.Relation, table: api.TableSpec, manifest: api.Manifest) -> int:
        """Insert the staged files' rows into the stage, batch by batch, in one transaction."""
        names = table.column_names()
        columns = ", ".join(self.quote(c) for c in names)
        insert = f"INSERT INTO {stage.render()} ({columns}) VALUES ({', '.join('?' * len(names))})"
        loaded = 0
        with self.transaction(), self._errors():
            for batch in manifest.batches(self.stage_schema(table)):
                rows = [tuple(_value(v) for v in row.values()) for row in batch.to_pylist()]
                self.connection.executemany(insert, rows)
                loaded += len(rows)
        return loaded


def _value(value: Any) -> Any:
    """A Python value as SQLite stores it: timestamps as UTC ISO-8601 text, booleans as 0 / 1."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return aware.astimezone(UTC).isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, bool):
        return int(value)
    return value


def _params(params: Sequence[Any]) -> list[Any]:
    return [_value(p) for p in params]
