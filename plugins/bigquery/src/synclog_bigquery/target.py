"""The BigQuery target: datasets per layout, day-partitioned log tables, staged loads, swaps.

Every write goes to a fresh staging table (one load job, or the connector's direct write), then
one multi-statement transaction deletes the rows whose replace key is staged and inserts the
staged rows, parsing JSON text into JSON. Retention: partitions expire after the longest
retention configured for the table; a DELETE removes rows of syncs that keep them for less.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pyarrow as pa
from google.api_core.exceptions import NotFound
from google.cloud import bigquery
from pyspark.sql import DataFrame

from synclog.capabilities import Capabilities
from synclog.config import DEFAULT_RETENTION_DAYS
from synclog.errors import ConfigError, TargetError
from synclog.naming import Relation
from synclog.targets import export
from synclog.targets.base import Cutoffs, TargetSettings
from synclog.targets.sql import SqlTarget
from synclog.targets.tables import ColumnType, Rows, TableSpec
from synclog.urls import TargetURL
from synclog_bigquery.connection import (
    ConnectionSettings,
    named_markers,
    query_parameters,
    translated_errors,
)
from synclog_bigquery.connector import connector_available, write_with_connector
from synclog_bigquery.loading import INLINE_ROWS, inline_rows, load_parquet, stage_schema
from synclog_bigquery.plugin import CAPABILITIES

CLUSTER_BY = ("sync_id", "sync_run_id")
EXPIRY_OPTION = "partition_expiration_days"
"""Target option: partition expiry of new tables until a cleanup sets the configured retention."""
STAGE_PREFIX = "_synclog_stage_"
STAGE_LIFETIME = timedelta(days=1)
"""A staging table left behind by a crash expires by itself."""
_DAY_MS = 86_400_000
_SWAP_ATTEMPTS = 5


class BigQueryTarget(SqlTarget):
    """Log tables in BigQuery datasets (`census`, `hightouch_audit`) of one project."""

    capabilities: ClassVar[Capabilities] = CAPABILITIES
    type_names: ClassVar[dict[ColumnType, str]] = {
        ColumnType.BIGINT: "INT64",
        ColumnType.INTEGER: "INT64",
        ColumnType.STRING: "STRING",
        ColumnType.JSON: "JSON",
        ColumnType.TIMESTAMP: "TIMESTAMP",
        ColumnType.BOOLEAN: "BOOL",
    }

    def __init__(self, url: TargetURL, settings: TargetSettings) -> None:
        super().__init__(url, settings)
        self.connection = ConnectionSettings.from_url(url)
        self.expiration_days = _expiry_days(settings.options.get(EXPIRY_OPTION, DEFAULT_RETENTION_DAYS))
        self.client = self.connection.client()
        self.project: str = self.client.project
        self.load_method: str | None = None
        """How the last Spark frame was staged: "connector" or "parquet"."""
        self._session: str | None = None
        self._datasets: set[str] = set()
        self._connector: bool | None = None

    # -- names ---------------------------------------------------------------------------------

    def relation(self, table: TableSpec, name: str | None = None) -> Relation:
        return replace(super().relation(table, name), quote="`")

    def quote(self, name: str) -> str:
        return Relation(schema="s", name="n", quote="`").quoted(self.capabilities.casefold.apply(name))

    def table_ref(self, relation: Relation) -> bigquery.TableReference:
        """The API's name for `relation` in this target's project."""
        dataset, table = relation.parts[-2:]
        return bigquery.DatasetReference(self.project, dataset).table(table)

    # -- statements ----------------------------------------------------------------------------

    def _run(
        self,
        sql: str,
        params: Sequence[Any] = (),
        *,
        prepared: Sequence[Any] = (),
        what: str = "query failed",
        **config: Any,
    ) -> bigquery.QueryJob:
        """Run `sql` with `?`-marked `params` (or `prepared` named parameters) and wait for it."""
        if params:
            sql, markers = named_markers(sql)
            if markers != len(params):
                raise TargetError(f"the query has {markers} ? markers but {len(params)} parameters")
        parameters = list(prepared) or query_parameters(params)
        job_config = bigquery.QueryJobConfig(query_parameters=parameters, **config)
        if self._session is not None:
            job_config.connection_properties = [bigquery.ConnectionProperty("session_id", self._session)]
        with translated_errors(what):
            job = self.client.query(sql, job_config=job_config)
            job.result()
        return job

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self._run(sql, params).num_dml_affected_rows or 0)

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with translated_errors("query failed"):
            return [tuple(row.values()) for row in self._run(sql, params).result()]

    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        with translated_errors("query failed"):
            return self._run(sql, params).to_arrow(create_bqstorage_client=False)

    def export_parquet(self, sql: str, params: Sequence[Any], path: str, schema: pa.Schema) -> None:
        """Stream the finished query's result page by page, one Parquet row group per page."""
        job = self._run(sql, params)
        with translated_errors("reading the result"):
            pages = job.result(page_size=export.CHUNK_ROWS).to_arrow_iterable()
            export.write_batches(path, schema, pages)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A BigQuery session holding one multi-statement transaction."""
        if self._session is not None:
            raise TargetError("BigQuery transactions do not nest")
        begin = self._run("BEGIN TRANSACTION", create_session=True)
        self._session = begin.session_info.session_id
        try:
            yield
            self._run("COMMIT TRANSACTION")
        except BaseException:
            with suppress(TargetError):
                self._run("ROLLBACK TRANSACTION")
            raise
        finally:
            with suppress(TargetError):
                self._run("CALL BQ.ABORT_SESSION()")
            self._session = None

    # -- DDL -----------------------------------------------------------------------------------

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        for table in tables:
            self._ensure_dataset(self.relation(table).parts[-2])
        super().ensure(tables)
        for table in tables:
            if table.time_column is not None:
                self._set_expiry(table, self.expiration_days, only_if_unset=True)

    def _ensure_dataset(self, name: str) -> None:
        if name in self._datasets:
            return
        dataset = bigquery.Dataset(bigquery.DatasetReference(self.project, name))
        if self.connection.location:
            dataset.location = self.connection.location
        with translated_errors(f"creating dataset {name}"):
            self.client.create_dataset(dataset, exists_ok=True)
        self._datasets.add(name)

    def create_table_sql(self, relation: Relation, table: TableSpec) -> str:
        sql = super().create_table_sql(relation, table)
        if table.time_column is None:
            return sql
        sql += f" PARTITION BY TIMESTAMP_TRUNC({self.quote(table.time_column)}, DAY)"
        clustered = [c for c in CLUSTER_BY if c in table.column_names()]
        if clustered:
            sql += " CLUSTER BY " + ", ".join(self.quote(c) for c in clustered)
        return sql

    def view_sql(self, view: Relation, relation: Relation, table: TableSpec) -> str:
        # A view's body names its table with the project, so it reads the same from any project.
        columns = ", ".join(self.quote(c) for c in table.column_names())
        source = f"{self.quote(self.project)}.{relation.render()}"
        return f"CREATE OR REPLACE VIEW {view.render()} AS SELECT {columns} FROM {source}"

    def json_text_sql(self, expression: str) -> str:
        """BigQuery casts only JSON strings to STRING; TO_JSON_STRING serialises any JSON value.

        A SQL NULL stays NULL (local-bigquery's TO_JSON_STRING turns it into the text `null`).
        """
        return f"IF({expression} IS NULL, NULL, TO_JSON_STRING({expression}))"

    def existing_columns(self, relation: Relation) -> list[str] | None:
        with translated_errors(f"reading {relation}"):
            try:
                found = self.client.get_table(self.table_ref(relation))
            except NotFound:
                return None
        return [field.name for field in found.schema]

    def _set_expiry(self, table: TableSpec, days: int, *, only_if_unset: bool = False) -> None:
        """Let `table`'s day partitions expire after `days` days (tables not partitioned are left)."""
        relation = self.relation(table)
        with translated_errors(f"setting the partition expiry of {relation}"):
            found = self.client.get_table(self.table_ref(relation))
            partitioning = found.time_partitioning
            wanted = max(days, 1) * _DAY_MS
            if partitioning is None or partitioning.expiration_ms == wanted:
                return
            if only_if_unset and partitioning.expiration_ms is not None:
                return
            partitioning.expiration_ms = wanted
            found.time_partitioning = partitioning
            self.client.update_table(found, ["time_partitioning"])

    # -- loading -------------------------------------------------------------------------------

    def replace_rows(self, table: TableSpec, rows: Rows) -> int:
        spec = self.table_spec(table)
        relation = self.relation(spec)
        if isinstance(rows, pa.Table) and rows.num_rows <= INLINE_ROWS:
            if rows.num_rows:
                self._swap(relation, "UNNEST(@rows)", spec, [inline_rows("rows", spec, rows)])
            return rows.num_rows
        stage = relation.with_name(f"{STAGE_PREFIX}{uuid.uuid4().hex}")
        ref = self.table_ref(stage)
        with translated_errors(f"loading {relation}"):
            staged = bigquery.Table(ref, schema=stage_schema(spec))
            staged.expires = datetime.now(UTC) + STAGE_LIFETIME
            self.client.create_table(staged)
            try:
                count = self._stage(ref, spec, rows)
                if count:
                    self._swap(relation, stage.render(), spec)
            finally:
                self.client.delete_table(ref, not_found_ok=True)
        return count

    def _stage(self, ref: bigquery.TableReference, table: TableSpec, rows: Rows) -> int:
        """Fill the staging table; return its row count."""
        if isinstance(rows, DataFrame) and self._connector_for(rows):
            self.load_method = "connector"
            write_with_connector(rows.select(*table.column_names()), str(ref), self.project)
            return int(self.client.get_table(ref).num_rows or 0)
        if isinstance(rows, DataFrame):
            self.load_method = "parquet"
        return load_parquet(self.client, ref, table, rows, self.settings.staging_dir)

    def _connector_for(self, frame: DataFrame) -> bool:
        if self.connection.endpoint is not None:
            return False  # the connector talks to Google only
        if self._connector is None:
            self._connector = connector_available(frame.sparkSession)
        return self._connector

    def _swap(self, relation: Relation, source: str, table: TableSpec, prepared: Sequence[Any] = ()) -> None:
        """Replace the rows whose key is in `source` (a table or UNNEST) by its rows, in one transaction."""
        columns = ", ".join(self.quote(c) for c in table.column_names())
        values = ", ".join(_parsed(f"S.{self.quote(c.name)}", c.type) for c in table.columns)
        matches = " AND ".join(f"S.{self.quote(k)} = T.{self.quote(k)}" for k in table.replace_key)
        target = relation.render()
        script = (
            "BEGIN TRANSACTION;\n"
            f"DELETE FROM {target} AS T WHERE EXISTS (SELECT 1 FROM {source} AS S WHERE {matches});\n"
            f"INSERT INTO {target} ({columns}) SELECT {values} FROM {source} AS S;\n"
            "COMMIT TRANSACTION;"
        )
        for attempt in range(1, _SWAP_ATTEMPTS + 1):
            try:
                self._run(script, prepared=prepared, what=f"loading {relation}")
                return
            except TargetError as exc:
                # BigQuery aborts one of two transactions that change the same table at once.
                if "concurrent update" not in str(exc) or attempt == _SWAP_ATTEMPTS:
                    raise
                time.sleep(2**attempt)

    # -- retention -----------------------------------------------------------------------------

    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        if table.time_column is None:
            return 0
        if cutoffs.now is not None:
            oldest = min([cutoffs.default, *cutoffs.per_sync.values()])
            self._set_expiry(table, math.ceil((cutoffs.now - oldest) / timedelta(days=1)))
        return super().delete_expired(table, cutoffs)

    def close(self) -> None:
        self.client.close()


def _parsed(column: str, type_: ColumnType) -> str:
    """A staged column as the log table stores it: JSON text parsed (large numbers rounded)."""
    if type_ is ColumnType.JSON:
        return f"PARSE_JSON({column}, wide_number_mode => 'round')"
    return column


def _expiry_days(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"option {EXPIRY_OPTION} must be a whole number of days >= 1, got {value!r}")
    return value
