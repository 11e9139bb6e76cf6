"""The built-in lake target: the lake layout's files in a local folder or an S3 bucket.

    lake:///relative/folder          lake:////absolute/folder
    lake+s3://BUCKET/PREFIX

S3 settings come from the target's `options` in synclog.toml (`endpoint_url`, `region`,
`access_key_id`, `secret_access_key`, `session_token`), from the URL (`lake+s3://KEY:SECRET@…`,
the secret best through `password_env`), or from the environment (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION); without keys,
pyarrow's AWS default credential chain applies.

Every file is written by a Spark executor, one file per (org, sync, run, batch, batch type) and
one per fact (org, id), each published whole (see `synclog.storage.files.published`); a replayed
batch replaces its files and removes the batch's files of batch types it no longer has. Since a
file's path holds its table's whole key, no file is read and merged: concurrent writers of
different runs or syncs touch different files, and two writers of one fact publish the same
object's description (the last one stays).
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.errors import PythonException

from synclog.capabilities import Capabilities, Casefold, Staging
from synclog.errors import ConfigError, TargetError
from synclog.naming import LineageDataset, Relation
from synclog.spark import require_reachable
from synclog.storage.location import Location
from synclog.storage.sweep import sweep_scratch
from synclog.targets.base import Cutoffs, Target, TargetSettings
from synclog.targets.keys import Keys
from synclog.targets.lake_files import GroupWriter, LakeFiles, PathTemplate
from synclog.targets.rows import Rows
from synclog.targets.tables import ColumnType, TableSpec
from synclog.urls import TargetURL

if TYPE_CHECKING:
    import duckdb

CAPABILITIES = Capabilities(
    json_type="STRING",
    casefold=Casefold.NONE,
    max_identifier_length=255,
    transactions=False,
    views=False,
    staging=Staging.EXECUTORS,
    layouts=("lake",),
)


class LakeTarget(Target):
    """Parquet and JSON files under a folder or an S3 prefix, placed by `files`' path templates."""

    def __init__(
        self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities, files: LakeFiles
    ) -> None:
        super().__init__(url, settings, capabilities)
        self.files = files
        self.location = lake_location(url, settings.options)
        self.fs = self.location.filesystem()
        self._duckdb: duckdb.DuckDBPyConnection | None = None

    def lineage_dataset(self, relation: Relation) -> LineageDataset:
        """The OpenLineage naming spec's file rows: a table is the folder its files go under, in the
        lake's folder (`file` and the folder's absolute path) or bucket (`s3://{bucket}` and the
        key): `…/sync_tracking_datasets` holds the records and run metadata, `…/metadata` the objects."""
        templates = {table.name: text for table, text in self.files.templates.items()}
        if relation.name not in templates:
            raise TargetError(f"the lake holds only the lake layout's files, not {relation}")
        folder = self.location.path(templates[relation.name].split("/", 1)[0])
        if self.location.local:
            return LineageDataset("file", folder)
        bucket, _, key = folder.partition("/")
        return LineageDataset(f"{self.location.scheme}://{bucket}", key)

    def uri(self, relative: str = "") -> str:
        """Where readers outside synclog (DuckDB, Spark, …) find `relative` inside the lake."""
        return self.location.uri(relative)

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        for table in tables:
            self._template(table)
        with _storage_errors(self.location):
            if self.location.local:
                self.fs.create_dir(self.location.root, recursive=True)
                return
            bucket = self.location.root.split("/")[0]
            if self.fs.get_file_info(bucket).type == pafs.FileType.NotFound:
                raise TargetError(f"{self.url}: the bucket {bucket!r} does not exist")

    def replace_rows(self, table: TableSpec, rows: Rows, keys: Keys) -> int:
        """Write one file per template group from the executors; a group's file is replaced whole.

        A file's path names its keys (`files`' templates), so the write reads nothing of the lake:
        the files of the groups the rows hold are replaced, whatever else `keys` names (no layout
        replaces a lake file by no rows). Files of a replaced batch under batch types it no
        longer has are removed.
        """
        template = self._template(table)
        frame = rows.frame()
        require_reachable(self.location, frame.sparkSession, str(self.url))
        json_columns = frozenset(c.name for c in table.columns if c.type is ColumnType.JSON)
        writer = GroupWriter(self.location, template.text, table.arrow_schema(), json_columns)

        def write(group: pa.Table) -> pa.Table:  # Spark counts a bound method's `self` as an argument
            return writer.write(group)

        with _storage_errors(self.location):
            done = frame.groupBy(*template.fields).applyInArrow(write, GroupWriter.RESULT).collect()
            self._remove_stale(table, template, {row["path"] for row in done})
            for folder in sorted({posixpath.dirname(row["path"]) for row in done}):
                sweep_scratch(self.fs, self.location.path(folder))  # a killed writer's unpublished files
        return sum(row["rows"] for row in done)

    def _remove_stale(self, table: TableSpec, template: PathTemplate, written: set[str]) -> None:
        """Delete the files a replaced key had under other values of its non-key fields (batch types).

        The other names follow from the template and the fields' known values: nothing is listed.
        """
        for path in written:
            values = template.parse(path) or {}
            for name in set(template.fields) - set(table.replace_key):
                for other in self.files.field_values[name]:
                    stale = template.render({**values, name: other})
                    if stale not in written:
                        with contextlib.suppress(FileNotFoundError):
                            self.fs.delete_file(self.location.path(stale))

    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        """Delete whole run folders whose newest batch started before their sync's cut-off."""
        if table.time_column is None or table not in self.files.templates:
            return 0
        template = self._template(table)
        folder_template = PathTemplate(posixpath.dirname(template.text))
        top = self.location.path(template.text.split("/")[0])
        runs: dict[str, list[pafs.FileInfo]] = {}
        with _storage_errors(self.location):
            selector = pafs.FileSelector(top, recursive=True, allow_not_found=True)
            for info in self.fs.get_file_info(selector):
                folder = posixpath.dirname(self.location.relative(info.path))
                if info.is_file and folder_template.parse(folder) is not None:
                    runs.setdefault(folder, []).append(info)
            deleted = 0
            for folder, files in sorted(runs.items()):
                sync_id = int((folder_template.parse(folder) or {})["sync_id"])
                cutoff = cutoffs.per_sync.get(sync_id, cutoffs.default)
                batches = [f for f in files if template.parse(self.location.relative(f.path))]
                newest, rows = self._newest(batches, table.time_column)
                newest = newest or max(f.mtime for f in files)
                if newest < cutoff:
                    self.fs.delete_dir(self.location.path(folder))
                    deleted += rows
        return deleted

    def _newest(self, files: list[pafs.FileInfo], column: str) -> tuple[datetime | None, int]:
        """The latest `column` value across `files` and their total row count."""
        newest: datetime | None = None
        rows = 0
        for info in files:
            times = pq.read_table(info.path, columns=[column], filesystem=self.fs).column(column)
            rows += len(times)
            latest = pc.max(times).as_py()
            if latest is not None and (newest is None or latest > newest):
                newest = latest
        return newest, rows

    def existing_tables(self, tables: Sequence[TableSpec]) -> list[TableSpec]:
        with _storage_errors(self.location):
            return [
                t
                for t in tables
                if t in self.files.templates
                and self.fs.get_file_info(self.location.path(self.files.templates[t].split("/")[0])).type
                != pafs.FileType.NotFound
            ]

    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        """Run `sql` in an in-memory DuckDB that reads this lake's files (see `uri`).

        DuckDB reads s3:// URLs through pyarrow's S3 filesystem, wrapped for fsspec (the
        httpfs extension is not needed).
        """
        import duckdb  # only where the lake is read: a process that only names it never pays for it

        try:
            return self._connection().sql(sql, params=list(params) or None).to_arrow_table()
        except duckdb.Error as exc:
            raise TargetError(f"lake query failed: {str(exc).splitlines()[0]}") from None

    def _connection(self) -> duckdb.DuckDBPyConnection:
        import duckdb

        if self._duckdb is None:
            self._duckdb = duckdb.connect()
            self._duckdb.execute("SET TimeZone = 'UTC'")
            if not self.location.local:
                self._duckdb.register_filesystem(_s3_for_duckdb(self.fs))
        return self._duckdb

    def _template(self, table: TableSpec) -> PathTemplate:
        try:
            return PathTemplate(self.files.templates[table])
        except KeyError:
            raise TargetError(f"the lake holds only the lake layout's files, not {table}") from None

    def close(self) -> None:
        if self._duckdb is not None:
            self._duckdb.close()
            self._duckdb = None


