"""Parquet files written and read by the Spark executors themselves, through pyarrow filesystems.

Each task writes its own files under a folder the driver chose, with deterministic names
(`<folder>/<key>-p<partition>.parquet`, or `.jsonl` for JSON lines: a retried attempt of a task
overwrites its own file),
and returns one small row per file: its key, path and row count. The driver turns those rows
into a `Manifest`; a job that fails has its folder removed. Reads go the other way: a
manifest's files are spread over tasks, each reading its files and yielding their batches.
Nothing here touches Spark's own file I/O, so no Hadoop connector jar is needed for S3 or GCS,
and nothing uses the SparkContext, so it works through Spark Connect as well.
"""

from __future__ import annotations

import contextlib
import posixpath
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from synclog.capabilities import FileFormat
from synclog.storage import json_lines
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest, StoredFile
from synclog.storage.owners import tagged

RESULT_SCHEMA = pa.schema([("key", pa.string()), ("path", pa.string()), ("rows", pa.int64())])
RESULT = from_arrow_schema(RESULT_SCHEMA)
"""What a writing task returns per file it wrote: the split key, the path, the rows."""
READ_TASKS = 64
"""At most this many tasks read a manifest (each reads its share of the files)."""
UNREADABLE = "synclog: unreadable file:"
"""Starts the message of an executor that could not read a manifest's file (`unreadable_file`)."""


@contextlib.contextmanager
def published(fs: pafs.FileSystem, path: str, *, whole: bool = True) -> Iterator[Any]:
    """An output stream whose file appears at `path` when the block ends without error.

    With `whole` (the default) the bytes go to a hidden temporary name beside `path`
    (`.NAME.<uuid>@<owner>.tmp`, which matches no `*.parquet` glob) that is renamed into place: readers
    see the old file or the new one, never a part of one, also when the block fails (on a local
    disk the rename is rename(2); on an object store, a server-side copy and a delete). Files
    that only a manifest makes visible need not pay for that: `whole=False` writes `path` itself.
    """
    local = isinstance(fs, pafs.LocalFileSystem)
    folder, name = posixpath.split(path)
    scratch = posixpath.join(folder, f".{name}.{tagged(uuid.uuid4().hex)}.tmp") if whole else path
    if local:
        fs.create_dir(folder, recursive=True)
    try:
        with fs.open_output_stream(scratch) as stream:
            yield stream
        if scratch != path:
            fs.move(scratch, path)
    except BaseException:
        if scratch != path:
            with contextlib.suppress(OSError):
                fs.delete_file(scratch)
        raise


def publish(fs: pafs.FileSystem, path: str, write: Callable[[Any], None]) -> None:
    """Make `path` appear whole: `write(stream)` fills it (see `published`)."""
    with published(fs, path) as stream:
        write(stream)


def remove(location: Location, folder: str) -> None:
    """Delete `folder` (inside `location`) and everything in it; nothing if it is not there."""
    fs = location.filesystem()
    with contextlib.suppress(FileNotFoundError):
        fs.delete_dir(location.path(folder))


def by_name(batch: pa.RecordBatch | pa.Table, schema: pa.Schema) -> pa.RecordBatch | pa.Table:
    """`batch` with exactly `schema`'s columns: extra ones dropped, missing ones NULL, types cast
    (a finer timestamp is truncated to the wanted unit)."""
    names = batch.schema.names
    columns = [
        _cast(batch.column(f.name), f.type) if f.name in names else pa.nulls(batch.num_rows, f.type)
        for f in schema
    ]
    if isinstance(batch, pa.Table):
        return pa.Table.from_arrays(columns, schema=schema)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _cast(column: pa.Array | pa.ChunkedArray, type_: pa.DataType) -> pa.Array | pa.ChunkedArray:
    truncates = pa.types.is_timestamp(type_) and pa.types.is_timestamp(column.type)
    return pc.cast(column, type_, safe=not truncates)


