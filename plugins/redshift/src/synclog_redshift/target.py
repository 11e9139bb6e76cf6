"""The Redshift target: one COPY of staged JSON lines from S3 into a temporary stage, then the core's swap."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from synclog import plugin_api as api
from synclog_redshift import statements
from synclog_redshift.connection import OUTAGES, ConnectionSettings, S3Access, cluster_authority

COPY_MANIFEST = "redshift.manifest"
"""Written beside the staged files (the core removes their folder after the load)."""


@dataclass(frozen=True)
class TemporaryTable(api.Relation):
    """A session's temporary table: Redshift names it without a schema."""

    @property
    def parts(self) -> tuple[str, ...]:
        return (self.casefold.apply(self.name),)


class RedshiftDialect(api.SqlDialect):
    """`%s` markers, VARCHAR(65535) and TIMESTAMPTZ; tables with a time column sorted by it, SUPER
    read back as itself."""

    placeholder = "%s"
    temporary_stages = True
    type_names = {
        **api.SqlDialect.type_names,
        api.ColumnType.STRING: "VARCHAR(65535)",
        api.ColumnType.TIMESTAMP: "TIMESTAMPTZ",
    }

    def table_options(self, table: api.TableSpec) -> str:
        """Tables with a time column are sorted by it: retention's DELETE and time filters skip blocks."""
        return "" if table.time_column is None else f"SORTKEY ({self.quote(table.time_column)})"

    def json_text_sql(self, expression: str) -> str:
        """The SUPER value itself: UNLOAD writes SUPER as JSON text (a cast to VARCHAR would not)."""
        return f"CAST({expression} AS SUPER)"


class RedshiftClient(api.DbApiClient):
    """redshift_connector; closing a connection the server already dropped is no error."""

    def close(self) -> None:
        with suppress(*OUTAGES):
            self.connection.close()


class RedshiftTarget(api.SqlTarget, api.FileLoader):
    """A Redshift database; staging and read-backs go through `storage` on S3."""

    def __init__(
        self, url: api.TargetURL, settings: api.TargetSettings, capabilities: api.Capabilities
    ) -> None:
        require_s3(settings.storage)
        self.access = S3Access.resolve(settings.options, settings.storage)
        self.connection_settings = ConnectionSettings.from_url(url)
        connection = self.connection_settings.connect(str(url))
        client = RedshiftClient(connection, OUTAGES, str(url), RedshiftDialect(capabilities))
        super().__init__(url, settings, capabilities, client)

    def lineage_dataset(self, relation: api.Relation) -> api.LineageDataset:
        """The OpenLineage naming spec's Redshift row: `redshift://{cluster}.{region}:{port}` (the
        host as it is where it is no cluster endpoint) and `{database}.{schema}.{table}`."""
        where = self.connection_settings.kwargs
        namespace = api.lineage_namespace("redshift", cluster_authority(where["host"]), where["port"])
        return api.LineageDataset(namespace, f"{where['database']}.{relation}")

    # -- DDL -----------------------------------------------------------------------------------

    def ensure(self, tables: Sequence[api.TableSpec]) -> None:
        """The core's DDL, then each public view where its columns differ from its table's.

        Redshift's CREATE OR REPLACE VIEW takes only the identical set of columns, so a view
        gains the columns its table gained by a DROP and a CREATE in one transaction.
        """
        super().ensure([replace(t, view=None) for t in tables])
        for given in tables:
            table = self.table_spec(given)
            if table.view is None or not self.capabilities.views:
                continue
            view = self.relation(table, table.view)
            current = self.existing_columns(view)
            if current is not None and [c.lower() for c in current] == table.column_names():
                continue
            with self.client.transaction():
                if current is not None:
                    self.client.execute(f"DROP VIEW {view.render()}")
                self.client.execute(self.view_sql(view, self.relation(table), table))

    # -- the load: one COPY into a temporary stage ---------------------------------------------

    def stage_relation(self, relation: api.Relation) -> api.Relation:
        stage = super().stage_relation(relation)
        return TemporaryTable(schema=stage.schema, name=stage.name, casefold=stage.casefold)

    def stage_schema(self, table: api.TableSpec) -> pa.Schema:
        """JSON columns as Arrow's JSON type: the staged JSON lines embed them as values, which the
        COPY loads into SUPER as objects (JSON text would load as a SUPER string)."""
        return pa.schema(
            pa.field(c.name, pa.json_() if c.type is api.ColumnType.JSON else c.type.arrow())
            for c in table.columns
        )

    def load_files(self, stage: api.Relation, table: api.TableSpec, manifest: api.Manifest) -> int:
        """One COPY of every staged file, through a manifest written beside them with their sizes."""
        fs = self.storage.filesystem()
        sizes = []
        for path, info in zip(manifest.paths(), fs.get_file_info(manifest.paths()), strict=True):
            if info.type != pafs.FileType.File:
                raise api.TargetError(f"staged file {path} is missing")
            sizes.append(info.size)
        path = posixpath.join(posixpath.dirname(manifest.files[0].path), COPY_MANIFEST)
        with api.published(fs, self.storage.path(path), whole=False) as stream:  # only this COPY reads it
            stream.write(statements.copy_manifest(manifest.uris(), sizes))
        self.client.execute(statements.copy_sql(stage.render(), self.storage.uri(path), self.access))
        return manifest.rows

    def lock_statement(self, relation: api.Relation) -> api.Statement:
        """Concurrent swaps into one table would fail Redshift's serializable isolation: LOCK makes
        them take turns (readers of the table wait for the swap's commit)."""
        return f"LOCK {relation.render()}", ()

    # -- read-back: UNLOAD to storage ----------------------------------------------------------

    def export(self, sql: str, params: Sequence[Any], schema: pa.Schema, folder: str) -> api.Manifest:
        """UNLOAD the query as Parquet under `folder`, read through its manifest.

        Redshift picks the files' types: TIMESTAMPTZ as a timestamp in UTC, SUPER as JSON text;
        readers cast them to `schema`'s. The parameters (sync ids) are inlined as integers.
        """
        query = statements.inline(sql, params, self.dialect.placeholder)
        prefix = self.storage.uri(folder) + "/"
        self.client.execute(statements.unload_sql(query, prefix, self.access))
        return statements.unloaded(self.storage, folder)


def require_s3(storage: api.Location) -> None:
    """Redshift's COPY and UNLOAD reach S3 only: refuse any other storage in one line."""
    if storage.scheme != "s3":
        raise api.ConfigError(
            f"storage: the Redshift target loads and reads back through S3; set storage to "
            f"s3://bucket/prefix (not {storage})"
        )
