"""`Rows`: what a layout hands to one table load, in the one shape every target receives.

Most rows are a Spark frame whose work runs on the executors; a few (a run's metadata, its
`sync_runs` row) are built on the driver. A target never asks which: it takes the rows as a
Spark frame (`frame()`), or as files staged under `storage` (`stage()`: Parquet, or JSON lines),
written by the executors for a frame and by the driver for a few rows, without a Spark job.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from synclog.capabilities import FileFormat
from synclog.storage.files import write_frame, write_table
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest
from synclog.targets.tables import TableSpec


@dataclass(frozen=True)
class Rows:
    """Rows for one table: a Spark frame, or a small Arrow table built on the driver."""

    spark: SparkSession
    _frame: DataFrame | None = None
    _local: pa.Table | None = None

    @classmethod
    def of(cls, frame: DataFrame) -> Rows:
        """Rows a Spark frame computes (on the executors)."""
        return cls(frame.sparkSession, _frame=frame)

    @classmethod
    def local(cls, spark: SparkSession, table: TableSpec, rows: Sequence[dict[str, Any]]) -> Rows:
        """A few rows built on the driver, with exactly `table`'s columns."""
        return cls(spark, _local=pa.Table.from_pylist(list(rows), schema=table.arrow_schema()))

    def frame(self) -> DataFrame:
        """The rows as a Spark frame."""
        if self._frame is not None:
            return self._frame
        return self.spark.createDataFrame(self._local)

    def stage(
        self,
        location: Location,
        folder: str,
        schema: pa.Schema,
        file_format: FileFormat = FileFormat.PARQUET,
    ) -> Manifest:
        """Write the rows (with `schema`'s columns and types) as files under `folder` (Parquet by default)."""
        if self._frame is not None:
            return write_frame(self._frame, location, folder, schema, file_format)
        assert self._local is not None
        if not self._local.num_rows:
            return Manifest(location)
        table = self._local.select(schema.names).cast(schema)
        return write_table(location, f"{folder}/local.{file_format.value}", table, file_format)

    @property
    def digest(self) -> str | None:
        """A fingerprint of rows built on the driver (None for a frame): equal rows, equal digest."""
        if self._local is None:
            return None
        return hashlib.sha256(repr(self._local.to_pylist()).encode()).hexdigest()
