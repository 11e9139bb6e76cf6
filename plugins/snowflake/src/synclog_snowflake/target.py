"""The Snowflake target: VARIANT payloads, loaded by PUT to a temporary stage and COPY INTO."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from typing import Any, ClassVar

import pyarrow as pa
import snowflake.connector

from synclog.capabilities import Capabilities
from synclog.errors import TargetError
from synclog.naming import Relation
from synclog.targets import export
from synclog.targets.base import TargetSettings
from synclog.targets.sql import SqlTarget
from synclog.targets.tables import ColumnType, Rows, TableSpec
from synclog.urls import TargetURL
from synclog_snowflake.capabilities import CAPABILITIES
from synclog_snowflake.connection import ConnectionSettings, connection_settings
from synclog_snowflake.files import parquet_files
from synclog_snowflake.statements import copy_sql, put_sql

STAGE = "SYNCLOG_STAGE"
"""A temporary stage per schema and session: it goes away with the connection."""
LOAD_TABLE_PREFIX = "SYNCLOG_LOAD_"
"""Transient tables that hold one load between COPY and the replacing transaction."""


class SnowflakeTarget(SqlTarget):
    """A Snowflake database (CENSUS by default) reached with `snowflake-connector-python`."""

    capabilities: ClassVar[Capabilities] = CAPABILITIES
    placeholder: ClassVar[str] = "?"
    type_names: ClassVar[dict[ColumnType, str]] = {
        ColumnType.BIGINT: "NUMBER(38,0)",
        ColumnType.INTEGER: "NUMBER(38,0)",
        ColumnType.STRING: "VARCHAR",
        ColumnType.JSON: "VARIANT",
        ColumnType.TIMESTAMP: "TIMESTAMP_TZ",
        ColumnType.BOOLEAN: "BOOLEAN",
    }

    def __init__(self, url: TargetURL, settings: TargetSettings) -> None:
        conn = connection_settings(url, settings)
        super().__init__(url, replace(settings, database=conn.database))
        self.connection = _connect(conn)
        self._stages: set[Relation] = set()
        self._database_exists = False

    # -- DB-API ------------------------------------------------------------------------------

    def _cursor(self, sql: str, params: Sequence[Any]) -> Any:
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql, list(params) if params else None)
        except snowflake.connector.Error as exc:
            cursor.close()
            raise TargetError(f"Snowflake: {_one_line(exc)}") from None
        return cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = self._cursor(sql, params)
        count = cursor.rowcount
        cursor.close()
        return max(count or 0, 0)

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self._cursor(sql, params)
        try:
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        cursor = self._cursor(sql, params)
        try:
            rows = cursor.fetchall()
            names = [d[0] for d in cursor.description]
        finally:
            cursor.close()
        arrays = [pa.array([row[i] for row in rows]) for i in range(len(names))]
        return pa.Table.from_arrays(arrays, names=names)

    def export_parquet(self, sql: str, params: Sequence[Any], path: str, schema: pa.Schema) -> None:
        """Stream the result with `fetchmany`, one Parquet row group per chunk.

        The connector downloads the result's chunks as the rows are consumed (a few ahead), so
        the driver holds one chunk of rows and a few of the warehouse's result chunks at most.
        """
        chunk = export.CHUNK_ROWS
        cursor = self._cursor(sql, params)
        try:
            chunks = iter(lambda: cursor.fetchmany(chunk), [])
            export.write_batches(path, schema, (export.rows_batch(rows, schema) for rows in chunks))
        except snowflake.connector.Error as exc:
            raise TargetError(f"Snowflake: {_one_line(exc)}") from None
        finally:
            cursor.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.execute("BEGIN")
        try:
            yield
        except BaseException:
            with suppress(TargetError):
                self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    # -- DDL ---------------------------------------------------------------------------------

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        if not self._has_database():
            self.execute(f"CREATE DATABASE IF NOT EXISTS {self._database()}")
            self._database_exists = True
        super().ensure(tables)

    def view_sql(self, view: Relation, relation: Relation, table: TableSpec) -> str:
        """The view names its table unqualified: a workaround valid on Snowflake and on fakesnow.

        fakesnow (DuckDB) rejects a view body naming CENSUS.CENSUS.X ("Ambiguous reference":
        the database and schema share a name). Snowflake resolves unqualified names in a view's
        definition in the view's own schema (the session's schema and search path play no part),
        and the view always lives beside its table, so the bare name is the same table on both.
        """
        columns = ", ".join(self.quote(c) for c in table.column_names())
        return (
            f"CREATE OR REPLACE VIEW {view.render()} AS "
            f"SELECT {columns} FROM {relation.quoted(relation.parts[-1])}"
        )

    def json_text_sql(self, expression: str) -> str:
        """TO_JSON: a cast to VARCHAR would give a JSON string's value without its quotes."""
        return f"TO_JSON({expression})"

    def existing_columns(self, relation: Relation) -> list[str] | None:
        if not self._has_database():
            return None
        rows = self.fetch(
            f"SELECT column_name FROM {self._database()}.INFORMATION_SCHEMA.COLUMNS "
            "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            [relation.parts[-2], relation.parts[-1]],
        )
        return [r[0] for r in rows] or None

    def _database(self) -> str:
        return self.quote(self.settings.database or "")

    def _has_database(self) -> bool:
        """Whether the database exists (SHOW, not CREATE … IF NOT EXISTS: see FAKESNOW_NOTES)."""
        if not self._database_exists:
            cursor = self._cursor("SHOW DATABASES", ())
            try:
                name = [d[0].lower() for d in cursor.description].index("name")
                wanted = self.capabilities.casefold.apply(self.settings.database or "")
                self._database_exists = any(row[name] == wanted for row in cursor.fetchall())
            finally:
                cursor.close()
        return self._database_exists

    # -- loading -----------------------------------------------------------------------------

    def replace_rows(self, table: TableSpec, rows: Rows) -> int:
        """PUT Parquet files to a stage, COPY them into a transient table, then swap in one transaction.

        The DELETE of the rows whose `replace_key` the load carries and the INSERT of the load
        commit together, so a replay leaves one copy and readers never see a half-replaced key.
        """
        spec = self.table_spec(table)
        relation = self.relation(spec)
        with parquet_files(spec, rows, self.settings.staging_dir) as files:
            if not files:
                return 0
            load = uuid.uuid4().hex
            stage = self._stage(relation)
            for path in files:
                self.execute(put_sql(path, stage, load))
            staged = relation.with_name(f"{LOAD_TABLE_PREFIX}{load}")
            columns = ", ".join(self.column_sql(c) for c in spec.columns)
            self.execute(
                f"CREATE TRANSIENT TABLE {staged.render()} ({columns}) DATA_RETENTION_TIME_IN_DAYS = 0"
            )
            try:
                self.execute(copy_sql(staged, spec, stage, load, self.type_names))
                names = ", ".join(self.quote(c) for c in spec.column_names())
                with self.transaction():
                    self.execute(
                        f"DELETE FROM {relation.render()} "
                        f"WHERE {self.key_match_sql(staged.render(), spec.replace_key)}"
                    )
                    return self.execute(
                        f"INSERT INTO {relation.render()} ({names}) SELECT {names} FROM {staged.render()}"
                    )
            finally:
                self.execute(f"DROP TABLE IF EXISTS {staged.render()}")

    def _stage(self, relation: Relation) -> Relation:
        stage = relation.with_name(STAGE)
        if stage not in self._stages:
            self.execute(f"CREATE TEMPORARY STAGE IF NOT EXISTS {stage.render()}")
            self._stages.add(stage)
        return stage

    def close(self) -> None:
        self.connection.close()


def _connect(settings: ConnectionSettings) -> Any:
    # Looked up at call time, so that fakesnow's patch (`fakesnow -m synclog …`) applies.
    try:
        return snowflake.connector.connect(**settings.connect_kwargs())
    except snowflake.connector.Error as exc:
        raise TargetError(
            f"cannot connect to Snowflake account {settings.account} as {settings.user}: {_one_line(exc)}"
        ) from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
