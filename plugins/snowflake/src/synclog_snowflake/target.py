"""The Snowflake target: VARIANT payloads, loaded by COPY INTO from an external stage over `storage`
in an object store, or by PUT to a temporary stage when `storage` is a local folder."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
import snowflake.connector
from snowflake.connector import errors

from synclog.plugin_api import (
    Capabilities,
    ColumnType,
    DbApiClient,
    FileLoader,
    LineageDataset,
    Manifest,
    Relation,
    SqlDialect,
    SqlTarget,
    StoredFile,
    TableSpec,
    TargetError,
    TargetSettings,
    TargetURL,
    first_line,
    outages,
)
from synclog_snowflake.connection import ConnectionSettings, connection_settings
from synclog_snowflake.external import (
    COPY_FILES,
    EXTERNAL_STAGE,
    StageAccess,
    check_options,
    create_stage_sql,
    files_clause,
)
from synclog_snowflake.statements import copy_sql, put_sql

FILE_STAGE = "SYNCLOG_STAGE"
"""A temporary stage per schema and session that the staged files are PUT to; it goes with the session."""

OUTAGES: tuple[type[BaseException], ...] = (
    errors.OperationalError,
    errors.InternalServerError,
    errors.BadGatewayError,
    errors.ServiceUnavailableError,
    errors.GatewayTimeoutError,
    errors.RequestTimeoutError,
    errors.TooManyRequests,
    errors.OtherHTTPRetryableError,
    errors.RequestExceedMaxRetryError,
)
"""What the connector raises when Snowflake cannot be reached or fails, once its own retries are spent.

OperationalError covers lost connections, failed requests and uploads to the stage; the HTTP
errors are server statuses (5xx, 408, 429); RequestExceedMaxRetryError is the stage's storage.
Not outages: ProgrammingError and the other DatabaseErrors (SQL or data Snowflake rejects),
InterfaceError (a closed cursor, a row that does not convert: misuse on our side), and a plain
DatabaseError after connecting ("Connection is closed": this target closed it).
"""


class SnowflakeDialect(SqlDialect):
    """NUMBER(38,0) integers, TIMESTAMP_TZ, and TO_JSON for JSON text."""

    type_names = {
        **SqlDialect.type_names,
        ColumnType.BIGINT: "NUMBER(38,0)",
        ColumnType.INTEGER: "NUMBER(38,0)",
        ColumnType.TIMESTAMP: "TIMESTAMP_TZ",
    }

    def json_text_sql(self, expression: str) -> str:
        """TO_JSON: a cast to VARCHAR would give a JSON string's value without its quotes."""
        return f"TO_JSON({expression})"

    def create_stage_sql(self, stage: Relation, table: TableSpec) -> str:
        """A transient table (COPY cannot load a temporary one on fakesnow) without Time Travel,
        IF NOT EXISTS (the core's, as the connector replays statements)."""
        create = super().create_stage_sql(stage, table).removeprefix("CREATE TABLE ")
        return f"CREATE TRANSIENT TABLE {create}"

    def stage_options(self, table: TableSpec) -> str:
        return "DATA_RETENTION_TIME_IN_DAYS = 0"


