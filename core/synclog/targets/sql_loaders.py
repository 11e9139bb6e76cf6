"""The opt-in parts of a SQL target: how its stage is filled, how its partitions go (dropped,
expired, or rewritten one at a time: `PartitionReplacer`), how its schemas become reachable, a swap
of its own. Which parts a target needs, its capabilities declare (`needed_parts`): a `SqlTarget`
subclass takes part by subclassing the mixin (or just defining its methods); the core checks
`isinstance`, and refuses a target type whose capabilities need a part it lacks.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from pyspark.sql import DataFrame

from synclog.capabilities import Capabilities, Schemas, Staging, SwapStrategy
from synclog.naming import Relation
from synclog.storage.manifest import Manifest
from synclog.targets.staging import StageWriter
from synclog.targets.swaps.choice import OwnSwap, replaces_partitions
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
class TaskLoader(Protocol):
    """`staging = tasks`: each Spark task fills the stage through the target's own writer."""

    @abstractmethod
    def task_writer(self, stage: Relation, table: TableSpec) -> StageWriter:
        """What each Spark task opens to put its rows of `table` into `stage` (picklable)."""

    @abstractmethod
    def load_tasks(self, stage: Relation, table: TableSpec, reports: Sequence[str]) -> int:
        """Finish filling `stage` from what the tasks of `task_writer` reported; return its rows."""


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
    """The method an opt-in part asks for first (`load_files` of `FileLoader`)."""
    return next(name for name, value in vars(part).items() if getattr(value, "__isabstractmethod__", False))


def needed_parts(capabilities: Capabilities) -> list[type]:
    """The mixins a SQL target with `capabilities` must take part in: how its stage is filled
    (`staging`), its partition hooks (`partition_drop`, `partition_expiry`, the partition-replace
    strategy), a schema attacher (`schemas = attached`), a swap of its own (`swap = own`)."""
    needed: list[type] = [
        {Staging.FILES: FileLoader, Staging.EXECUTORS: FrameLoader, Staging.TASKS: TaskLoader}[
            capabilities.staging
        ]
    ]
    if capabilities.partition_drop:
        needed.append(PartitionDropper)
    if capabilities.partition_expiry:
        needed.append(PartitionExpirer)
    if replaces_partitions(capabilities):
        needed.append(PartitionReplacer)
    if capabilities.schemas is Schemas.ATTACHED:
        needed.append(SchemaAttacher)
    if capabilities.swap_strategy is SwapStrategy.OWN:
        needed.append(OwnSwap)
    return needed
