"""The opt-in parts of a SQL target: how its stage is filled, how its partitions go (dropped,
expired, or rewritten one at a time: `PartitionReplacer`), how its schemas become reachable. A
`SqlTarget` subclass takes part by subclassing the mixin (or just defining its methods); the core
checks `isinstance`, and refuses a target type whose capabilities need one it lacks
(`needed_loaders`).
"""

from __future__ import annotations

from abc import abstractmethod
from datetime import datetime
from typing import Protocol, runtime_checkable

from pyspark.sql import DataFrame

from synclog.capabilities import Capabilities, Schemas, Staging
from synclog.naming import Relation
from synclog.storage.manifest import Manifest
from synclog.targets.swaps.choice import replaces_partitions
from synclog.targets.swaps.partition_replace import PartitionReplacer
from synclog.targets.tables import TableSpec


@runtime_checkable
class FileLoader(Protocol):
    """`staging = files`: fills a stage from the files the Spark tasks staged."""

    @abstractmethod
    def load_files(self, stage: Relation, table: TableSpec, manifest: Manifest) -> int:
        """Fill `stage` from the staged files of `manifest` in bulk; return the rows loaded."""


@runtime_checkable
class FrameLoader(Protocol):
    """`staging = executors` without a task-side `stage_writer`: fills a stage from the frame."""

    @abstractmethod
    def load_frame(self, stage: Relation, table: TableSpec, frame: DataFrame) -> int:
        """Fill `stage` from the executors in bulk; return the rows loaded."""


@runtime_checkable
class PartitionDropper(Protocol):
    """`partition_drop`: retention drops whole day partitions first."""

    @abstractmethod
    def drop_partitions(self, table: TableSpec, relation: Relation, before: datetime) -> int:
        """Drop the day partitions that end before `before`; return the rows they held."""


@runtime_checkable
class PartitionExpirer(Protocol):
    """`partition_expiry`: day partitions expire by themselves."""

    @abstractmethod
    def expire_partitions(self, table: TableSpec, relation: Relation, days: int) -> None:
        """Let day partitions older than `days` expire by themselves."""


@runtime_checkable
class SchemaAttacher(Protocol):
    """`schemas = attached`: the warehouse has no CREATE SCHEMA; the target reaches a schema its way."""

    @abstractmethod
    def attach_schema(self, relation: Relation) -> None:
        """Make the schema `relation` lives in reachable under its name (SQLite attaches a file)."""


def method_of(part: type) -> str:
    """The one method an opt-in part asks for (`load_files` of `FileLoader`)."""
    return next(name for name, value in vars(part).items() if getattr(value, "__isabstractmethod__", False))


def needed_loaders(
    capabilities: Capabilities, own_writer: bool, own_retention: bool, own_swap: bool = False
) -> list[type]:
    """The mixins a SQL target with `capabilities` must take part in: a stage loader (none with
    its `own_writer`), the partition hooks (none with its `own_retention`; the partition rewrite's
    none with its `own_swap` and `own_retention`), a schema attacher."""
    needed: list[type] = []
    if capabilities.staging is Staging.FILES and not own_writer:
        needed.append(FileLoader)
    if capabilities.staging is Staging.EXECUTORS and not own_writer:
        needed.append(FrameLoader)
    if capabilities.partition_drop and not own_retention:
        needed.append(PartitionDropper)
    if capabilities.partition_expiry and not own_retention:
        needed.append(PartitionExpirer)
    if replaces_partitions(capabilities) and not (own_swap and own_retention):
        needed.append(PartitionReplacer)
    if capabilities.schemas is Schemas.ATTACHED:
        needed.append(SchemaAttacher)
    return needed