class SnowflakeTarget(SqlTarget, FileLoader):
    """A Snowflake database (CENSUS by default) reached with `snowflake-connector-python`."""

    client: DbApiClient

    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        conn = connection_settings(url, settings)
        check_options(settings.options)
        storage = settings.storage
        self.access = None if storage.local else StageAccess.resolve(settings.options, storage)
        client = DbApiClient(_connect(conn), OUTAGES, "Snowflake", SnowflakeDialect(capabilities))
        super().__init__(url, replace(settings, database=conn.database), capabilities, client)
        self._file_stages: set[Relation] = set()
        self._database_exists = False

    def lineage_dataset(self, relation: Relation) -> LineageDataset:
        """The OpenLineage naming spec's Snowflake row: `snowflake://{account identifier}`, as the
        URL names the account (the spec's `{organization}-{account}`: `myorg-myaccount`), and
        `{database}.{schema}.{table}` as Snowflake folds them."""
        return LineageDataset(f"snowflake://{self.url.host}", str(relation))

    # -- DDL ---------------------------------------------------------------------------------

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        if not self._has_database():
            self.client.execute(f"CREATE DATABASE IF NOT EXISTS {self._database()}")
            self._database_exists = True
        super().ensure(tables)

    def view_sql(self, view: Relation, relation: Relation, table: TableSpec) -> str:
        """The view names its table unqualified: a workaround valid on Snowflake and on fakesnow.

        fakesnow (DuckDB) rejects a view body naming CENSUS.CENSUS.X ("Ambiguous reference":
        the database and schema share a name). Snowflake resolves unqualified names in a view's
        definition in the view's own schema (the session's schema and search path play no part),
        and the view always lives beside its table, so the bare name is the same table on both.
        """
        columns = ", ".join(self.dialect.quote(c) for c in table.column_names())
        return (
            f"CREATE OR REPLACE VIEW {view.render()} AS "
            f"SELECT {columns} FROM {relation.quoted(relation.parts[-1])}"
        )

    def existing_columns(self, relation: Relation) -> list[str] | None:
        if not self._has_database():
            return None
        rows = self.client.fetch(
            f"SELECT column_name FROM {self._database()}.INFORMATION_SCHEMA.COLUMNS "
            "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            [relation.parts[-2], relation.parts[-1]],
        )
        return [r[0] for r in rows] or None

    def _database(self) -> str:
        return self.dialect.quote(self.settings.database or "")

    def _has_database(self) -> bool:
        """Whether the database exists (SHOW, not CREATE … IF NOT EXISTS: see FAKESNOW_NOTES)."""
        if not self._database_exists:
            wanted = self.capabilities.casefold.apply(self.settings.database or "")
            self._database_exists = any(row["name"] == wanted for row in self._answer("SHOW DATABASES"))
        return self._database_exists

    # -- loading: PUT the staged files, COPY them into a transient table ---------------------

    def stage_schema(self, table: TableSpec) -> pa.Schema:
        """Timestamps travel as epoch microseconds, which COPY turns back with TO_TIMESTAMP_TZ(…, 6).

        That spelling means the same on every Parquet reader, unlike unit-annotated timestamps.
        """
        return pa.schema(
            [
                pa.field(c.name, pa.int64() if c.type is ColumnType.TIMESTAMP else c.type.arrow())
                for c in table.columns
            ]
        )

    def load_files(self, stage: Relation, table: TableSpec, manifest: Manifest) -> int:
        """COPY the staged files into `stage`, typing each column on the way; return the rows it holds.

        `storage` in an object store: from an external stage over it, naming exactly the
        manifest's files, so Snowflake reads them where the executors wrote them. A local
        `storage`: each file is PUT under a fresh prefix of the session's internal stage first.
        """
        if self.access is not None:
            external = self._external_stage(stage)
            types = self.dialect.type_names
            return sum(
                self._copy(copy_sql(stage, table, external, types, files=files_clause(chunk)))
                for chunk in _chunks(manifest.files, COPY_FILES)
            )
        files = self._file_stage(stage)
        prefix = uuid.uuid4().hex
        for path in manifest.paths():
            self.client.execute(put_sql(path, files, prefix))
        return self._copy(copy_sql(stage, table, files, self.dialect.type_names, prefix=prefix))

    def _copy(self, sql: str) -> int:
        """The rows a COPY loaded, by its answer: 0 where it loaded no file (one row of text, as a
        COPY that the connector replayed answers; the core counts the stage then)."""
        rows = self._answer(sql)
        return sum(int(row["rows_loaded"]) for row in rows if "rows_loaded" in row)

    def _answer(self, sql: str) -> list[dict[str, Any]]:
        """The rows a statement answers with, by lower-case column name (through the client's
        `query`, as every statement goes through the client)."""
        return [
            {name.lower(): value for name, value in row.items()} for row in self.client.query(sql).to_pylist()
        ]

    def _file_stage(self, relation: Relation) -> Relation:
        stage = relation.with_name(FILE_STAGE)
        if stage not in self._file_stages:
            self.client.execute(f"CREATE TEMPORARY STAGE IF NOT EXISTS {stage.render()}")
            self._file_stages.add(stage)
        return stage

    def _external_stage(self, relation: Relation) -> Relation:
        """The session's external stage over `storage` in the schema of `relation`, created once.

        Its statement holds the access clause: a failure is told without the statement, and
        with any secret in Snowflake's message hidden.
        """
        assert self.access is not None
        stage = relation.with_name(EXTERNAL_STAGE)
        if stage not in self._file_stages:
            try:
                self.client.execute(create_stage_sql(stage, self.storage, self.access))
            except errors.Error as exc:
                raise TargetError(
                    f"Snowflake: cannot create the external stage over {self.storage}: "
                    f"{self.access.hide(first_line(exc))}"
                ) from None
            self._file_stages.add(stage)
        return stage


def _connect(settings: ConnectionSettings) -> Any:
    """Every failure to log in is an outage: nothing of ours has run yet."""
    where = f"cannot connect to Snowflake account {settings.account} as {settings.user}"
    # Looked up at call time, so that fakesnow's patch (`fakesnow -m synclog …`) applies.
    with outages((snowflake.connector.Error,), where):
        return snowflake.connector.connect(**settings.connect_kwargs())


def _chunks(files: Sequence[StoredFile], size: int) -> Iterator[Sequence[StoredFile]]:
    for start in range(0, len(files), size):
        yield files[start : start + size]
