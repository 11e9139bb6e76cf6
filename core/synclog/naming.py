"""Relation names as data: parts, a casefold, and quoting, never string concatenation; and the
names OpenLineage gives them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from synclog.capabilities import Casefold
from synclog.errors import ConfigError
from synclog.urls import MEMORY, TargetURL

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$-]*$")


def check_name(name: str, *, what: str, max_length: int) -> str:
    """Accept a configured database/schema/table name, or say why not."""
    if not name or not _PLAIN_NAME.match(name):
        raise ConfigError(
            f"{what} {name!r} is not a plain identifier (letters, digits, _ $ -; not starting with a digit)"
        )
    if len(name) > max_length:
        raise ConfigError(f"{what} {name!r} is longer than {max_length} characters")
    return name


@dataclass(frozen=True)
class Relation:
    """A table or view: optional database, schema, name, and how the warehouse spells them."""

    schema: str
    name: str
    database: str | None = None
    casefold: Casefold = Casefold.LOWER
    quote: str = '"'

    def __post_init__(self) -> None:
        for part in self.parts:
            check_name(part, what="identifier", max_length=255)

    @property
    def parts(self) -> tuple[str, ...]:
        """The folded parts that are included in the name, outermost first."""
        raw = (self.database, self.schema, self.name)
        return tuple(self.casefold.apply(p) for p in raw if p is not None)

    def quoted(self, part: str) -> str:
        """One identifier part, quoted for the warehouse."""
        return f"{self.quote}{part.replace(self.quote, self.quote * 2)}{self.quote}"

    def render(self) -> str:
        """The fully qualified, quoted name to put in SQL."""
        return ".".join(self.quoted(p) for p in self.parts)

    def schema_relation(self) -> str:
        """The quoted, qualified name of the relation's schema."""
        parts = self.parts[:-1]
        return ".".join(self.quoted(p) for p in parts)

    def with_name(self, name: str) -> Relation:
        """A sibling relation in the same schema."""
        return replace(self, name=name)

    def __str__(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class LineageDataset:
    """A dataset as OpenLineage names it (https://openlineage.io/docs/spec/naming): the namespace
    of its datasource, `scheme://authority` (or a bare scheme such as `bigquery`), and its name
    there, e.g. `postgres://db.example.com:5432` and `analytics.census.sync_log`."""

    namespace: str
    name: str


def lineage_namespace(scheme: str, host: str, port: int | None = None) -> str:
    """`scheme://host[:port]`, an IPv6 host in brackets: the namespace of a warehouse server."""
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (f":{port}" if port else "")


def url_dataset(url: TargetURL, relation: Relation) -> LineageDataset:
    """The form of the spec's warehouse rows, from a target URL: `{scheme}://{host}[:{port}]` and
    the relation's dotted parts; for a URL that names a database file (no host), the file's
    absolute path, `{scheme}:///abs/path/logs.db` (the same file whatever the working folder)."""
    if url.host:
        namespace = lineage_namespace(url.scheme, url.host, url.port)
    else:
        path = url.file_path()
        namespace = f"{url.scheme}://" + (f"/{path}" if path == MEMORY else os.path.abspath(path))
    return LineageDataset(namespace, str(relation))
