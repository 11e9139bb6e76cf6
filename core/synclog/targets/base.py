"""The target contract: what a warehouse plugin registers and what the core asks of it."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, final

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from synclog.capabilities import Capabilities
from synclog.errors import ConfigError, TargetError
from synclog.naming import LineageDataset, Relation, check_name, url_dataset
from synclog.storage.location import Location
from synclog.targets.contract import check_target_class, required_methods, unimplemented
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.sql_dialect import SqlDialect
from synclog.targets.staging import Stages
from synclog.targets.tables import TableSpec
from synclog.urls import MEMORY, TargetURL

DEFAULT_STORAGE = ".synclog"
"""Where the run store, the spool and load staging live unless `storage` says otherwise."""


def default_storage() -> Location:
    """`.synclog` in the working folder."""
    return Location.parse(DEFAULT_STORAGE)


@dataclass(frozen=True)
class TargetSettings:
    """Per-target options from `synclog.toml` (database, schema per layout), and the storage."""

    database: str | None = None
    schemas: Mapping[str, str] = field(default_factory=dict)
    """Schema per layout, e.g. {"census": "logs"}; a layout's default schema otherwise."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Anything else the plugin documents."""
    storage: Location = field(default_factory=default_storage)
    """Where load staging and read-backs put their files (`storage` in synclog.toml)."""
    read_only: bool = False
    """The command only reads (`records`, `runs`, `cleanup`): a file-backed target whose file is
    missing is refused by the core before it is opened, so no empty database file appears."""

    def options_for(self, url: TargetURL, known: Iterable[str]) -> dict[str, str]:
        """`options` overlaid by the URL's query (`?name=value`); an option not `known` is a ConfigError."""
        merged = {**{key: str(value) for key, value in self.options.items()}, **url.query}
        allowed = sorted(known)
        unknown = sorted(set(merged) - set(allowed))
        if unknown:
            raise ConfigError(f"{url}: unknown option {unknown[0]!r} (known: {', '.join(allowed)})")
        return merged


@dataclass(frozen=True)
class Cutoffs:
    """Retention cut-offs: rows whose time is before their sync's cut-off have expired."""

    default: datetime
    per_sync: Mapping[int, datetime] = field(default_factory=dict)
    now: datetime | None = None
    """When the cut-offs were taken; targets whose partitions expire derive retention days from it."""


class Target(ABC):
    """An open connection to one warehouse (or folder) that log tables are written into."""

    def __init__(self, url: TargetURL, settings: TargetSettings, capabilities: Capabilities) -> None:
        self.url = url
        self.settings = settings
        self.capabilities = capabilities
        """What this target can do: given by its `TargetType` (`TargetType.capabilities_for`)."""

    @property
    def dialect(self) -> SqlDialect:
        """The SQL `query` speaks: its parameter marker (`placeholder`), casts and JSON text (Sync
        Tracking's typed NULLs and payloads), names. Standard SQL by default; a SQL target's is
        its client's."""
        return SqlDialect(self.capabilities)

    @property
    @final
    def storage(self) -> Location:
        """Where this target stages files and exports read-backs."""
        return self.settings.storage

    @final
    def relation(self, table: TableSpec, name: str | None = None) -> Relation:
        """Where `table` (or its view, given `name`) lives in this warehouse."""
        caps = self.capabilities
        schema = self.settings.schemas.get(table.layout, table.schema)
        database = self.settings.database if caps.three_part_names else None
        for part, what in ((schema, "schema"), (database, "database")):
            if part is not None:
                check_name(part, what=what, max_length=caps.max_identifier_length)
        if name is None:  # without views, a table readers know by its view's name is stored under it
            name = table.view if table.view and not caps.views else table.name
        return Relation(
            schema=schema, name=name, database=database, casefold=caps.casefold, quote=caps.identifier_quote
        )

    def lineage_dataset(self, relation: Relation) -> LineageDataset:
        """How OpenLineage names `relation`: the form of the spec's row for this warehouse (its
        naming table, https://openlineage.io/docs/spec/naming). This default is the form of the
        warehouse rows taken from the URL (`synclog.naming.url_dataset`): a target whose
        warehouse has a row of its own says so by overriding it."""
        return url_dataset(self.url, relation)

    @final
    def table_spec(self, table: TableSpec) -> TableSpec:
        """`table` as this target stores it, with the columns it cannot carry left out."""
        if self.capabilities.run_metadata_columns:
            return table
        return table.without_run_metadata()

    @abstractmethod
    def ensure(self, tables: Sequence[TableSpec]) -> None:
        """Create what is missing (schemas, tables, views), adding new columns at the end."""

    @abstractmethod
    def replace_rows(self, table: TableSpec, rows: Rows, keys: Keys) -> int:
        """Atomically replace the rows of `table` whose key `keys` holds by `rows` (also by none);
        return how many rows were loaded. `keys` are constants the write knows (the batches it
        carries, a run-level load's scope, the ids of rows built on the driver), which the target
        matches the table's rows against (`synclog.targets.keys`)."""

    @abstractmethod
    def delete_expired(self, table: TableSpec, cutoffs: Cutoffs) -> int:
        """Remove the rows of `table` older than their sync's cut-off; return how many."""

    def stages(self) -> Stages | None:
        """How the write's one Spark job stages this target's loads (`synclog.targets.staging`).
        None by default: the target has no stages, and every load goes through `replace_rows`."""
        return None

    @classmethod
    def needed_methods(cls, capabilities: Capabilities) -> list[str]:
        """The methods this class must implement to hold `capabilities` (its layouts' calls)."""
        return required_methods(capabilities)

    @classmethod
    def refusal(cls, capabilities: Capabilities) -> str | None:
        """Why this class cannot work with `capabilities` at all, in a few words; None when it can."""
        return None

    @unimplemented
    def read_rows(
        self, table: TableSpec, sync_id: int, spark: SparkSession
    ) -> AbstractContextManager[DataFrame | None]:
        """The rows `table` holds for `sync_id`, as a Spark frame to diff a run against.

        Use it as `with target.read_rows(...) as rows:`; `rows` is None when the table does
        not exist, else a frame with exactly `table.spark_schema()` (columns the stored table
        lacks read NULL) that stays readable until the block ends. Rows travel in bulk
        (an export to files under `storage` that the executors read), never through the driver's
        memory as a whole.
        """
        raise TargetError(f"the {type(self).__name__} target cannot read log rows back")

    @unimplemented
    def uri(self, relative: str = "") -> str:
        """Where readers outside synclog (DuckDB, Spark, …) find `relative` among the target's
        files: what a target whose data is files (the lake layout's) answers."""
        raise TargetError(f"the {type(self).__name__} target keeps no files readers can find")

    @abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> pa.Table:
        """Run a read-only query with positional parameters and return its (small) result."""

    @abstractmethod
    def existing_tables(self, tables: Sequence[TableSpec]) -> list[TableSpec]:
        """Which of `tables` exist in the warehouse (retention touches no others)."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""

    @final
    def __enter__(self) -> Target:
        return self

    @final
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


Opener = Callable[[TargetURL, TargetSettings, Capabilities], Target]
"""Opens a target with the capabilities its type gives it (a `Target` subclass is one)."""

Refiner = Callable[[Capabilities, TargetURL, TargetSettings], Capabilities]
"""The capabilities of one target from the type's and its URL and options."""


