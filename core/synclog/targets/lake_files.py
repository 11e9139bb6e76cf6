"""A lake's files: path templates, and the writer the Spark executors publish them with.

Everything here runs on the driver and on Spark executors alike: a `Location` is plain data
that pickles, and each process builds its own pyarrow filesystem from it.
"""

from __future__ import annotations

import json
import posixpath
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from synclog.storage.files import by_name, publish
from synclog.storage.location import Location
from synclog.targets.tables import TableSpec


@dataclass(frozen=True)
class LakeFiles:
    """Where a layout's tables go in a lake: a path template per table, relative to the lake's root."""

    templates: Mapping[TableSpec, str]
    """Every template holds its table's key."""
    field_values: Mapping[str, tuple[str, ...]]
    """Every value a path field that is not part of its table's key can take."""


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


@dataclass(frozen=True)
class GroupWriter:
    """Writes one file per template group; Spark's `applyInArrow` calls it on the executors."""

    location: Location
    template: str
    schema: pa.Schema
    json_columns: frozenset[str] = frozenset()

    RESULT = "path string, rows bigint"
    """The Spark schema of what a call returns: the file written and its row count."""

    def write(self, rows: pa.Table) -> pa.Table:
        """Write `rows` (one template group) as one file, replacing it whole (nothing is read and
        merged); return its path and row count."""
        template = PathTemplate(self.template)
        relative = template.render(rows.slice(0, 1).to_pylist()[0])
        fs = self.location.filesystem()
        stored = by_name(rows, self.schema)
        if template.suffix == ".json":
            write_json(fs, self.location.path(relative), stored, self.json_columns)
        else:
            write_parquet(fs, self.location.path(relative), stored)
        return pa.table({"path": [relative], "rows": [rows.num_rows]})


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