class PartFiles:
    """The files one task writes: one file per key (Parquet by default), streamed, published when closed."""

    def __init__(
        self,
        location: Location,
        folder: str,
        schema: pa.Schema,
        part: int,
        file_format: FileFormat = FileFormat.PARQUET,
    ) -> None:
        self.location, self.folder, self.schema, self.part = location, folder, schema, part
        self.file_format = file_format
        self._fs = location.filesystem()
        self._files = contextlib.ExitStack()
        self._writers: dict[str, tuple[str, Callable[[pa.RecordBatch], Any]]] = {}
        self._rows: dict[str, int] = {}

    def write(self, key: str, batch: pa.RecordBatch) -> None:
        """Append `batch` (conformed to the schema by name) to the file of `key`."""
        if key not in self._writers:
            path = posixpath.join(self.folder, f"{key}-p{self.part:05d}.{self.file_format.value}")
            # Only a manifest makes these files visible: a failed task's file is never read.
            stream = self._files.enter_context(published(self._fs, self.location.path(path), whole=False))
            self._writers[key] = (path, self._writer(stream))
            self._rows[key] = 0
        self._writers[key][1](by_name(batch, self.schema))
        self._rows[key] += batch.num_rows

    def _writer(self, stream: Any) -> Callable[[pa.RecordBatch], Any]:
        if self.file_format is FileFormat.JSON_LINES:
            return lambda batch: stream.write(json_lines.encode(batch))
        parquet = self._files.enter_context(pq.ParquetWriter(stream, self.schema))
        return lambda batch: parquet.write_batch(batch)

    def close(self) -> list[tuple[str, str, int]]:
        """Publish every file; (key, path, rows) of each."""
        self._files.close()
        return [(key, path, self._rows[key]) for key, (path, _) in self._writers.items()]

    def abort(self) -> None:
        """Drop the unfinished files (their temporary names on a local disk)."""
        with contextlib.suppress(BaseException):
            self._files.__exit__(RuntimeError, RuntimeError("aborted"), None)


def task_number() -> int:
    """The Spark partition this code runs for (0 outside a task)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def write_frame(
    frame: DataFrame,
    location: Location,
    folder: str,
    schema: pa.Schema,
    file_format: FileFormat = FileFormat.PARQUET,
) -> Manifest:
    """Have the executors write `frame` (`schema`'s columns) as files under `folder` (Parquet by default).

    One file per task that has rows; only the files' paths and row counts reach the driver.
    """

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = PartFiles(location, folder, schema, task_number(), file_format)
        try:
            for batch in batches:
                if batch.num_rows:
                    files.write("part", batch)
        except BaseException:
            files.abort()
            raise
        written = files.close()
        yield pa.RecordBatch.from_pylist(
            [{"key": key, "path": path, "rows": rows} for key, path, rows in written], schema=RESULT_SCHEMA
        )

    try:
        done = frame.select(*schema.names).mapInArrow(write, RESULT).collect()
    except BaseException:
        remove(location, folder)
        raise
    return Manifest(location, tuple(StoredFile(row["path"], row["rows"]) for row in done))


def unreadable_file(exc: BaseException) -> str | None:
    """`path: reason` when `exc` (raised by a Spark job) says an executor could not read a file."""
    text = str(exc)
    at = text.find(UNREADABLE)
    if at < 0:
        return None
    return text[at + len(UNREADABLE) :].strip().splitlines()[0]


def read_frame(spark: SparkSession, manifest: Manifest, schema: T.StructType) -> DataFrame:
    """A Spark frame of `manifest`'s files with `schema`, read by the executors (lazily)."""
    paths, location = manifest.paths(), manifest.location
    if not paths:
        return spark.createDataFrame([], schema)
    arrow = to_arrow_schema(schema, timezone="UTC")

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        fs = location.filesystem()
        for ids in batches:
            for number in ids.column(0).to_pylist():
                try:
                    with fs.open_input_file(paths[number]) as handle:
                        parquet = pq.ParquetFile(handle)
                        present = [name for name in arrow.names if name in parquet.schema_arrow.names]
                        for batch in parquet.iter_batches(columns=present):
                            yield by_name(batch, arrow)
                except (OSError, pa.ArrowException) as exc:
                    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    raise OSError(f"{UNREADABLE} {paths[number]}: {detail}") from None

    tasks = min(len(paths), READ_TASKS)
    return spark.range(0, len(paths), 1, numPartitions=tasks).mapInArrow(read, schema)
