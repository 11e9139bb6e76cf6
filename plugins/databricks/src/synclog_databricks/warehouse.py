"""The out-of-cluster target: a Databricks SQL warehouse reached with `databricks-sql-connector`.

    databricks://HOST?http_path=/sql/1.0/warehouses/ID            token from $DATABRICKS_TOKEN
    databricks://token:TOKEN@HOST?http_path=…&catalog=census      (better: password_env)

For a load, the core stages the rows as Parquet files under `storage` (the executors write
them) and `COPY INTO` fills a staging table from exactly those files: straight from `storage`
where the warehouse reads it (S3, GCS, a volume: `sources.py`), else after a `PUT … INTO
'/Volumes/<catalog>/<schema>/<volume>/…'` of each through the connector (a local folder: the
driver reads each file once). The core's MERGE swaps; the stage and the files are removed.
Only the connector's connection and operational errors are outages; an error of the warehouse
about our SQL is not.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import databricks.sql
import pyarrow as pa
from databricks.sql.exc import OperationalError

from synclog.plugin_api import (
    Capabilities,
    ConfigError,
    DbApiClient,
    FileLoader,
    LineageDataset,
    Manifest,
    Params,
    Relation,
    TableSpec,
    TargetSettings,
    TargetURL,
    check_name,
    lineage_namespace,
    outages,
)
from synclog_databricks import sources
from synclog_databricks.base import DatabricksDialect, DatabricksTarget
from synclog_databricks.options import catalog, with_json_type

OPTIONS = ("http_path", "catalog", "volume", "json", "use_sea", "scheme", "retry_seconds", *sources.OPTIONS)
TOKEN_ENV = "DATABRICKS_TOKEN"
DEFAULT_VOLUME = "synclog_staging"
RETRY_SECONDS = 120
"""How long the connector retries a request (it would for 15 minutes, waiting out a cluster's start):
a warehouse that does not answer by then is an outage, and the batches wait for `flush`."""
COPY_FILES = 1000
"""COPY INTO names at most this many files."""
OUTAGES = (OperationalError,)
"""The warehouse cannot be reached, refused the token, timed out, or an upload failed (the
connector's RequestError and its kin): the write waits for `flush`. ServerOperationError (the
warehouse refused a statement) is not among them."""


def warehouse_capabilities(declared: Capabilities, url: TargetURL, settings: TargetSettings) -> Capabilities:
    """The warehouse's capabilities with the `json` option's JSON type."""
    return with_json_type(declared, url, settings.options_for(url, OPTIONS))


class WarehouseClient(DbApiClient):
    """The SQL connector: DML and COPY INTO answer with a row of affected rows, results come as
    Arrow, and every statement is a transaction of its own (the swap is one MERGE)."""

    def affected_rows(self, cursor: Any) -> int:
        if [d[0] for d in cursor.description or ()][:1] != ["num_affected_rows"]:
            return 0
        row = cursor.fetchone()
        return int(row[0] or 0) if row is not None else 0

    def query_bound(self, sql: str, params: Params) -> pa.Table:
        """The result in Arrow; an empty one keeps its column names (the connector's Statement
        Execution backend gives an empty result no columns)."""
        with self.cursor(sql, params) as cursor:
            table = cursor.fetchall_arrow()
            if table.num_columns or not cursor.description:
                return table
            return pa.table({d[0]: pa.array([], pa.null()) for d in cursor.description})

    def batches_bound(self, sql: str, params: Params, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """The result `chunk_rows` rows at a time, one record batch per chunk."""
        with self.cursor(sql, params) as cursor:
            while (chunk := cursor.fetchmany_arrow(self.chunk_rows)).num_rows:
                yield from chunk.combine_chunks().to_batches()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A warehouse runs each statement in a transaction of its own: the swap is one MERGE."""
        yield


class WarehouseTarget(DatabricksTarget, FileLoader):
    """Delta tables written through a SQL warehouse."""

    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        given = settings.options_for(url, OPTIONS)
        if not url.host or url.path.strip("/") or "http_path" not in given:
            raise ConfigError(f"{url}: expected databricks://HOST?http_path=/sql/1.0/warehouses/ID")
        token = url.password or os.environ.get(TOKEN_ENV)
        if not token:
            raise ConfigError(f"{url}: no access token: set {TOKEN_ENV}, or password_env in synclog.toml")
        scheme = given.get("scheme", "https").lower()
        if scheme not in ("https", "http"):
            raise ConfigError(f"{url}: scheme must be https or http, not {scheme!r}")
        if set(url.query) & set(sources.OPTIONS):
            raise ConfigError(f"{url}: give S3 keys in the target's options, not in the URL")
        chosen = catalog(url, settings, given.get("catalog"))
        self.access = sources.CopyAccess.from_options(given, settings.storage)
        self.volume = check_name(given.get("volume", DEFAULT_VOLUME), what="volume", max_length=255).lower()
        local = [settings.storage.root] if settings.storage.local else []  # what PUT may read
        kwargs: dict[str, Any] = {
            "server_hostname": url.host if scheme == "https" else f"http://{url.host}",
            "http_path": given["http_path"],
            "access_token": token,
            "catalog": chosen,
            "use_sea": given.get("use_sea", "false").lower() == "true",
            "staging_allowed_local_path": local,
            "enable_telemetry": False,
            "user_agent_entry": "synclog",
        }
        try:
            kwargs["_retry_stop_after_attempts_duration"] = float(given.get("retry_seconds", RETRY_SECONDS))
        except ValueError:
            raise ConfigError(f"{url}: retry_seconds must be a number of seconds") from None
        if url.port:
            kwargs["_port"] = (
                url.port
            )  # the connector's port setting (private, like the retry's); 443 by default
        with outages(OUTAGES, f"cannot connect to {url}"):
            connection = databricks.sql.connect(**kwargs)
        client = WarehouseClient(connection, OUTAGES, str(url), DatabricksDialect(capabilities))
        super().__init__(url, settings, capabilities, chosen, client)
        self._volumes: set[str] = set()
        self._uploads: dict[str, list[str]] = {}

    def lineage_dataset(self, relation: Relation) -> LineageDataset:
        """`databricks://{workspace host}` and `{catalog}.{schema}.{table}`: the form of the
        official openlineage-dbt's Databricks adapter (the naming spec has no Databricks row)."""
        return LineageDataset(lineage_namespace("databricks", self.url.host, self.url.port), str(relation))

    # -- loading: COPY INTO the stage from storage, or from files PUT into a volume ------------

    def load_files(self, stage: Relation, table: TableSpec, manifest: Manifest) -> int:
        """COPY INTO the stage exactly the manifest's files: where the executors wrote them when
        the warehouse reads `storage`, else after uploading each into the schema's volume."""
        if sources.reads_storage(self.storage):
            folder = posixpath.commonpath([posixpath.dirname(f.path) for f in manifest.files])
            names = [posixpath.relpath(f.path, folder) for f in manifest.files]
            return self._copy(stage, self.storage.uri(folder), names, self.access)
        folder = f"{self._volume(stage)}/{stage.name}"
        uploads = self._uploads.setdefault(stage.name, [])
        names = []
        for number, path in enumerate(manifest.paths()):
            name = f"part-{number:05d}.parquet"
            self.client.execute(
                f"PUT {sources.literal(path)} INTO {sources.literal(f'{folder}/{name}')} OVERWRITE"
            )
            uploads.append(f"{folder}/{name}")
            names.append(name)
        return self._copy(stage, folder, names, sources.CopyAccess())

    def _copy(self, stage: Relation, folder: str, names: list[str], access: sources.CopyAccess) -> int:
        return sum(
            self.client.execute(sources.copy_sql(stage, folder, names[start : start + COPY_FILES], access))
            for start in range(0, len(names), COPY_FILES)
        )

    def drop_stage(self, stage: Relation) -> None:
        """Remove the files uploaded for the stage, then drop its table: a stage's files never
        outlive its table, so a dead writer's are removed with its table (`sweep_stages`)."""
        uploads = self._uploads.pop(stage.name, None)
        if uploads is None:  # not loaded by this process: a dead writer's, or a failed load's
            uploads = self._uploaded(stage)
        for path in uploads:
            self.client.execute(f"REMOVE {sources.literal(path)}")
        super().drop_stage(stage)

    def _uploaded(self, stage: Relation) -> list[str]:
        """The files in the stage's folder of the volume (`LIST`, which names a folder `name/`);
        none where this target does not upload (`storage` the warehouse reads)."""
        if sources.reads_storage(self.storage):
            return []
        volume = self._volume(stage)
        if stage.name not in self._listed(volume):
            return []
        folder = f"{volume}/{stage.name}"
        return [f"{folder}/{name}" for name in self._listed(folder)]

    def _listed(self, folder: str) -> list[str]:
        return [str(row[1]).rstrip("/") for row in self.client.fetch(f"LIST {sources.literal(folder)}")]

    def _volume(self, stage: Relation) -> str:
        """`/Volumes/<catalog>/<schema>/<volume>` of the stage's schema, created on first use."""
        catalog_name, schema, _ = stage.parts
        path = posixpath.join("/Volumes", catalog_name, schema, self.volume)
        if path not in self._volumes:
            volume = stage.with_name(self.volume).render()
            self.client.execute(f"CREATE VOLUME IF NOT EXISTS {volume}")
            self._volumes.add(path)
        return path
