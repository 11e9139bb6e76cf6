"""The BigQuery target: datasets per layout, day-partitioned log tables, load jobs, swap scripts.

Every load follows synclog's load protocol: a fresh staging table (created through the API,
expiring by itself if left behind) is filled by one load job (or one INSERT for a few rows),
then one multi-statement transaction deletes the rows whose replace key is staged and inserts
the staged rows, parsing JSON text into JSON. Retention: partitions expire after the longest
retention configured for the table; a DELETE removes rows of syncs that keep them for less.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
from google.api_core.exceptions import BadRequest, NotFound
from google.cloud import bigquery

from synclog.plugin_api import (
    DEFAULT_RETENTION_DAYS,
    STAGE_PREFIX,
    Capabilities,
    Column,
    ColumnType,
    ConfigError,
    FileLoader,
    LineageDataset,
    Manifest,
    PartitionExpirer,
    Relation,
    SqlDialect,
    SqlTarget,
    Statement,
    TableSpec,
    TargetError,
    TargetSettings,
    TargetURL,
    first_line,
)
from synclog_bigquery.connection import BigQueryClient, ConnectionSettings
from synclog_bigquery.loading import INLINE_BYTES, INLINE_ROWS, inline_rows, load_job, uri_load_job

CLUSTER_BY = ("sync_id", "sync_run_id")
EXPIRY_OPTION = "partition_expiration_days"
"""Target option: partition expiry of new tables until a cleanup sets the configured retention."""
STAGE_LIFETIME = timedelta(days=1)
"""A staging table left behind by a crash expires by itself."""
_DAY_MS = 86_400_000
_SWAP_ATTEMPTS = 5
_CONCURRENT_UPDATE = "concurrent update"
"""BigQuery aborts one of two transactions that change the same table at once (a BadRequest)."""


class BigQueryDialect(SqlDialect):
    """GoogleSQL: named `@p0` parameters (local-bigquery binds positional ones in the wrong order
    once a WITH clause precedes them), its own type names, day-partitioned and clustered tables,
    JSON staged as text."""

    named = True
    text = r"""'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|`[^`]*`|--[^\n]*|#[^\n]*|/\*.*?\*/"""
    type_names = {
        **SqlDialect.type_names,
        ColumnType.BIGINT: "INT64",
        ColumnType.INTEGER: "INT64",
        ColumnType.STRING: "STRING",
        ColumnType.BOOLEAN: "BOOL",
    }

    def marker(self, name: str, value: Any) -> str:
        """`@name`: the client types each parameter from its value (`query_parameters`)."""
        return f"@{name}"

    def table_options(self, table: TableSpec) -> str:
        """Tables with a time column are partitioned by its day and clustered by sync and run."""
        if table.time_column is None:
            return ""
        options = f"PARTITION BY TIMESTAMP_TRUNC({self.quote(table.time_column)}, DAY)"
        clustered = [c for c in CLUSTER_BY if c in table.column_names()]
        if clustered:
            options += " CLUSTER BY " + ", ".join(self.quote(c) for c in clustered)
        return options

    def json_text_sql(self, expression: str) -> str:
        """BigQuery casts only JSON strings to STRING; TO_JSON_STRING serialises any JSON value.

        A SQL NULL stays NULL (local-bigquery's TO_JSON_STRING turns it into the text `null`).
        """
        return f"IF({expression} IS NULL, NULL, TO_JSON_STRING({expression}))"

    def stage_type(self, column: Column) -> str:
        """JSON is staged as text (PARSE_JSON in the swap); every INTEGER is INT64 already."""
        return "STRING" if column.type is ColumnType.JSON else self.type_name(column.type)

    def staged_value_sql(self, column: Column) -> str:
        """JSON text parsed into JSON (numbers too large for a double are rounded)."""
        if column.type is ColumnType.JSON:
            return f"PARSE_JSON({self.quote(column.name)}, wide_number_mode => 'round')"
        return self.quote(column.name)


