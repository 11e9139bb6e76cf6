"""The PostgreSQL target: COPY from the executors into a staging table, then one transaction."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import psycopg
import pyarrow as pa
from pyspark.sql import DataFrame

from synclog.capabilities import Capabilities
from synclog.errors import TargetError
from synclog.naming import Relation, check_name
from synclog.targets.base import Cutoffs, TargetSettings
from synclog.targets.sql import SqlTarget
from synclog.targets.tables import ColumnType, Rows, TableSpec
from synclog.urls import TargetURL
from synclog_postgres import export, orphans, partitions
from synclog_postgres.capabilities import CAPABILITIES
from synclog_postgres.connection import connect, conninfo, one_line
from synclog_postgres.copy import (
    FAILURE_MARK,
    SUMMARY_DDL,
    DayCounts,
    copy_batches,
    copy_sql,
    day_counts,
    stage_task,
)

_STAGE_PREFIX = orphans.STAGE_PREFIX


class PostgresTarget(SqlTarget):
    """A PostgreSQL database; tables with a time column are partitioned by UTC day."""

    capabilities: ClassVar[Capabilities] = CAPABILITIES
    placeholder: ClassVar[str] = "%s"
    type_names: ClassVar[dict[ColumnType, str]] = {
        ColumnType.BIGINT: "BIGINT",
        ColumnType.INTEGER: "INTEGER",
        ColumnType.STRING: "TEXT",
        ColumnType.JSON: "JSONB",
        ColumnType.TIMESTAMP: "TIMESTAMPTZ",
        ColumnType.BOOLEAN: "BOOLEAN",
    }

    def __init__(self, url: TargetURL, settings: TargetSettings) -> None:
        super().__init__(url, settings)
        self.params = conninfo(url)
        self.connection = connect(self.params, where=str(url))

    # -- statements ----------------------------------------------------------------------------

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise TargetError(f"{self.url}: {one_line(exc)}") from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._errors():
            return max(self.connection.execute(sql, list(params) or None).rowcount, 0)

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._errors():
            return self.connection.execute(sql, list(params) or None).fetchall()

    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        with self._errors():
            cursor = self.connection.execute(sql, list(params) or None)
            names = [c.name for c in cursor.description or ()]
            rows = cursor.fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
        return pa.Table.from_arrays([pa.array(list(c)) for c in columns], names=names)

    def export_parquet(self, sql: str, params: Sequence[Any], path: str, schema: pa.Schema) -> None:
        """Stream the result through a server-side cursor, one Parquet row group per chunk."""
        with self._errors():
            export.write_parquet(self.connection, sql, params, path, schema)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._errors(), self.connection.transaction():
            yield

    def close(self) -> None:
        self.connection.close()

    # -- DDL -----------------------------------------------------------------------------------

    def create_table_sql(self, relation: Relation, table: TableSpec) -> str:
        sql = super().create_table_sql(relation, table)
        if table.time_column is None:
            return sql
        return f"{sql} PARTITION BY RANGE ({self.quote(table.time_column)})"

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        """Create what is missing, plus an index on each table's replace key (replays look it up).

        Then drop the staging tables a killed driver left in these schemas (`orphans.sweep`).
        """
        super().ensure(tables)
        for given in tables:
            relation = self.relation(self.table_spec(given))
            index = check_name(
                f"{relation.parts[-1]}_replace_key",
                what="index",
                max_length=CAPABILITIES.max_identifier_length,
            )
            keys = self._keys(given)
            self.execute(f"CREATE INDEX IF NOT EXISTS {self.quote(index)} ON {relation.render()} ({keys})")
        with self._errors():
            orphans.sweep(self.connection, {self.relation(self.table_spec(t)).parts[-2] for t in tables})

    def _partitions(self, relation: Relation) -> list[partitions.Partition]:
        """The day partitions synclog made for `relation`, oldest first."""
        rows = self.fetch(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(%s)",
            [relation.render()],
        )
        found = (partitions.parse(relation, name) for (name,) in rows)
        return sorted((p for p in found if p is not None), key=lambda p: p.day)

    def _ensure_partitions(self, table: TableSpec, relation: Relation, days: DayCounts) -> None:
        """Create the day partitions the staged rows need, each in its own short statement."""
        if table.time_column is None:
            return
        if days.get(None):
            raise TargetError(
                f"{relation}: {days[None]:,} rows have no {table.time_column}, "
                "which the table is partitioned by"
            )
        have = {p.day for p in self._partitions(relation)}
        for day in sorted(d for d in days if d is not None and d not in have):
            self.execute(partitions.create_sql(relation, partitions.partition(relation, day)))

    # -- loading -------------------------------------------------------------------------------

    def replace_rows(self, table: TableSpec, rows: Rows) -> int:
        spec = self.table_spec(table)
        relation = self.relation(spec)
        if isinstance(rows, DataFrame):
            return self._load_frame(spec, relation, rows)
        return self._load_arrow(spec, relation, rows.select(spec.column_names()))

    def _time_index(self, table: TableSpec) -> int | None:
        return None if table.time_column is None else table.column_names().index(table.time_column)

    def _keys(self, table: TableSpec) -> str:
        return ", ".join(self.quote(k) for k in table.replace_key)

    def _columns(self, table: TableSpec) -> str:
        return ", ".join(self.quote(c) for c in table.column_names())

    def _load_arrow(self, table: TableSpec, relation: Relation, rows: pa.Table) -> int:
        """A small table from the driver: COPY into a temp table and move, all in one transaction."""
        self._ensure_partitions(table, relation, day_counts(rows, self._time_index(table)))
        stage = Relation(schema="pg_temp", name=_STAGE_PREFIX + "arrow")
        with self.transaction():
            self.execute(f"CREATE TEMP TABLE {stage.render()} (LIKE {relation.render()}) ON COMMIT DROP")
            copy_batches(
                self.connection.cursor(),
                copy_sql(stage.render(), self._columns(table)),
                rows.to_batches(max_chunksize=10_000),
                [c.type for c in table.columns],
                None,
            )
            return self._move(table, relation, stage)

    def _load_frame(self, table: TableSpec, relation: Relation, frame: DataFrame) -> int:
        """COPY each Spark partition into an UNLOGGED staging table from its executor, then move.

        Only a per-day row count comes back to the driver. A failure anywhere before the
        move's commit leaves the target as it was; the staging tables are dropped either way.
        """
        stage = relation.with_name(_STAGE_PREFIX + uuid.uuid4().hex[:12])
        ledger = stage.with_name(stage.name + "_parts")
        self.fetch(orphans.lock_sql("pg_advisory_lock"), orphans.stage_key(stage))  # see orphans
        self.execute(f"CREATE UNLOGGED TABLE {stage.render()} (LIKE {relation.render()})")
        try:
            self.execute(f"CREATE UNLOGGED TABLE {ledger.render()} (part integer PRIMARY KEY)")
            task = stage_task(
                self.params,
                stage.render(),
                ledger.render(),
                self._columns(table),
                [c.type for c in table.columns],
                self._time_index(table),
            )
            days: DayCounts = Counter()
            try:
                for row in frame.select(*table.column_names()).mapInArrow(task, SUMMARY_DDL).collect():
                    days[row["day"]] += row["rows"]
            except Exception as exc:
                _raise_copy_failure(exc, relation)
                raise
            self._ensure_partitions(table, relation, days)
            with self.transaction():
                # A small sample is enough for the planner to probe the replace-key index.
                self.execute("SET LOCAL default_statistics_target = 10")
                self.execute(f"ANALYZE {stage.render()} ({self._keys(table)})")
                return self._move(table, relation, stage)
        finally:
            self.execute(f"DROP TABLE IF EXISTS {stage.render()}, {ledger.render()}")
            self.fetch(orphans.lock_sql("pg_advisory_unlock"), orphans.stage_key(stage))

    def _move(self, table: TableSpec, relation: Relation, stage: Relation) -> int:
        """Inside a transaction: delete the rows the staged keys replace, insert the staged rows.

        Moves into one table take turns (a transaction-scoped advisory lock), so two writers
        replaying the same keys at once cannot both insert.
        """
        columns, target, staged = self._columns(table), relation.render(), stage.render()
        self.fetch("SELECT pg_advisory_xact_lock(hashtext(%s))", [target])
        self.execute(f"DELETE FROM {target} WHERE {self.key_match_sql(staged, table.replace_key)}")
        count = self.execute(f"INSERT INTO {target} ({columns}) SELECT {columns} FROM {staged}")
        self.execute(f"DROP TABLE {staged}")
        return count

    # -- retention -----------------------------------------------------------------------------

    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        """Drop whole day partitions older than every cut-off; DELETE only what remains expired.

        The bounded DELETE touches the day that straddles a cut-off and the days that syncs
        with a longer retention still keep (partition pruning skips every other day).
        """
        if table.time_column is None:
            return 0
        relation = self.relation(self.table_spec(table))
        floor = min((cutoffs.default, *cutoffs.per_sync.values()))
        dropped = sum(self._drop(relation, p) for p in self._partitions(relation) if p.end <= floor)
        return dropped + super().delete_expired(table, cutoffs)

    def _drop(self, relation: Relation, part: partitions.Partition) -> int:
        """Detach and drop one day partition; return how many rows it held."""
        name = part.relation.render()
        with self.transaction():
            self.execute(f"ALTER TABLE {relation.render()} DETACH PARTITION {name}")
            (count,) = self.fetch(f"SELECT count(*) FROM {name}")[0]
            self.execute(f"DROP TABLE {name}")
        return int(count)


def _raise_copy_failure(exc: Exception, relation: Relation) -> None:
    """Turn an executor's failed COPY (buried in a Spark error) into one line."""
    text = str(exc)
    at = text.find(FAILURE_MARK)
    if at >= 0:
        detail = text[at + len(FAILURE_MARK) :].strip().splitlines()[0]
        raise TargetError(f"loading {relation} failed: {detail}") from None
