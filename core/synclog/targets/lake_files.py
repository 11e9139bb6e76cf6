"""A lake's files: where the lake lives (folder or S3), path templates, and atomic writes.

Everything here runs on the driver and on Spark executors alike: a `LakeLocation` is plain
data that pickles, and each process builds its own pyarrow filesystem from it.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
import string
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class LakeLocation:
    """A local folder (absolute path), or `bucket/prefix` on S3 or an S3-compatible store."""

    root: str
    s3: bool = False
    endpoint_url: str | None = None
    region: str = DEFAULT_REGION
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    def filesystem(self) -> pafs.FileSystem:
        """A pyarrow filesystem for this lake (without keys: the AWS default credential chain)."""
        if not self.s3:
            return pafs.LocalFileSystem()
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            session_token=self.session_token,
            region=self.region,
            endpoint_override=self.endpoint_url,
        )

    def path(self, relative: str = "") -> str:
        """`relative` (a path inside the lake) as the filesystem names it."""
        return posixpath.join(self.root, relative) if relative else self.root

    def relative(self, path: str) -> str:
        """The inverse of `path`."""
        return posixpath.relpath(path, self.root)

    def uri(self, relative: str = "") -> str:
        """`relative` as readers outside synclog name it: a local path, or an s3:// URL."""
        return ("s3://" if self.s3 else "") + self.path(relative)


@dataclass(frozen=True)
class PathTemplate:
    """A file path inside the lake with `{column}` fields, e.g. `metadata/{org_id}/destinations.parquet`."""

    text: str

    @property
    def fields(self) -> tuple[str, ...]:
        """The field names, in order."""
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.text) if name)

    def render(self, values: Mapping[str, Any]) -> str:
        """The path for these field values."""
        return self.text.format(**{name: values[name] for name in self.fields})

    def pattern(self, fixed: Mapping[str, Any] | None = None) -> re.Pattern[str]:
        """A regex matching the paths of this template; `fixed` fields must have these values."""
        fixed = fixed or {}
        regex = ""
        for literal, name, _, _ in string.Formatter().parse(self.text):
            regex += re.escape(literal)
            if name:
                regex += re.escape(str(fixed[name])) if name in fixed else f"(?P<{name}>[^/]+)"
        return re.compile(regex)

    def parse(self, path: str) -> dict[str, str] | None:
        """The field values of `path`, or None when `path` is not one of the template's."""
        found = self.pattern().fullmatch(path)
        return found.groupdict() if found else None

    @property
    def suffix(self) -> str:
        """The file type: `.parquet` or `.json`."""
        return posixpath.splitext(self.text)[1]


def conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """`rows` with exactly `schema`'s columns: extra ones dropped, missing ones NULL, types cast."""
    columns = [
        rows.column(f.name).cast(f.type) if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def publish(fs: pafs.FileSystem, path: str, write: Any) -> None:
    """Make `path` appear whole: `write(stream)` fills a hidden temporary file, which is then renamed.

    The temporary name (`.NAME.<uuid>.tmp`, beside the target) matches no `*.parquet` glob. On a
    local disk the rename is rename(2); on S3 it is a server-side copy (atomic) and a delete.
    Readers see the old file or the new one, never a part of one.
    """
    folder, name = posixpath.split(path)
    if isinstance(fs, pafs.LocalFileSystem):  # object stores have no folders to make
        fs.create_dir(folder, recursive=True)
    temporary = posixpath.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with fs.open_output_stream(temporary) as stream:
            write(stream)
        fs.move(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            fs.delete_file(temporary)
        raise


def write_parquet(fs: pafs.FileSystem, path: str, rows: pa.Table) -> None:
    """Publish `rows` as the Parquet file `path`."""
    publish(fs, path, lambda stream: pq.write_table(rows, stream))


def write_json(fs: pafs.FileSystem, path: str, rows: pa.Table, json_columns: frozenset[str]) -> None:
    """Publish the single row of `rows` as a JSON object; `json_columns` hold JSON text to embed."""
    (row,) = rows.to_pylist()
    document = {
        name: json.loads(value) if name in json_columns and value is not None else _plain(value)
        for name, value in row.items()
    }
    data = (json.dumps(document, indent=2) + "\n").encode()
    publish(fs, path, lambda stream: stream.write(data))


def read_parquet(fs: pafs.FileSystem, path: str) -> pa.Table | None:
    """The Parquet file `path`, or None when there is none."""
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    return pq.read_table(path, filesystem=fs)


def groups(rows: pa.Table, keys: tuple[str, ...]) -> Iterator[pa.Table]:
    """`rows` split by the values of `keys` (for small tables built on the driver)."""
    found: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows.to_pylist():
        found.setdefault(tuple(row[k] for k in keys), []).append(row)
    for group in found.values():
        yield pa.Table.from_pylist(group, schema=rows.schema)


@dataclass(frozen=True)
class GroupWriter:
    """Writes one file per template group; Spark's `applyInArrow` calls it on the executors."""

    location: LakeLocation
    template: str
    schema: pa.Schema
    json_columns: frozenset[str] = frozenset()

    RESULT = "path string, rows bigint"
    """The Spark schema of what a call returns: the file written and its row count."""

    def write(self, rows: pa.Table) -> pa.Table:
        """Write `rows` (one template group) as one file; return its path and row count."""
        template = PathTemplate(self.template)
        relative = template.render(rows.slice(0, 1).to_pylist()[0])
        fs = self.location.filesystem()
        stored = conform(rows, self.schema)
        if template.suffix == ".json":
            write_json(fs, self.location.path(relative), stored, self.json_columns)
        else:
            write_parquet(fs, self.location.path(relative), stored)
        return pa.table({"path": [relative], "rows": [rows.num_rows]})


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
