"""Shared SQL for targets reached through a DB-API connection: DDL, migrations, retention."""

from __future__ import annotations

import shutil
import tempfile
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from synclog.layouts.base import arrow_schema
from synclog.layouts.table import Column, ColumnType, TableSpec
from synclog.naming import Relation
from synclog.targets.base import Cutoffs, Target

VERSIONS_TABLE = "synclog_versions"
"""Per schema: which columns each framework table gained, and when (additive migrations)."""


class SqlTarget(Target):
    """A warehouse spoken to in SQL. Subclasses give types, a connection and the bulk load."""

    type_names: ClassVar[Mapping[ColumnType, str]]

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

    # -- DDL ---------------------------------------------------------------------------------

    def column_sql(self, column: Column) -> str:
        """`"name" TYPE` for a CREATE TABLE or ADD COLUMN."""
        return f"{self.quote(column.name)} {self.type_names[column.type]}"

    def create_table_sql(self, relation: Relation, table: TableSpec) -> str:
        """CREATE TABLE for a framework table (targets override to add partitioning)."""
        columns = ", ".join(self.column_sql(c) for c in table.columns)
        return f"CREATE TABLE IF NOT EXISTS {relation.render()} ({columns})"

    def create_schema_sql(self, relation: Relation) -> str:
        """CREATE SCHEMA for the schema `relation` lives in."""
        return f"CREATE SCHEMA IF NOT EXISTS {relation.schema_relation()}"

    def view_sql(self, view: Relation, relation: Relation, table: TableSpec) -> str:
        """The public view over a framework table."""
        columns = ", ".join(self.quote(c) for c in table.column_names())
        return f"CREATE OR REPLACE VIEW {view.render()} AS SELECT {columns} FROM {relation.render()}"

    def existing_columns(self, relation: Relation) -> list[str] | None:
        """The relation's column names in order, or None when it does not exist."""
        rows = self.fetch(
            "SELECT column_name FROM information_schema.columns "
            f"WHERE table_schema = {self.placeholder} AND table_name = {self.placeholder} "
            "ORDER BY ordinal_position",
            [relation.parts[-2], relation.parts[-1]],
        )
        return [r[0] for r in rows] or None

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        for given in tables:
            table = self.table_spec(given)
            relation = self.relation(table)
            self.execute(self.create_schema_sql(relation))
            versions = self._ensure_versions_table(relation)
            existing = self.existing_columns(relation)
            if existing is None:
                self.execute(self.create_table_sql(relation, table))
                self._record_version(versions, table, table.columns)
            else:
                folded = {name.lower() for name in existing}
                missing = [c for c in table.columns if c.name.lower() not in folded]
                for column in missing:
                    self.execute(f"ALTER TABLE {relation.render()} ADD COLUMN {self.column_sql(column)}")
                if missing:
                    self._record_version(versions, table, missing)
            if table.view and self.capabilities.views:
                view = self.relation(table, table.view)
                self.execute(self.view_sql(view, relation, table))

    def _ensure_versions_table(self, relation: Relation) -> Relation:
        versions = relation.with_name(VERSIONS_TABLE)
        text, ts, integer = (
            self.type_names[ColumnType.STRING],
            self.type_names[ColumnType.TIMESTAMP],
            self.type_names[ColumnType.INTEGER],
        )
        self.execute(
            f"CREATE TABLE IF NOT EXISTS {versions.render()} ({self.quote('table_name')} {text}, "
            f"{self.quote('version')} {integer}, {self.quote('added_columns')} {text}, "
            f"{self.quote('applied_at')} {ts})"
        )
        return versions

    def _record_version(self, versions: Relation, table: TableSpec, added: Sequence[Column]) -> None:
        p = self.placeholder
        name = self.capabilities.casefold.apply(table.name)
        rows = self.fetch(
            f"SELECT MAX({self.quote('version')}) FROM {versions.render()} "
            f"WHERE {self.quote('table_name')} = {p}",
            [name],
        )
        version = (rows[0][0] or 0) + 1
        self.execute(
            f"INSERT INTO {versions.render()} VALUES ({p}, {p}, {p}, {p})",
            [name, version, ",".join(c.name for c in added), datetime.now(UTC)],
        )

    def quote(self, name: str) -> str:
        """One identifier, folded and quoted the warehouse's way."""
        return Relation(schema="s", name="n", casefold=self.capabilities.casefold).quoted(
            self.capabilities.casefold.apply(name)
        )

    # -- retention and reads -----------------------------------------------------------------

    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        if table.time_column is None:
            return 0
        relation, p = self.relation(table), self.placeholder
        time, sync = self.quote(table.time_column), self.quote("sync_id")
        overridden = list(cutoffs.per_sync)
        exempt = f" AND {sync} NOT IN ({', '.join([p] * len(overridden))})" if overridden else ""
        deleted = 0
        with self.transaction():
            deleted += self.execute(
                f"DELETE FROM {relation.render()} WHERE {time} < {p}{exempt}",
                [cutoffs.default, *overridden],
            )
            for sync_id, cutoff in cutoffs.per_sync.items():
                deleted += self.execute(
                    f"DELETE FROM {relation.render()} WHERE {sync} = {p} AND {time} < {p}",
                    [sync_id, cutoff],
                )
        return deleted

    def delete_rows(self, table: TableSpec, key: Mapping[str, Any]) -> int:
        relation, p = self.relation(table), self.placeholder
        where = " AND ".join(f"{self.quote(name)} = {p}" for name in key)
        with self.transaction():
            return self.execute(f"DELETE FROM {relation.render()} WHERE {where}", list(key.values()))

    @contextmanager
    def read_rows(self, table: TableSpec, sync_id: int, spark: SparkSession) -> Iterator[DataFrame | None]:
        relation = self.relation(table)
        existing = self.existing_columns(relation)
        if existing is None:
            yield None
            return
        present = {name.lower() for name in existing}
        picked = ", ".join(self._read_column(c, c.name.lower() in present) for c in table.columns)
        sql = f"SELECT {picked} FROM {relation.render()} WHERE {self.quote('sync_id')} = {self.placeholder}"
        folder = Path(tempfile.mkdtemp(prefix="synclog-read-", dir=self.settings.staging_dir))
        try:
            path = str(folder / "rows.parquet")
            self.export_parquet(sql, [sync_id], path, arrow_schema(table))
            yield spark.read.schema(table.spark_schema()).parquet(path)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def export_parquet(self, sql: str, params: Sequence[Any], path: str, schema: pa.Schema) -> None:
        """Write a query's result, with `schema`'s names and types, to one Parquet file.

        This default goes through `query()` (the whole result in driver memory); targets with
        a bulk export (COPY TO, UNLOAD, an extract job) override it.
        """
        result = self.query(sql, params)
        pq.write_table(result.rename_columns(schema.names).cast(schema), path)

    def json_text_sql(self, expression: str) -> str:
        """SQL that turns a JSON value into its JSON text (override where a cast does not)."""
        return f"CAST({expression} AS {self.type_names[ColumnType.STRING]})"

    def _read_column(self, column: Column, present: bool) -> str:
        source = self.quote(column.name) if present else "NULL"
        if column.type is ColumnType.JSON:
            value = self.json_text_sql(source)
        else:
            value = f"CAST({source} AS {self.type_names[column.type]})"
        return f"{value} AS {self.quote(column.name)}"

    def existing_tables(self, tables: Sequence[TableSpec]) -> list[TableSpec]:
        return [t for t in tables if self.existing_columns(self.relation(t)) is not None]

    def key_match_sql(self, staged: str, key: Sequence[str]) -> str:
        """`(k1, k2) IN (SELECT DISTINCT k1, k2 FROM staged)` for a replace-by-key DELETE."""
        cols = ", ".join(self.quote(k) for k in key)
        return f"({cols}) IN (SELECT DISTINCT {cols} FROM {staged})"