def imported(path: str) -> Any:
    """What `"package.module:name"` names, imported now (a plugin's driver is imported only when
    one of its targets opens)."""
    module, _, name = path.partition(":")
    if not name:
        raise ValueError(f"{path!r} is no 'module:name' path")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class TargetType:
    """What a plugin registers: a kind of target, its URL schemes and capabilities, and an opener.

    The one place a target's capabilities are declared: the core reads them from here (the
    connector before connecting, `synclog plugins`, the docs), and the opened target gets them."""

    name: str
    schemes: tuple[str, ...]
    capabilities: Capabilities
    summary: str
    opener: Opener | str
    """Opens a target: a `Target` class or a function; or the `"module:name"` path of one, imported
    when a target opens (so the warehouse's driver is imported then, not at registration)."""
    example_url: str = ""
    file_url: bool = False
    """The URL names a database file, or the data folder of an engine that keeps one
    (`scheme:///relative/path`, `scheme:////absolute/path`): the core parses it
    (`TargetURL.file_path`) and refuses a missing file or folder to read-only commands."""
    refine: Refiner | str | None = None
    """Where one target's capabilities follow from its URL or options (Databricks' `json` option,
    the session's table format), they are `refine(capabilities, url, settings)`; called before
    connecting, so it reads no warehouse. A `"module:name"` path is imported when first needed."""

    def capabilities_for(self, url: TargetURL, settings: TargetSettings) -> Capabilities:
        """The capabilities of the target at `url`: the type's, refined by its options."""
        if self.refine is None:
            return self.capabilities
        refine: Refiner = imported(self.refine) if isinstance(self.refine, str) else self.refine
        return refine(self.capabilities, url, settings)

    def check(self, url: TargetURL, settings: TargetSettings) -> None:
        """What the core checks before opening: a file URL's form, and a read-only command's file."""
        if not self.file_url:
            return
        path = url.file_path()
        if settings.read_only and path != MEMORY and not Path(path).exists():
            raise ConfigError(f"{url}: there is no database file {path} (nothing has been logged there yet)")

    def open(self, url: TargetURL, settings: TargetSettings | None = None) -> Target:
        """Open a connection to the target at `url`; refuse a target class that lacks a method
        its layouts call (checked here when the opener imports the class lazily)."""
        settings = settings or TargetSettings()
        self.check(url, settings)
        capabilities = self.capabilities_for(url, settings)
        opener: Opener = imported(self.opener) if isinstance(self.opener, str) else self.opener
        target = opener(url, settings, capabilities)
        check_target_class(self.name, type(target), capabilities)  # the class the opener chose
        return target
