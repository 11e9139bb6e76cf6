"""The in-cluster target: `databricks+spark://CATALOG`, written by Spark in the session synclog runs on.

Every statement is `spark.sql(sql, args=…)` with the parameters bound by Spark, so it works on a
classic session and through Spark Connect alike (Databricks Connect, serverless): nothing here
touches the SparkContext, RDDs or the JVM. The executors fill the stage (`load_frame`: an
`INSERT … SELECT` from the frame), and read-backs are written to `storage` by the executors, so
no row passes through the driver.

With Delta in the session (Databricks, or delta-spark) the tables are Delta and the core's swap
is one MERGE. Without it they are Parquet (`ParquetTarget`): Spark can neither MERGE nor DELETE
in Parquet tables, so a replace overwrites the partitions it touches (`partitions.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from synclog.plugin_api import (
    Capabilities,
    Column,
    ColumnType,
    ConfigError,
    Cutoffs,
    FrameLoader,
    LineageDataset,
    Manifest,
    Params,
    Relation,
    SqlClient,
    Statement,
    TableSpec,
    Target,
    TargetSettings,
    TargetURL,
    lineage_namespace,
    spark_session,
    write_frame,
)
from synclog_databricks import partitions
from synclog_databricks.base import DatabricksDialect, DatabricksTarget
from synclog_databricks.capabilities import PARQUET
from synclog_databricks.options import catalog, with_json_type

OPTIONS = ("format", "json")
FORMATS = ("delta", "parquet")
WORKSPACE_CONF = "spark.databricks.workspaceUrl"
"""The Databricks workspace's host, which every Databricks cluster's Spark conf holds."""


def open_cluster_target(url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> Target:
    """A Delta target, or a Parquet one where the capabilities are Parquet's (`cluster_capabilities`)."""
    kind = ParquetTarget if capabilities.partition_drop else SparkTarget
    return kind(url, settings, capabilities, spark_session())


def cluster_capabilities(declared: Capabilities, url: TargetURL, settings: TargetSettings) -> Capabilities:
    """Delta's (`declared`) when the session has Delta (or `format=delta`), else Parquet's; with
    the `json` option's JSON type."""
    given = settings.options_for(url, OPTIONS)
    chosen = given.get("format", "").lower() or session_format(spark_session())
    if chosen not in FORMATS:
        raise ConfigError(f"{url}: format must be one of {', '.join(FORMATS)}, not {chosen!r}")
    return with_json_type(declared if chosen == "delta" else PARQUET, url, given)


def session_format(spark: SparkSession) -> str:
    """delta when the session writes Delta by default (Databricks) or has delta-spark's extension."""
    default = str(spark.conf.get("spark.sql.sources.default", "parquet")).lower()
    extensions = str(spark.conf.get("spark.sql.extensions", "") or "")
    return "delta" if default == "delta" or "DeltaSparkSessionExtension" in extensions else "parquet"


class SparkClient(SqlClient):
    """Statements through `spark.sql(sql, args=…)`, parameters bound by Spark (positional `?` or
    named `:name`); no transactions."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def frame(self, sql: str, params: Params) -> DataFrame:
        """The statement's result as a Spark frame (a command has run once this returns)."""
        args = list(params) if isinstance(params, Sequence) else dict(params)
        return self.spark.sql(sql, args=args or None)

    def execute(self, sql: str, params: Params = ()) -> int:
        """Spark runs a command when `sql()` is called; Delta DML answers with its affected rows."""
        result = self.frame(sql, params)
        if result.columns[:1] != ["num_affected_rows"]:
            return 0
        first = result.first()
        return int(first[0] or 0) if first is not None else 0

    def fetch(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.frame(sql, params).collect()]

    def query(self, sql: str, params: Params = ()) -> pa.Table:
        """The result in Arrow; VARIANT values as JSON text, as Databricks SQL returns them."""
        return variants_as_json(self.frame(sql, params)).toArrow()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Spark has no multi-statement transactions: each statement commits on its own (one MERGE
        per swap on Delta)."""
        yield

    def close(self) -> None:
        """Nothing to release: the Spark session belongs to the caller."""


class SparkTarget(DatabricksTarget, FrameLoader):
    """Delta tables in a catalog of the Spark session; one MERGE per swap."""

    client: SparkClient

    def __init__(
        self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities, spark: SparkSession
    ) -> None:
        if url.user or url.port or url.path.strip("/"):
            raise ConfigError(f"{url}: expected databricks+spark://CATALOG")
        chosen = catalog(url, settings, url.host or None)
        super().__init__(url, settings, capabilities, chosen, SparkClient(spark))
        self.spark = spark

    def lineage_dataset(self, relation: Relation) -> LineageDataset:
        """`databricks://{workspace host}` (the session's `spark.databricks.workspaceUrl`, as the
        SQL warehouse target names it) and `{catalog}.{schema}.{table}`; a session outside
        Databricks, which knows no workspace, names the table in its own catalogs: `spark`."""
        workspace = self.spark.conf.get(WORKSPACE_CONF, None)
        namespace = lineage_namespace("databricks", workspace) if workspace else "spark"
        return LineageDataset(namespace, str(relation))

    # -- loading and reading back --------------------------------------------------------------

    def load_frame(self, stage: Relation, table: TableSpec, frame: DataFrame) -> int:
        """The executors write the frame's rows into the stage (an INSERT from a temporary view)."""
        view = f"_synclog_rows_{stage.name.removeprefix('_synclog_stage_')}"
        columns = ", ".join(self.quote(c) for c in table.column_names())
        frame.select(*table.column_names()).createOrReplaceTempView(view)
        try:
            self.execute(f"INSERT INTO {stage.render()} ({columns}) SELECT {columns} FROM `{view}`")
        finally:
            self.spark.catalog.dropTempView(view)
        return self.count_rows(stage)

    def export(self, sql: str, params: Sequence[Any], schema: pa.Schema, folder: str) -> Manifest:
        """The executors write the query's result as Parquet files under `folder` in storage."""
        return write_frame(self.client.frame(*self.dialect.bind(sql, params)), self.storage, folder, schema)