def _s3_for_duckdb(fs: pafs.FileSystem) -> Any:
    """pyarrow's S3 filesystem as fsspec's `s3` protocol, which DuckDB reads s3:// URLs through
    (fsspec is imported only for a lake on S3)."""
    from fsspec.implementations.arrow import ArrowFSWrapper

    class S3ForDuckDB(ArrowFSWrapper):
        protocol = "s3"

    return S3ForDuckDB(fs)


def lake_location(url: TargetURL, options: Mapping[str, Any]) -> Location:
    """Where `lake:///folder` or `lake+s3://bucket/prefix` points, with S3 settings resolved."""
    if url.scheme == "lake":
        if url.host:
            raise ConfigError(
                f"{url}: a lake folder URL has no host; use lake:///relative/folder or lake:////absolute/folder"
            )
        folder = url.path[1:] if url.path.startswith("/") else url.path
        if not folder:
            raise ConfigError(f"{url}: name a folder, e.g. lake:///synclog-lake")
        return Location.parse(folder, options, what=str(url))
    if not url.host:
        raise ConfigError(f"{url}: name a bucket, e.g. lake+s3://my-bucket/synclog")
    return Location.object_store(
        "s3", url.host, url.path, options, access_key=url.user, secret_key=url.password
    )


@contextmanager
def _storage_errors(location: Location) -> Iterator[None]:
    """Storage failures, on the driver (OSError) or an executor, as one-line TargetErrors."""
    try:
        yield
    except OSError as exc:
        raise TargetError(f"lake {location.uri()}: {str(exc).splitlines()[0]}") from None
    except PythonException as exc:  # the executor's traceback ends with "SomeError: message"
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise TargetError(f"lake {location.uri()}: an executor failed: {lines[-1].strip()}") from None
