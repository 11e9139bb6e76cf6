"""The in-cluster target: `databricks+spark://CATALOG`, written by Spark in the session synclog runs on.

Every statement is `spark.sql(sql, args=…)` with the parameters bound by Spark, so it works on a
classic session and through Spark Connect alike (Databricks Connect, serverless): nothing here
touches the SparkContext, RDDs or the JVM. The executors fill the stage (`load_frame`: an
`INSERT … SELECT` from the frame), and read-backs are written to `storage` by the executors, so
no row passes through the driver.

With Delta in the session (Databricks, or delta-spark) the tables are Delta and the core's swap
is one MERGE. Without it they are Parquet (`ParquetTarget`): Spark can neither MERGE nor DELETE
in Parquet tables, so the core's partition replace overwrites the partitions a replace touches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from synclog.plugin_api import (
    Capabilities,
    ConfigError,
    FrameLoader,
    LineageDataset,
    Manifest,
    Params,
    Partitioning,
    PartitionReplacer,
    PartitionValue,
    Relation,
    SqlClient,
    Statement,
    TableSpec,
    Target,
    TargetSettings,
    TargetURL,
    lineage_namespace,
    partitioning_of,
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
    kind = ParquetTarget if capabilities.partition_replace else SparkTarget
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

    def __init__(self, spark: SparkSession, dialect: DatabricksDialect) -> None:
        super().__init__(dialect)
        self.spark = spark

    def frame(self, sql: str, params: Sequence[Any] = ()) -> DataFrame:
        """The statement's result as a Spark frame (a command has run once this returns), bound by
        the dialect as every statement is."""
        return self.frame_bound(*self.dialect.bind(sql, params))

    def frame_bound(self, sql: str, params: Params) -> DataFrame:
        """`frame` of a statement bound as Spark takes it."""
        args = list(params) if isinstance(params, Sequence) else dict(params)
        return self.spark.sql(sql, args=args or None)

    def execute_bound(self, sql: str, params: Params) -> int:
        """Spark runs a command when `sql()` is called; Delta DML answers with its affected rows."""
        result = self.frame_bound(sql, params)
        if result.columns[:1] != ["num_affected_rows"]:
            return 0
        first = result.first()
        return int(first[0] or 0) if first is not None else 0

    def fetch_bound(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.frame_bound(sql, params).collect()]

    def query_bound(self, sql: str, params: Params) -> pa.Table:
        """The result in Arrow; VARIANT values as JSON text, as Databricks SQL returns them."""
        return variants_as_json(self.frame_bound(sql, params)).toArrow()

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
    dialect_class: ClassVar[type[DatabricksDialect]] = DatabricksDialect
    """The dialect of the tables this class writes (Delta's, or Parquet's)."""

    def __init__(
        self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities, spark: SparkSession
    ) -> None:
        if url.user or url.port or url.path.strip("/"):
            raise ConfigError(f"{url}: expected databricks+spark://CATALOG")
        chosen = catalog(url, settings, url.host or None)
        client = SparkClient(spark, self.dialect_class(capabilities))
        super().__init__(url, settings, capabilities, chosen, client)
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
        columns = ", ".join(self.dialect.quote(c) for c in table.column_names())
        frame.select(*table.column_names()).createOrReplaceTempView(view)
        try:
            self.client.execute(f"INSERT INTO {stage.render()} ({columns}) SELECT {columns} FROM `{view}`")
        finally:
            self.spark.catalog.dropTempView(view)
        return self.count_rows(stage)

    def export(self, sql: str, params: Sequence[Any], schema: pa.Schema, folder: str) -> Manifest:
        """The executors write the query's result as Parquet files under `folder` in storage."""
        return write_frame(self.client.frame(sql, params), self.storage, folder, schema)


class ParquetDialect(DatabricksDialect):
    """Parquet tables, partitioned as the core's partition replace says (`partitioning_of`), the
    partition column after the table's own columns (`partitions.py`)."""

    table_format: ClassVar[str] = "PARQUET"

    def create_table_sql(self, relation: Relation, table: TableSpec) -> str:
        part = partitioning_of(table)
        if part is None:
            return super().create_table_sql(relation, table)
        columns = ", ".join(self.column_sql(c) for c in table.columns)
        column, kind = self.quote(part.name), partitions.column_type(part)
        return (
            f"CREATE TABLE IF NOT EXISTS {relation.render()} ({columns}, {column} {kind}) "
            f"USING PARQUET PARTITIONED BY ({column}) OPTIONS ('partitionOverwriteMode' = 'dynamic')"
        )


class ParquetTarget(SparkTarget, PartitionReplacer):
    """Parquet tables, for a session without Delta (open-source Spark; the local tests).

    Tables are partitioned as the core's partition replace says (`partitioning_of`: a time
    column's UTC day, else the sync), with the partition column after the table's own columns
    (`partitions.py`). The core rewrites each partition a replace or retention touches in one
    Spark job (dynamic partition overwrite: a failed job leaves its partition as it was) and
    drops those left empty. Tables without partitions (the metadata tables) are rewritten whole,
    which Spark does by deleting the old files first: not atomic. Two writers replacing rows in
    the same partitions at once can lose one's rows; Delta has none of these limits.
    """

    dialect_class = ParquetDialect

    def partition_sql(self, partitioning: Partitioning, row: str, staged: bool) -> str:
        """A staged row's partition from its source column; a stored row's is its partition column."""
        if staged:
            return partitions.value_sql(partitioning, f"{row}.{self.dialect.quote(partitioning.source)}")
        return f"{row}.{self.dialect.quote(partitioning.name)}"

    def replace_partition(
        self,
        relation: Relation,
        partitioning: Partitioning | None,
        value: PartitionValue,
        rows: str,
        params: Sequence[Any],
    ) -> list[Statement]:
        """One INSERT OVERWRITE: of the partition the rows carry (dynamic mode, a table option), or
        of the whole table (which Spark empties first)."""
        if partitioning is None:
            return [(f"INSERT OVERWRITE TABLE {relation.render()} {rows}", params)]
        tagged = f"SELECT u.*, {partitions.literal(value)} FROM ({rows}) AS u"
        return [(f"INSERT OVERWRITE TABLE {relation.render()} {tagged}", params)]

    def drop_partition(
        self, relation: Relation, partitioning: Partitioning, value: PartitionValue
    ) -> Statement:
        spec = f"{self.dialect.quote(partitioning.name)} = {partitions.literal(value)}"
        return f"ALTER TABLE {relation.render()} DROP IF EXISTS PARTITION ({spec})", ()


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
