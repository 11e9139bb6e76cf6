"""Targets spoken to in SQL: DDL, migrations, the one load protocol, read-back and retention.

Every load is the same protocol, written once here:

1. a staging relation is created (`open_stage`, calling `create_stage`);
2. the rows reach it in bulk: the Spark tasks write them through the target's `stage_writer`
   (Parquet or `capabilities.staging_format` files under `storage` for `Staging.FILES`, which
   `load_staged` hands to `load_files`; a COPY from each task with `Staging.TASKS`: `TaskLoader`),
   inside the write's one validating job where the rows are a projection of the batches
   (`synclog.write_job`), else in a job of their own; a target without a task-side writer
   fills the stage from the frame (`load_frame`);
3. once the stage is filled, a swap replaces the rows of the keys the load replaces (constants
   the write knows: `synclog.targets.keys`) by the staged rows, by the strategy the target's
   capabilities name (`synclog.targets.swaps`): a DELETE and an INSERT in one transaction, the
   same inserting only while no row of the keys is left for a client that replays statements,
   one MERGE, or the steps of each partition touched for a warehouse atomic per partition only;
4. the stage and its files are dropped (`release_stage`, calling `drop_stage`), also when a
   step failed; a stage whose writer was killed, or whose drop failed, is dropped by a later
   `ensure` (`sweep_stages`: stage names say whose they are, `synclog.targets.stage_names`).

A SQL target is a thin orchestrator of two parts a plugin provides: a client (`target.client`, a
`SqlClient` such as a `DbApiClient`: `execute`, `fetch`, `query`, `insert_rows`, `transaction`,
`result_batches`), through which every statement it sends passes, and the client's dialect
(`target.dialect`, a `SqlDialect`: types, quoting, casts, CREATE TABLE, the stage, key matches,
parameter markers); callers use them directly. It takes the opt-in parts its capabilities declare
(`sql_loaders.needed_parts`). A plugin subclasses it only at the override points (the methods not
marked `@final`): how staged files or a frame become the stage, a statement that makes swaps into
one table take turns (`lock_statement`), partitions to drop, expire or rewrite, introspection where
there is no information_schema.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, final

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from synclog.capabilities import Capabilities, Schemas, Staging
from synclog.errors import ConfigError
from synclog.naming import Relation
from synclog.storage.files import published, read_frame, remove
from synclog.storage.manifest import Manifest, StoredFile
from synclog.storage.owners import owner
from synclog.targets import export
from synclog.targets import sql_statements as sql
from synclog.targets.base import Cutoffs, Target, TargetSettings
from synclog.targets.contract import required_methods
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.sql_client import SqlClient
from synclog.targets.sql_dialect import SqlDialect
from synclog.targets.sql_loaders import (
    FileLoader,
    FrameLoader,
    PartitionDropper,
    PartitionExpirer,
    SchemaAttacher,
    TaskLoader,
    method_of,
    needed_parts,
)
from synclog.targets.sql_statements import Statement
from synclog.targets.stage_names import STAGE_PREFIX, new_stage_name, orphaned, released
from synclog.targets.staging import FileStageWriter, Stages, StageWriter, fill_from_frame, fill_from_table
from synclog.targets.swaps import partition_replace
from synclog.targets.swaps.choice import replaces_partitions, swap_statements
from synclog.targets.tables import Column, ColumnType, TableSpec
from synclog.urls import TargetURL

VERSIONS_TABLE = "synclog_versions"
"""Per schema: which columns each framework table gained, and when (additive migrations)."""
VERSIONS = TableSpec(
    layout="synclog",
    schema="synclog",
    name=VERSIONS_TABLE,
    columns=(
        Column("table_name", ColumnType.STRING),
        Column("version", ColumnType.INTEGER),
        Column("added_columns", ColumnType.STRING),
        Column("applied_at", ColumnType.TIMESTAMP),
    ),
    replace_key=("table_name", "version"),
)
"""`VERSIONS_TABLE`, created through `create_table_sql` like every other table, in the schema of
each framework table (`layout` and `schema` here name no place of its own)."""


class SqlTarget(Target):
    """A warehouse spoken to in SQL: its client (`client`) sends every statement, in the client's
    dialect (`dialect`); the opt-in parts its capabilities declare do what only some warehouses
    do (`synclog.targets.sql_loaders`). What a plugin may override is every method not marked
    `@final`."""

    def __init__(
        self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities, client: SqlClient
    ) -> None:
        super().__init__(url, settings, capabilities)
        self.client = client
        """Sends every statement of this target, bound by its dialect (`SqlClient.dialect`)."""

    @property
    @final
    def dialect(self) -> SqlDialect:
        """The client's dialect: the SQL of every statement this target sends."""
        return self.client.dialect

    @final
    @classmethod
    def needed_methods(cls, capabilities: Capabilities) -> list[str]:
        """Its layouts' calls and the method of each opt-in part its capabilities declare
        (`needed_parts`)."""
        return [*required_methods(capabilities), *(method_of(part) for part in needed_parts(capabilities))]

    @final
    @classmethod
    def refusal(cls, capabilities: Capabilities) -> str | None:
        """Why a SQL target cannot hold `capabilities`: their swap strategy is none, or one they
        cannot run (`Capabilities.swap_refusal`)."""
        return capabilities.swap_refusal()

    def _lacks(self, part: type) -> ConfigError:
        """The error of a target that is not the opt-in `part` its capabilities call for (the
        registry refuses such a class; this catches one opened without it)."""
        return ConfigError(f"{type(self).__name__} is no {part.__name__}, which its capabilities need")

    @final
    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        return self.client.query(sql, params)

    @final
    def close(self) -> None:
        self.client.close()

    # -- DDL ---------------------------------------------------------------------------------

    def view_sql(self, view: Relation, relation: Relation, table: TableSpec) -> str:
        """The public view over a framework table: CREATE OR REPLACE VIEW, or CREATE VIEW where
        there is no OR REPLACE (`capabilities.replace_view`; the core drops the old view first).

        Where schemas are attached databases (`Schemas.ATTACHED`) the view's body names its table
        without the schema: an attached database resolves a view's names in its own file.
        """
        q = self.dialect.quote
        columns = [q(c) for c in table.column_names()]
        source = relation.render() if self.capabilities.schemas is Schemas.CREATE else q(relation.name)
        return sql.create_view(view.render(), columns, source, self.capabilities.replace_view)

    @final
    def ensure_view(self, view: Relation, relation: Relation, table: TableSpec) -> None:
        """Create or replace the public view over a framework table.

        Without CREATE OR REPLACE VIEW the view is dropped (`SqlDialect.drop_view_sql`) and created
        again: in one transaction where DDL is transactional, else only when its columns differ
        from the table's.
        """
        create = self.view_sql(view, relation, table)
        client = self.client
        if self.capabilities.replace_view:
            client.execute(create)
            return
        drop = self.dialect.drop_view_sql(view)
        if self.capabilities.transactional_ddl:
            client.run_together([(drop, ()), (create, ())])
            return
        existing = self.existing_columns(view)
        if existing is not None and [c.lower() for c in existing] == [
            c.lower() for c in table.column_names()
        ]:
            return
        client.execute(drop)
        client.execute(create)

    @final
    def ensure_schema(self, relation: Relation) -> None:
        """Make the schema `relation` lives in exist: CREATE SCHEMA IF NOT EXISTS (`Schemas.CREATE`).

        Where the warehouse has no CREATE SCHEMA (`Schemas.ATTACHED`) the target is a
        `SchemaAttacher` and makes the schema reachable its own way (`attach_schema`: SQLite
        attaches a database file under the schema's name).
        """
        if self.capabilities.schemas is Schemas.CREATE:
            self.client.execute(self.dialect.create_schema_sql(relation))
        elif isinstance(self, SchemaAttacher):
            self.attach_schema(relation)
        else:
            raise self._lacks(SchemaAttacher)

    def existing_columns(self, relation: Relation) -> list[str] | None:
        """The relation's column names in order, or None when it does not exist.

        The table introspection hook: this default reads `information_schema.columns`; a
        warehouse without it overrides this (SQLite: `PRAGMA table_info`).
        """
        rows = self.client.fetch(
            sql.table_columns(self.dialect.placeholder), [relation.parts[-2], relation.parts[-1]]
        )
        return [r[0] for r in rows] or None

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        dialect, client = self.dialect, self.client
        for given in tables:
            table = self.table_spec(given)
            relation = self.relation(table)
            self.ensure_schema(relation)
            versions = self._ensure_versions_table(relation)
            existing = self.existing_columns(relation)
            if existing is None:
                client.execute(dialect.create_table_sql(relation, table))
            else:
                folded = {name.lower() for name in existing}
                for column in [c for c in table.columns if c.name.lower() not in folded]:
                    client.execute(sql.add_column(relation.render(), dialect.column_sql(column)))
            self._record_version(versions, table)
            if table.view and self.capabilities.views:
                self.ensure_view(self.relation(table, table.view), relation, table)
        self.sweep_stages([self.relation(self.table_spec(t)) for t in tables])

    def sweep_stages(self, relations: Sequence[Relation]) -> list[Relation]:
        """Drop the stages left in the schemas of `relations` by writers now gone (killed
        mid-load) or by this process's loads whose drop failed; return them. A load in progress
        keeps its stage, and so does another host's live writer until its stage is older than
        `owners.FOREIGN_AFTER` (where `find_stages` tells its age)."""
        schemas = {relation.parts[:-1]: relation for relation in relations}
        dropped = []
        for schema in schemas.values():
            for stage, created in self.find_stages(schema):
                if orphaned(stage.name, created):
                    self.drop_stage(stage)
                    dropped.append(stage)
        return dropped

    def find_stages(self, relation: Relation) -> list[tuple[Relation, datetime | None]]:
        """The staging tables in the schema of `relation`, each with when it was created (None
        where the warehouse does not say). This default reads `information_schema.tables`; a
        target whose stages end with its session may answer none."""
        catalog = relation.quoted(relation.parts[0]) if len(relation.parts) == 3 else ""
        rows = self.client.fetch(
            sql.tables_like(self.dialect.placeholder, catalog),
            [relation.parts[-2], self.capabilities.casefold.apply(STAGE_PREFIX) + "%"],
        )
        return [(relation.with_name(name), None) for (name,) in rows]

    def _ensure_versions_table(self, relation: Relation) -> Relation:
        versions = relation.with_name(VERSIONS_TABLE)
        self.client.execute(self.dialect.create_table_sql(versions, VERSIONS))
        return versions

    def _record_version(self, versions: Relation, table: TableSpec) -> None:
        """One row of `synclog_versions` for the columns of `table` it records no version of yet
        (a table just created, columns just added, or DDL whose row a writer that stopped in
        between never recorded: the DDL and its row are statements apart), through
        `SqlClient.insert_rows` (rows' one path in); none when every column is recorded."""
        q, p = self.dialect.quote, self.dialect.placeholder
        name = self.capabilities.casefold.apply(table.name)
        recorded = sql.select_where_equal(
            versions.render(), [q("version"), q("added_columns")], q("table_name"), p
        )
        rows = self.client.fetch(recorded, [name])
        known = {c.lower() for _, added in rows for c in str(added or "").split(",") if c}
        added = [c.name for c in table.columns if c.name.lower() not in known]
        if not added:
            return
        version = max((int(v) for v, _ in rows), default=0) + 1
        row = [name, version, ",".join(added), datetime.now(UTC)]
        self.client.insert_rows(versions.render(), [q(c) for c in VERSIONS.column_names()], [row])

    # -- the load protocol -------------------------------------------------------------------

    @final
    def stages(self) -> Stages:
        """Every SQL target stages its loads (the protocol above)."""
        return self

    @final
    def replace_rows(self, table: TableSpec, rows: Rows, keys: Keys) -> int:
        spec = self.table_spec(table)
        stage = self.open_stage(spec)
        try:
            count = self._fill(stage, spec, rows)
            self.swap_staged(spec, stage, count, keys)
            return count
        finally:
            self.release_stage(stage)

    @final
    def open_stage(self, table: TableSpec) -> Relation:
        """Create a fresh, empty staging relation for one load of `table` (as `table_spec` gives it);
        where that fails, the stage (which may exist: an answer lost) is the next sweep's."""
        stage = self.stage_relation(self.relation(table))
        try:
            self.create_stage(stage, table)
        except BaseException:
            released(stage.name)
            raise
        return stage

    @final
    def swap_staged(self, table: TableSpec, stage: Relation, count: int, keys: Keys) -> None:
        """Replace the rows of `keys` by the `count` staged rows, once the stage is filled: make the
        partitions the staged rows need (`ensure_partitions`), then run the statements of the
        capabilities' swap strategy (`synclog.targets.swaps`) with `run_swap`. Nothing to do
        without rows or keys."""
        if not count and keys.empty:
            return
        relation = self.relation(table)
        if count and table.time_column is not None:
            self.ensure_partitions(table, relation, stage)
        self.run_swap(swap_statements(self, self.capabilities, table, relation, stage, keys))

    def ensure_partitions(self, table: TableSpec, relation: Relation, stage: Relation) -> None:
        """Create the partitions of `relation` the rows in `stage` need, before the swap moves them
        there (outside its transaction); called for tables with a `time_column`. Nothing by default:
        a warehouse whose day partitions do not appear by themselves creates them here."""

    @final
    def release_stage(self, stage: Relation) -> None:
        """Drop the staging relation and the files staged for it (also after a failed load); where
        the drop fails, the next `ensure`'s sweep drops what is left (`stage_names.released`)."""
        try:
            self.drop_stage(stage)
        finally:
            released(stage.name)
            remove(self.storage, self._staging_folder(stage))

    def _staging_folder(self, stage: Relation) -> str:
        return f"staging/{owner()}/{stage.name}"

    def _fill(self, stage: Relation, table: TableSpec, rows: Rows) -> int:
        writer = self.stage_writer(stage, table)
        if writer is None:
            if not isinstance(self, FrameLoader):
                raise self._lacks(FrameLoader)
            return self.load_frame(stage, table, rows.frame())
        local = rows.local_table
        try:
            if local is not None:
                reports = fill_from_table(local.select(table.column_names()), writer)
            else:
                reports = fill_from_frame(rows.frame().select(*table.column_names()), writer)
        except Exception as exc:
            self.raise_stage_failure(exc, table)
            raise
        return self.load_staged(stage, table, reports)

    @final
    def stage_writer(self, stage: Relation, table: TableSpec) -> StageWriter | None:
        """What Spark tasks use to put rows of `table` into `stage` themselves (see
        `synclog.targets.staging`); the write's one job uses it too. `Staging.FILES`: Parquet
        (or `staging_format`) files under `storage`; `Staging.TASKS`: the target's own
        (`TaskLoader.task_writer`). None with `Staging.EXECUTORS`: the target fills its stage from
        a frame after the job (`load_frame`)."""
        staging = self.capabilities.staging
        if staging is Staging.TASKS:
            if not isinstance(self, TaskLoader):
                raise self._lacks(TaskLoader)
            return self.task_writer(stage, table)
        if staging is not Staging.FILES:
            return None
        schema, file_format = self.stage_schema(table), self.capabilities.staging_format
        return FileStageWriter(self.storage, self._staging_folder(stage), schema, file_format)

    @final
    def load_staged(self, stage: Relation, table: TableSpec, reports: Sequence[str]) -> int:
        """Finish filling `stage` from what the tasks of `stage_writer` reported; return its rows.

        `Staging.TASKS`: `TaskLoader.load_tasks`. `Staging.FILES`: the staged files' manifest goes
        to `load_files`; where the client replays statements, the rows are counted in the stage:
        the answer to a replayed load says 0.
        """
        if self.capabilities.staging is Staging.TASKS:
            if not isinstance(self, TaskLoader):
                raise self._lacks(TaskLoader)
            return self.load_tasks(stage, table, reports)
        writer = self.stage_writer(stage, table)
        if not isinstance(writer, FileStageWriter):
            raise ConfigError(f"{type(self).__name__} stages no files to load")
        if not isinstance(self, FileLoader):
            raise self._lacks(FileLoader)
        manifest = writer.manifest(reports)
        if not manifest.files:
            return 0
        loaded = self.load_files(stage, table, manifest)
        return self.count_rows(stage) if self.capabilities.replays_statements else loaded

    @final
    def count_rows(self, relation: Relation) -> int:
        """`SELECT COUNT(*)` of `relation`."""
        return int(self.client.fetch(sql.count_rows(relation.render()))[0][0])

    def raise_stage_failure(self, failure: Exception, table: TableSpec) -> None:
        """Raise the one-line error a failed Spark job amounts to when a task of `stage_writer`
        failed (a TargetError for an outage, an InputError for rows the warehouse refused); return
        when the failure is not the stage's."""

    def stage_relation(self, relation: Relation) -> Relation:
        """A fresh name for the staging relation of one load into `relation`."""
        return relation.with_name(new_stage_name())

    def create_stage(self, stage: Relation, table: TableSpec) -> None:
        """Create the empty staging relation of a load of `table` (`SqlDialect.create_stage_sql`)."""
        self.client.execute(self.dialect.create_stage_sql(stage, table))

    def stage_schema(self, table: TableSpec) -> pa.Schema:
        """The Arrow schema of the files staged for `table` (`Staging.FILES`)."""
        return table.arrow_schema()

    def drop_stage(self, stage: Relation) -> None:
        """Drop the staging relation (it may not exist: the load failed before creating it)."""
        self.client.execute(sql.drop_table(stage.render()))

    def lock_statement(self, relation: Relation) -> Statement | None:
        """A statement, run first in a swap's transaction, that makes swaps into `relation` take turns."""
        return None

    def run_swap(self, statements: Sequence[Statement]) -> None:
        """Run the swap's statements: in one transaction with `capabilities.transactions`, else
        one by one (one MERGE, or the steps of each partition)."""
        if self.capabilities.transactions:
            self.client.run_together(statements)
            return
        for sql_text, params in statements:
            self.client.execute(sql_text, params)

    # -- read-back ---------------------------------------------------------------------------

    @final
    @contextmanager
    def read_rows(self, table: TableSpec, sync_id: int, spark: SparkSession) -> Iterator[DataFrame | None]:
        relation = self.relation(table)
        existing = self.existing_columns(relation)
        if existing is None:
            yield None
            return
        present = {name.lower() for name in existing}
        picked = [self._read_column(c, c.name.lower() in present) for c in table.columns]
        q, p = self.dialect.quote, self.dialect.placeholder
        query = sql.select_where_equal(relation.render(), picked, q("sync_id"), p)
        folder = f"exports/{owner()}/{uuid.uuid4().hex}"
        try:
            manifest = self.export(query, [sync_id], table.arrow_schema(), folder)
            yield read_frame(spark, manifest, table.spark_schema())
        finally:
            remove(self.storage, folder)

    def export(self, sql: str, params: Sequence[Any], schema: pa.Schema, folder: str) -> Manifest:
        """Write a query's result (`schema`'s names and types) as Parquet files under `folder` in storage.

        This default streams `SqlClient.result_batches` into one file; a warehouse with an export
        of its own to object storage (UNLOAD, an extract job) overrides it.
        """
        path = f"{folder}/part-00000.parquet"
        with published(self.storage.filesystem(), self.storage.path(path), whole=False) as stream:
            rows = export.write_batches(stream, schema, self.client.result_batches(sql, params, schema))
        return Manifest(self.storage, (StoredFile(path, rows),))

    def _read_column(self, column: Column, present: bool) -> str:
        dialect = self.dialect
        name = dialect.quote(column.name)
        source = name if present else "NULL"
        if not self.capabilities.read_casts:  # the export casts the Arrow result to the table's types
            return source if present else f"{source} AS {name}"
        value = (
            dialect.json_text_sql(source)
            if column.type is ColumnType.JSON
            else dialect.cast_sql(source, column.type)
        )
        return f"{value} AS {name}"

    @final
    def existing_tables(self, tables: Sequence[TableSpec]) -> list[TableSpec]:
        return [t for t in tables if self.existing_columns(self.relation(t)) is not None]

    # -- retention ---------------------------------------------------------------------------

    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        """Drop or expire whole day partitions where the warehouse can, then DELETE what remains
        expired; where rows change only by rewriting partitions (`partition_replace`), rewrite the
        days holding expired rows without them instead.

        Cut-offs are day boundaries (`synclog.retention`): once the partitions older than the
        earliest one are dropped, only syncs whose retention is shorter than the longest still
        have rows to DELETE, bounded by the time column to the days they lose.
        """
        if table.time_column is None:
            return 0
        spec = self.table_spec(table)
        if replaces_partitions(self.capabilities):
            statements, removed = partition_replace.expired_statements(self, spec, cutoffs)
            self.run_swap(statements)
            return removed
        relation = self.relation(spec)
        oldest = min((cutoffs.default, *cutoffs.per_sync.values()))
        removed = 0
        if self.capabilities.partition_drop:
            if not isinstance(self, PartitionDropper):
                raise self._lacks(PartitionDropper)
            removed += self.drop_partitions(spec, relation, oldest)
        if self.capabilities.partition_expiry and cutoffs.now is not None:
            if not isinstance(self, PartitionExpirer):
                raise self._lacks(PartitionExpirer)
            self.expire_partitions(spec, relation, math.ceil((cutoffs.now - oldest) / timedelta(days=1)))
        dropped = oldest if self.capabilities.partition_drop else None
        return removed + self._delete_expired_rows(spec, relation, cutoffs, dropped)

    def _delete_expired_rows(
        self, table: TableSpec, relation: Relation, cutoffs: Cutoffs, dropped: datetime | None
    ) -> int:
        """DELETE rows older than their sync's cut-off; nothing older than `dropped` is left to."""
        assert table.time_column is not None
        q, p = self.dialect.quote, self.dialect.placeholder
        time, sync = q(table.time_column), q("sync_id")
        overridden = list(cutoffs.per_sync)
        statements: list[Statement] = []
        if dropped is None or cutoffs.default > dropped:
            delete = sql.delete_before(relation.render(), time, p, sync, exempt=len(overridden))
            statements.append((delete, [cutoffs.default, *overridden]))
        for sync_id, cutoff in cutoffs.per_sync.items():
            if dropped is None or cutoff > dropped:
                statements.append(
                    (sql.delete_sync_before(relation.render(), sync, time, p), [sync_id, cutoff])
                )
        if not statements:
            return 0
        if self.capabilities.transactions:
            return self.client.run_together(statements)
        return sum(self.client.execute(sql_text, params) for sql_text, params in statements)
