"""The PostgreSQL target: COPY from the executors into a staging table, then the core's swap."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
import pyarrow as pa

from synclog import plugin_api as api
from synclog_postgres import orphans, partitions
from synclog_postgres.connection import OUTAGES, connect, conninfo
from synclog_postgres.copy import FAILURE_MARK, REFUSED_MARK, CopyStageWriter, DayCounts, day_totals

_CURSOR = "synclog_export"
_DDL_LOCK_CLASS = orphans.LOCK_CLASS + 1
"""The advisory lock (class, 0) that DDL of synclog's takes turns under, apart from stage locks."""


class PostgresDialect(api.SqlDialect):
    """psycopg's `%s` markers, TEXT and TIMESTAMPTZ; tables with a time column partitioned by it."""

    placeholder = "%s"
    type_names = {
        **api.SqlDialect.type_names,
        api.ColumnType.STRING: "TEXT",
        api.ColumnType.TIMESTAMP: "TIMESTAMPTZ",
    }

    def table_options(self, table: api.TableSpec) -> str:
        time = table.time_column
        return "" if time is None else f"PARTITION BY RANGE ({self.quote(time)})"


class PostgresClient(api.DbApiClient):
    """psycopg's own transactions, and results streamed through a server-side cursor."""

    connection: psycopg.Connection[Any]

    def batches_bound(self, sql: str, params: api.Params, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """Stream the result through a server-side cursor, `chunk_rows` rows at a time."""
        chunk = self.chunk_rows
        with (
            self.errors(),
            self.connection.transaction(),  # a cursor without HOLD lives inside a transaction
            self.connection.cursor(name=_CURSOR) as cursor,
        ):
            cursor.execute(sql, self.driver_params(params))
            for rows in iter(lambda: cursor.fetchmany(chunk), []):
                yield api.rows_batch(rows, schema)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.errors(), self.connection.transaction():
            yield


class PostgresTarget(api.SqlTarget, api.TaskLoader, api.PartitionDropper):
    """A PostgreSQL database; tables with a time column are partitioned by UTC day."""

    client: PostgresClient

    def __init__(
        self, url: api.TargetURL, settings: api.TargetSettings, capabilities: api.Capabilities
    ) -> None:
        self.params = conninfo(url)
        dialect = PostgresDialect(capabilities)
        client = PostgresClient(connect(self.params, where=str(url)), OUTAGES, str(url), dialect)
        super().__init__(url, settings, capabilities, client)

    def lineage_dataset(self, relation: api.Relation) -> api.LineageDataset:
        """The OpenLineage naming spec's Postgres row: `postgres://{host}:{port}` (the default port
        spelled out) and `{database}.{schema}.{table}`."""
        namespace = api.lineage_namespace("postgres", self.params["host"], self.params["port"])
        return api.LineageDataset(namespace, f"{self.params['dbname']}.{relation}")

    # -- DDL -----------------------------------------------------------------------------------

    def ensure(self, tables: Sequence[api.TableSpec]) -> None:
        """Create what is missing, plus an index on each table's replace key (replays look it up).

        Then drop the staging tables a killed driver left in these schemas (`sweep_stages`).
        Writers take turns (`_ddl_turn`): PostgreSQL's IF NOT EXISTS is no guard against a
        concurrent CREATE of the same schema, table or index (a unique violation in its catalog).
        """
        with self._ddl_turn():
            self._ensure(tables)

    def sweep_stages(self, relations: Sequence[api.Relation]) -> list[api.Relation]:
        """The stages whose loading session is gone (`orphans.sweep`: PostgreSQL can tell by the
        stage's advisory lock, on any host, which the owner in a stage's name cannot)."""
        with self.client.errors():
            return orphans.sweep(self.client.connection, {relation.parts[-2] for relation in relations})

    @contextmanager
    def _ddl_turn(self) -> Iterator[None]:
        """Hold the database-wide DDL lock of synclog (a session advisory lock) while the block runs."""
        self.client.fetch("SELECT pg_advisory_lock(%s, 0)", [_DDL_LOCK_CLASS])
        try:
            yield
        finally:
            self.client.fetch("SELECT pg_advisory_unlock(%s, 0)", [_DDL_LOCK_CLASS])

    def _ensure(self, tables: Sequence[api.TableSpec]) -> None:
        super().ensure(tables)
        for given in tables:
            relation = self.relation(self.table_spec(given))
            index = api.check_name(
                f"{relation.parts[-1]}_replace_key",
                what="index",
                max_length=self.capabilities.max_identifier_length,
            )
            wanted = [self.capabilities.casefold.apply(k) for k in given.replace_key]
            have = self._index_columns(relation, index)
            if have is not None and have != wanted:  # a key of an earlier version: made again
                self.client.execute(f"DROP INDEX {relation.with_name(index).render()}")
            keys = ", ".join(self.dialect.quote(k) for k in given.replace_key)
            self.client.execute(
                f"CREATE INDEX IF NOT EXISTS {self.dialect.quote(index)} ON {relation.render()} ({keys})"
            )

    def _index_columns(self, relation: api.Relation, index: str) -> list[str] | None:
        """The columns of the index `index` in the schema of `relation`, in order (None: no index)."""
        rows = self.client.fetch(
            "SELECT a.attname FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position) ON true "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "WHERE n.nspname = %s AND c.relname = %s ORDER BY k.position",
            [relation.parts[-2], index],
        )
        return [name for (name,) in rows] or None

    def _partitions(self, relation: api.Relation) -> list[partitions.Partition]:
        """The day partitions synclog made for `relation`, oldest first."""
        rows = self.client.fetch(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(%s)",
            [relation.render()],
        )
        found = (partitions.parse(relation, name) for (name,) in rows)
        return sorted((p for p in found if p is not None), key=lambda p: p.day)

    def _ensure_partitions(self, table: api.TableSpec, relation: api.Relation, days: DayCounts) -> None:
        """Create the day partitions the staged rows need, each in its own short statement."""
        if table.time_column is None:
            return
        if days.get(None):
            raise api.TargetError(
                f"{relation}: {days[None]:,} rows have no {table.time_column}, "
                "which the table is partitioned by"
            )
        if {d for d in days if d is not None} <= {p.day for p in self._partitions(relation)}:
            return
        with self._ddl_turn():
            have = {p.day for p in self._partitions(relation)}
            for day in sorted(d for d in days if d is not None and d not in have):
                self.client.execute(partitions.create_sql(relation, partitions.partition(relation, day)))

    # -- the load: an UNLOGGED stage filled by the executors' COPY -----------------------------

    def create_stage(self, stage: api.Relation, table: api.TableSpec) -> None:
        """An UNLOGGED copy of the table's columns and its ledger, under the stage's lock (see orphans)."""
        self.client.fetch(orphans.lock_sql("pg_advisory_lock"), orphans.stage_key(stage))
        self.client.execute(f"CREATE UNLOGGED TABLE {stage.render()} (LIKE {self.relation(table).render()})")
        self.client.execute(f"CREATE UNLOGGED TABLE {_ledger(stage).render()} (part integer PRIMARY KEY)")

    def drop_stage(self, stage: api.Relation) -> None:
        self.client.execute(f"DROP TABLE IF EXISTS {stage.render()}, {_ledger(stage).render()}")
        self.client.fetch(orphans.lock_sql("pg_advisory_unlock"), orphans.stage_key(stage))

    def task_writer(self, stage: api.Relation, table: api.TableSpec) -> CopyStageWriter:
        """Each Spark task COPYs its rows into the stage itself (and commits them once, see
        `CopyStageWriter`); only its row count per day comes back to the driver."""
        time_index = None if table.time_column is None else table.column_names().index(table.time_column)
        return CopyStageWriter(
            self.params,
            stage.render(),
            _ledger(stage).render(),
            ", ".join(self.dialect.quote(c) for c in table.column_names()),
            table.arrow_schema(),
            tuple(c.type for c in table.columns),
            time_index,
        )

    def load_tasks(self, stage: api.Relation, table: api.TableSpec, reports: Sequence[str]) -> int:
        """Create the day partitions the staged rows need; the rows the tasks copied. (The swap
        matches the table by its keys' constants, on the replace-key index: it joins nothing with
        the stage, so the stage needs no statistics.)"""
        days = day_totals(reports)
        self._ensure_partitions(table, self.relation(table), days)
        return sum(days.values())

    def raise_stage_failure(self, failure: Exception, table: api.TableSpec) -> None:
        _raise_copy_failure(failure, self.relation(table))

    def lock_statement(self, relation: api.Relation) -> api.Statement:
        """Swaps into one table take turns, so two writers replaying the same keys cannot both insert."""
        return "SELECT pg_advisory_xact_lock(hashtext(%s))", [relation.render()]

    # -- retention -----------------------------------------------------------------------------

    def drop_partitions(self, table: api.TableSpec, relation: api.Relation, before: datetime) -> int:
        """Drop every day partition that ends before `before`, all in one transaction (one commit,
        however many days expired); return the rows they held: PostgreSQL's own count of each
        (`pg_class.reltuples`, kept by ANALYZE and autovacuum), so no partition is scanned; only
        one never analyzed is counted row by row."""
        if not any(part.end <= before for part in self._partitions(relation)):
            return 0  # nothing expired: no lock taken
        with self.client.transaction():
            self.client.execute(f"LOCK TABLE {relation.render()} IN ACCESS EXCLUSIVE MODE")
            expired = [part.relation for part in self._partitions(relation) if part.end <= before]
            if not expired:
                return 0  # another cleanup dropped them meanwhile
            count = self._rows_held(expired)
            self.client.execute(f"DROP TABLE {', '.join(part.render() for part in expired)}")
        return count

    def _rows_held(self, tables: list[api.Relation]) -> int:
        """The rows `tables` hold, from the catalogue's estimate where ANALYZE has made one."""
        names = [table.render() for table in tables]
        estimates = self.client.fetch(
            "SELECT CAST(reltuples AS bigint) FROM pg_class "
            f"WHERE oid = ANY(CAST({self.dialect.placeholder} AS regclass[]))",
            [names],
        )
        if all(n >= 0 for (n,) in estimates):
            return sum(n for (n,) in estimates)
        # One never analyzed (new, or as empty as expired days seldom are): count them all.
        counts = " UNION ALL ".join(f"SELECT count(*) AS n FROM {name}" for name in names)
        (rows,) = self.client.fetch(f"SELECT COALESCE(sum(n), 0) FROM ({counts}) AS days")[0]
        return int(rows)


def _ledger(stage: api.Relation) -> api.Relation:
    """The table that records which Spark partitions committed their COPY into `stage`."""
    return stage.with_name(stage.name + orphans.LEDGER)


def _raise_copy_failure(exc: BaseException, relation: api.Relation) -> None:
    """Turn an executor's failed COPY (buried in a Spark error) into one line: an outage
    (TargetError), or rows the server refused (InputError)."""
    text = str(exc)
    for mark, error, verb in (
        (FAILURE_MARK, api.TargetError, "failed"),
        (REFUSED_MARK, api.InputError, "was refused"),
    ):
        at = text.find(mark)
        if at >= 0:
            detail = text[at + len(mark) :].strip().splitlines()[0]
            raise error(f"loading {relation} {verb}: {detail}") from None
