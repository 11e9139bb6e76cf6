"""COPY and UNLOAD statements, and the manifests they read and write."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from typing import Any

from synclog.plugin_api import Location, Manifest, StoredFile
from synclog_redshift.connection import S3Access

UNLOAD_MANIFEST = "manifest"
"""UNLOAD … MANIFEST writes `<prefix>manifest`."""


def literal(text: str) -> str:
    """`text` as a Redshift string literal: quotes doubled, a backslash (an escape there) refused."""
    if "\\" in text:
        raise ValueError("text with a backslash is not quoted for Redshift")
    return "'" + text.replace("'", "''") + "'"


def copy_manifest(uris: Sequence[str], sizes: Sequence[int]) -> bytes:
    """A COPY manifest naming each staged file, mandatory, with its size."""
    entries = [
        {"url": uri, "mandatory": True, "meta": {"content_length": size}}
        for uri, size in zip(uris, sizes, strict=True)
    ]
    return json.dumps({"entries": entries}).encode()


def copy_sql(stage: str, manifest_uri: str, access: S3Access) -> str:
    """One COPY of every file a manifest names: JSON lines whose keys are the stage's columns.

    JSON 'auto' loads each key into the column of its name, a SUPER column taking the value as
    it is; TIMEFORMAT 'auto' reads the ISO 8601 times; TRUNCATECOLUMNS cuts a string longer than
    its VARCHAR(65535) instead of failing the load; a temporary stage needs no compression
    analysis or statistics.
    """
    return (
        f"COPY {stage} FROM {literal(manifest_uri)} {access.sql()} FORMAT AS JSON 'auto' "
        "TIMEFORMAT 'auto' TRUNCATECOLUMNS COMPUPDATE OFF STATUPDATE OFF MANIFEST"
    )


def inline(sql: str, params: Sequence[Any], placeholder: str = "%s") -> str:
    """`sql` with its placeholders replaced by `params`, which must be integers (UNLOAD takes none)."""
    parts = sql.split(placeholder)
    if len(parts) != len(params) + 1:
        raise ValueError(f"the query has {len(parts) - 1} placeholders for {len(params)} parameters")
    for value in params:
        if type(value) is not int:
            raise TypeError(f"only integers are inlined into an UNLOAD query, not {type(value).__name__}")
    return parts[0] + "".join(str(value) + part for value, part in zip(params, parts[1:], strict=True))


def unload_sql(query: str, prefix_uri: str, access: S3Access) -> str:
    """UNLOAD `query` as Parquet files under `prefix_uri`, with a manifest that counts their rows."""
    return (
        f"UNLOAD ({literal(query)}) TO {literal(prefix_uri)} {access.sql()} "
        "FORMAT AS PARQUET MANIFEST VERBOSE"
    )


def unloaded(location: Location, folder: str) -> Manifest:
    """The files an UNLOAD to `folder` wrote, as its manifest names them (never by listing)."""
    fs = location.filesystem()
    with fs.open_input_stream(location.path(posixpath.join(folder, UNLOAD_MANIFEST))) as stream:
        entries = json.loads(stream.read())["entries"]
    prefix = location.uri(folder) + "/"
    files = []
    for entry in entries:
        url = entry["url"]
        if not url.startswith(prefix):
            raise ValueError(f"UNLOAD wrote {url} outside {prefix}")
        files.append(
            StoredFile(posixpath.join(folder, url[len(prefix) :]), int(entry["meta"]["record_count"]))
        )
    return Manifest(location, tuple(files))