class ParquetDialect(DatabricksDialect):
    """Parquet tables, partitioned by their UTC day or sync (`partitions.py`)."""

    table_format: ClassVar[str] = "PARQUET"

    def create_table_sql(self, relation: Relation, table: TableSpec) -> str:
        part = partitions.of(table)
        if part is None:
            return super().create_table_sql(relation, table)
        columns = ", ".join(self.column_sql(c) for c in table.columns)
        column = self.quote(part.column)
        return (
            f"CREATE TABLE IF NOT EXISTS {relation.render()} ({columns}, {column} {part.type}) "
            f"USING PARQUET PARTITIONED BY ({column}) OPTIONS ('partitionOverwriteMode' = 'dynamic')"
        )


class ParquetTarget(SparkTarget):
    """Parquet tables, for a session without Delta (open-source Spark; the local tests).

    Tables with a time column are partitioned by its UTC day, the others by sync where they have
    a `sync_id` (`partitions.py`); the partition column comes after the table's own columns.
    A replace rewrites the partitions that hold replaced or new rows in one Spark job (dynamic
    partition overwrite: a failed job leaves the table as it was; the job's commit replaces the
    partitions one by one) and drops those left empty. Retention does the same with the expired
    rows: days that expire whole are dropped, days only partly expired are rewritten. Tables
    without partitions (the metadata tables) are rewritten whole, which Spark does by deleting
    the old files first: not atomic. Two writers replacing rows in the same partitions at once
    can lose one's rows; Delta has none of these limits.
    """

    dialect_class = ParquetDialect

    def swap_statements(
        self, table: TableSpec, relation: Relation, stage: Relation, scope: Mapping[str, Any] | None
    ) -> list[Statement]:
        """The overwrite of the partitions holding replaced or staged rows, then the drop of those
        left empty (which a query finds first: one row per partition touched)."""
        if scope:
            replaced = " AND ".join(f"t.{self.quote(name)} = ?" for name in scope)
            removal = partitions.Removal(replaced, list(scope.values()))
        else:
            on = " AND ".join(f"s.{self.quote(k)} = t.{self.quote(k)}" for k in table.replace_key)
            removal = partitions.Removal(f"EXISTS (SELECT 1 FROM {stage.render()} AS s WHERE {on})")
        part = partitions.of(table)
        if part is None:
            return self._rewrite_whole(table, relation, removal, stage)
        return self._rewrite(table, relation, part, removal, stage)[0]

    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        """Rewrite the days that hold expired rows without them; days that expire whole are dropped."""
        part = partitions.of(table)
        if table.time_column is None or part is None:
            return 0
        time, sync = self.quote(table.time_column), self.quote("sync_id")
        overridden = list(cutoffs.per_sync)
        exempt = f" AND t.{sync} NOT IN ({', '.join('?' * len(overridden))})" if overridden else ""
        clauses = [f"(t.{time} < ?{exempt})"]
        params: list[Any] = [cutoffs.default, *overridden]
        for sync_id, cutoff in cutoffs.per_sync.items():
            clauses.append(f"(t.{sync} = ? AND t.{time} < ?)")
            params += [sync_id, cutoff]
        newest = max((cutoffs.default, *cutoffs.per_sync.values())).astimezone(UTC)
        bound = f"t.{self.quote(part.column)} <= {part.literal(newest.date())}"
        spec = self.table_spec(table)
        removal = partitions.Removal(" OR ".join(clauses), params, bound)
        statements, removed = self._rewrite(spec, self.relation(spec), part, removal, None)
        self.run_swap(statements)
        return removed

    def _rewrite(
        self,
        table: TableSpec,
        relation: Relation,
        part: partitions.Partitioning,
        removal: partitions.Removal,
        stage: Relation | None,
    ) -> tuple[list[Statement], int]:
        """Statements that leave `relation` without the rows `removal` matches and with the staged
        rows, partition by partition; and how many rows they remove."""
        target, column = relation.render(), self.quote(part.column)
        staged_part = part.value_sql(self.quote(part.source))
        touched = [] if stage is None else [f"SELECT {staged_part}, 1, 1, 0 FROM {stage.render()}"]
        touched.append(
            "SELECT r.p, IF(r.hit, 0, 1), IF(r.hit, 1, 0), IF(r.hit, 1, 0) "
            f"FROM (SELECT t.{column} AS p, COALESCE(({removal.sql}), FALSE) AS hit "
            f"FROM {target} AS t WHERE {removal.bound}) AS r"
        )
        summary = self.fetch(  # per partition touched: whether rows remain, and how many go
            f"SELECT p, MAX(keep), SUM(gone) FROM ({' UNION ALL '.join(touched)}) AS u(p, keep, touch, gone) "
            "GROUP BY p HAVING MAX(touch) = 1",
            removal.params,
        )
        filled = [p for p, keep, _ in summary if keep]
        emptied = [p for p, keep, _ in summary if not keep]
        statements: list[Statement] = []
        if filled:
            stored = [n for n in self.existing_columns(relation) or () if n not in partitions.COLUMNS]
            selects = (
                []
                if stage is None
                else [f"SELECT {self._staged(table, stored)}, {staged_part} FROM {stage.render()}"]
            )
            kept = f"{part.among(f't.{column}', filled)} AND NOT COALESCE(({removal.sql}), FALSE)"
            columns = ", ".join(f"t.{self.quote(n)}" for n in stored)
            selects.append(f"SELECT {columns}, t.{column} FROM {target} AS t WHERE {kept}")
            statements.append(
                (f"INSERT OVERWRITE TABLE {target} {' UNION ALL '.join(selects)}", removal.params)
            )
        if emptied:
            dropped = ", ".join(f"PARTITION ({column} = {part.literal(p)})" for p in emptied)
            statements.append((f"ALTER TABLE {target} DROP IF EXISTS {dropped}", ()))
        return statements, sum(int(gone) for _, _, gone in summary)

    def _staged(self, table: TableSpec, stored: Sequence[str]) -> str:
        """The stage's values for each stored column, in the table's order (NULL for columns
        the table has and this load does not carry, such as `split_group`)."""
        spec = {c.name: c for c in table.columns}
        return ", ".join(self.staged_value_sql(spec[n]) if n in spec else "NULL" for n in stored)

    def _rewrite_whole(
        self, table: TableSpec, relation: Relation, removal: partitions.Removal, stage: Relation
    ) -> list[Statement]:
        """A table without partitions is rewritten whole: its kept rows join the staged ones in
        the stage (Spark cannot overwrite a table it reads), then the stage replaces it."""
        names = ", ".join(self.quote(c) for c in table.column_names())
        texts = ", ".join(self._stage_text(c) for c in table.columns)
        target, staged = relation.render(), stage.render()
        kept = f"NOT COALESCE(({removal.sql}), FALSE)"
        values = self._staged(table, table.column_names())
        return [
            (
                f"INSERT INTO {staged} ({names}) SELECT {texts} FROM {target} AS t WHERE {kept}",
                removal.params,
            ),
            (f"INSERT OVERWRITE TABLE {target} SELECT {values} FROM {staged}", ()),
        ]

    def _stage_text(self, column: Column) -> str:
        """A stored column of `t` as the stage holds it (JSON as text)."""
        source = f"t.{self.quote(column.name)}"
        return self.json_text_sql(source) if column.type is ColumnType.JSON else source


def variants_as_json(frame: DataFrame) -> DataFrame:
    """`frame` with its VARIANT columns as JSON text (Arrow cannot take a NULL VARIANT)."""
    kinds = [field.dataType.typeName() for field in frame.schema.fields]
    if "variant" not in kinds:
        return frame
    names = frame.columns  # may repeat a name: the columns are picked by position
    numbered = frame.toDF(*[f"_{i}" for i in range(len(names))])
    picked = [
        (F.to_json(F.col(f"_{i}")) if kind == "variant" else F.col(f"_{i}")).alias(name)
        for i, (name, kind) in enumerate(zip(names, kinds, strict=True))
    ]
    return numbered.select(*picked)