class BigQueryTarget(SqlTarget, FileLoader, PartitionExpirer):
    """Log tables in BigQuery datasets (`census`, `hightouch_audit`) of one project."""

    client: BigQueryClient

    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        self.connection = ConnectionSettings.from_url(url)
        self.expiration_days = _expiry_days(settings.options.get(EXPIRY_OPTION, DEFAULT_RETENTION_DAYS))
        client = BigQueryClient(self.connection, BigQueryDialect(capabilities))
        super().__init__(url, settings, capabilities, client)
        self.api = self.client.api
        """The client library's client: tables, datasets and load jobs."""
        self.retries = self.client.retries
        self.project: str = self.api.project
        self._datasets: set[str] = set()

    # -- names ---------------------------------------------------------------------------------

    def table_ref(self, relation: Relation) -> bigquery.TableReference:
        """The API's name for `relation` in this target's project."""
        dataset, table = relation.parts[-2:]
        return bigquery.DatasetReference(self.project, dataset).table(table)

    def lineage_dataset(self, relation: Relation) -> LineageDataset:
        """The OpenLineage naming spec's BigQuery row: `bigquery` and `{project}.{dataset}.{table}`
        (the project the client works in: the URL's, else the environment's default)."""
        return LineageDataset("bigquery", f"{self.project}.{relation}")

    def _errors(self, what: str) -> AbstractContextManager[None]:
        return self.client.errors(what)

    # -- DDL -----------------------------------------------------------------------------------

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        for table in tables:
            self._ensure_dataset(self.relation(table).parts[-2])
        super().ensure(tables)
        for table in tables:
            if table.time_column is not None:
                self._set_expiry(self.relation(table), self.expiration_days, only_if_unset=True)

    def _ensure_dataset(self, name: str) -> None:
        if name in self._datasets:
            return
        dataset = bigquery.Dataset(bigquery.DatasetReference(self.project, name))
        if self.connection.location:
            dataset.location = self.connection.location
        with self._errors(f"creating dataset {name}"):
            self.api.create_dataset(
                dataset, exists_ok=True, retry=self.retries.call, timeout=self.retries.seconds
            )
        self._datasets.add(name)

    def view_sql(self, view: Relation, relation: Relation, table: TableSpec) -> str:
        # A view's body names its table with the project, so it reads the same from any project.
        columns = ", ".join(self.dialect.quote(c) for c in table.column_names())
        source = f"{self.dialect.quote(self.project)}.{relation.render()}"
        return f"CREATE OR REPLACE VIEW {view.render()} AS SELECT {columns} FROM {source}"

    def existing_columns(self, relation: Relation) -> list[str] | None:
        with self._errors(f"reading {relation}"):
            try:
                found = self._get_table(relation)
            except NotFound:
                return None
        return [field.name for field in found.schema]

    def _set_expiry(self, relation: Relation, days: int, *, only_if_unset: bool = False) -> None:
        """Let `relation`'s day partitions expire after `days` days (tables not partitioned are left)."""
        with self._errors(f"setting the partition expiry of {relation}"):
            found = self._get_table(relation)
            partitioning = found.time_partitioning
            wanted = max(days, 1) * _DAY_MS
            if partitioning is None or partitioning.expiration_ms == wanted:
                return
            if only_if_unset and partitioning.expiration_ms is not None:
                return
            partitioning.expiration_ms = wanted
            found.time_partitioning = partitioning
            self.api.update_table(
                found, ["time_partitioning"], retry=self.retries.call, timeout=self.retries.seconds
            )

    def _get_table(self, relation: Relation) -> bigquery.Table:
        return self.api.get_table(
            self.table_ref(relation), retry=self.retries.call, timeout=self.retries.seconds
        )

    # -- loading: a staging table through the API, a load job, one swap script ------------------

    def _stage_fields(self, table: TableSpec) -> list[bigquery.SchemaField]:
        return [bigquery.SchemaField(c.name, self.dialect.stage_type(c)) for c in table.columns]

    def create_stage(self, stage: Relation, table: TableSpec) -> None:
        staged = bigquery.Table(self.table_ref(stage), schema=self._stage_fields(table))
        staged.expires = datetime.now(UTC) + STAGE_LIFETIME
        with self._errors(f"creating {stage}"):
            self.api.create_table(staged, retry=self.retries.call, timeout=self.retries.seconds)

    def find_stages(self, relation: Relation) -> list[tuple[Relation, datetime | None]]:
        """The dataset's staging tables, listed through the API, with their creation times."""
        dataset = bigquery.DatasetReference(self.project, relation.parts[-2])
        with self._errors(f"listing {dataset.dataset_id}"):
            try:
                tables = list(
                    self.api.list_tables(dataset, retry=self.retries.call, timeout=self.retries.seconds)
                )
            except NotFound:
                return []
        return [
            (relation.with_name(t.table_id), t.created) for t in tables if t.table_id.startswith(STAGE_PREFIX)
        ]

    def drop_stage(self, stage: Relation) -> None:
        with self._errors(f"dropping {stage}"):
            self.api.delete_table(
                self.table_ref(stage),
                not_found_ok=True,
                retry=self.retries.call,
                timeout=self.retries.seconds,
            )

    def load_files(self, stage: Relation, table: TableSpec, manifest: Manifest) -> int:
        """One load job: of the staged files themselves where `storage` is on GCS, else of one
        local Parquet file that the manifest's files are streamed into.

        A local load of up to INLINE_ROWS small rows is one INSERT from a query parameter instead.
        """
        fields = self._stage_fields(table)
        if self.storage.scheme == "gs":
            with self._errors(f"loading {stage}"):
                return uri_load_job(self.api, self.retries, self.table_ref(stage), fields, manifest.uris())
        schema = self.stage_schema(table)
        batches: Iterable[pa.RecordBatch] = manifest.batches(schema)
        if manifest.rows <= INLINE_ROWS:
            rows = manifest.dataset(schema).to_table()
            if rows.nbytes <= INLINE_BYTES:
                columns = ", ".join(self.dialect.quote(c) for c in table.column_names())
                picked = ", ".join(f"S.{self.dialect.quote(c)}" for c in table.column_names())
                sql = f"INSERT INTO {stage.render()} ({columns}) SELECT {picked} FROM UNNEST(@rows) AS S"
                job = self.client.run(sql, [inline_rows("rows", fields, rows)])
                return int(job.num_dml_affected_rows or 0)
            batches = rows.to_batches()
        with self._errors(f"loading {stage}"):
            return load_job(self.api, self.retries, self.table_ref(stage), fields, schema, batches)

    def run_swap(self, statements: Sequence[Statement]) -> None:
        """The statements as one BEGIN … COMMIT script: one job, no session to keep.

        A transaction that BigQuery aborts for a concurrent update of the table is run again,
        with growing pauses; when it still conflicts, that is an outage (a later flush loads it).
        """
        script = "\n".join(
            ["BEGIN TRANSACTION;", *(f"{sql};" for sql, _ in statements), "COMMIT TRANSACTION;"]
        )
        params = [value for _, values in statements for value in values]
        for attempt in range(1, _SWAP_ATTEMPTS + 1):
            try:
                self.client.execute(script, params)
                return
            except BadRequest as exc:
                if _CONCURRENT_UPDATE not in str(exc):
                    raise
                if attempt == _SWAP_ATTEMPTS:
                    raise TargetError(f"BigQuery swap: {first_line(exc)}") from None
                time.sleep(2**attempt)

    # -- retention -----------------------------------------------------------------------------

    def expire_partitions(self, table: TableSpec, relation: Relation, days: int) -> None:
        self._set_expiry(relation, days)


def _expiry_days(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"option {EXPIRY_OPTION} must be a whole number of days >= 1, got {value!r}")
    return value
