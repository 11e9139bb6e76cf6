"""`Rows`: what a layout hands to one table load, in the one shape every target receives.

Most rows are a Spark frame whose work runs on the executors; a few (a run's metadata, its
`sync_runs` row) are built on the driver. A target never asks which: it takes the rows as a
Spark frame (`frame()`), or through its stage writer (`synclog.targets.staging`), which the
executors run for a frame and the driver for a few rows (`local_table`), without a Spark job.

Rows that are only a projection of the batches being written (`Rows.select`) can be computed
by the write's one Spark job itself (`synclog.write_job`): the writer asks `projection_of`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession

from synclog.targets.tables import TableSpec


@dataclass(frozen=True)
class Rows:
    """Rows for one table: a Spark frame, or a small Arrow table built on the driver."""

    spark: SparkSession
    _frame: DataFrame | None = None
    _local: pa.Table | None = None
    _columns: tuple[Column, ...] = ()

    @classmethod
    def of(cls, frame: DataFrame) -> Rows:
        """Rows a Spark frame computes (on the executors)."""
        return cls(frame.sparkSession, _frame=frame)

    @classmethod
    def select(cls, records: DataFrame, *columns: Column) -> Rows:
        """Rows that are `columns` (named as the table's) of each row of `records`, one for one."""
        return cls(records.sparkSession, _frame=records, _columns=columns)

    def projection_of(self, records: DataFrame) -> tuple[Column, ...] | None:
        """The columns, when these rows are a projection of `records` itself; else None."""
        return self._columns if self._columns and self._frame is records else None

    @property
    def local_table(self) -> pa.Table | None:
        """The rows built on the driver, or None for rows a Spark frame computes."""
        return self._local

    @classmethod
    def local(cls, spark: SparkSession, table: TableSpec, rows: Sequence[dict[str, Any]]) -> Rows:
        """A few rows built on the driver, with exactly `table`'s columns."""
        return cls(spark, _local=pa.Table.from_pylist(list(rows), schema=table.arrow_schema()))

    @classmethod
    def arrow(cls, spark: SparkSession, table: pa.Table) -> Rows:
        """Rows built on the driver, as an Arrow table of the table's columns."""
        return cls(spark, _local=table)

    def frame(self) -> DataFrame:
        """The rows as a Spark frame."""
        if self._frame is not None:
            return self._frame.select(*self._columns) if self._columns else self._frame
        return self.spark.createDataFrame(self._local)

    @property
    def digest(self) -> str | None:
        """A fingerprint of rows built on the driver (None for a frame): equal rows, equal digest."""
        if self._local is None:
            return None
        return hashlib.sha256(repr(self._local.to_pylist()).encode()).hexdigest()
