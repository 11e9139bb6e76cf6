"""The diff of a run against the previous snapshot of its sync, computed on the executors.

The run's records are joined to the previous snapshot by row id, once; whether a row was
added, changed, removed or left unchanged, and which rows the next snapshot keeps, are then
column expressions over that join. Nothing is collected to the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

PREVIOUS = "prev_"
"""Prefix of the previous snapshot's columns in the joined frame."""
_IN_RUN = "_in_run"
_FIRST = "_first"


def fields_hash(fields: Column) -> Column:
    """A hash of a row's fields (JSON text) that recognises unchanged rows; NULL hashes as ''."""
    return F.sha2(F.coalesce(fields, F.lit("")), 256).substr(1, 32)


def prev(name: str) -> Column:
    """A column of the previous snapshot in the joined frame."""
    return F.col(PREVIOUS + name)


@dataclass(frozen=True)
class Diff:
    """A run's records beside the previous snapshot of their rows, as one lazy frame.

    `joined` holds every record of the run (with `row_id`, `log_id`, `removes`, `fields_hash`,
    `status` and whatever else the run side carries) joined on `row_id` to the previous row (its
    columns prefixed `prev_`), plus the previous rows the run does not mention.
    """

    joined: DataFrame
    full_model: bool
    """The run holds the whole model: previous rows it does not mention have left it."""

    @property
    def in_run(self) -> Column:
        """The row comes from a record of this run (else only from the previous snapshot)."""
        return F.coalesce(F.col(_IN_RUN), F.lit(False))

    @property
    def was_there(self) -> Column:
        """The previous snapshot holds the row."""
        return prev("row_id").isNotNull()

    @property
    def left_model(self) -> Column:
        """A previous row missing from a whole-model run: it has been removed."""
        return ~self.in_run & F.lit(self.full_model)

    @property
    def row_id(self) -> Column:
        """The row's id, from whichever side has it."""
        return F.coalesce(F.col("row_id"), prev("row_id"))

    @property
    def change(self) -> Column:
        """The changelog's op_type: removed, added (new to the snapshot) or changed."""
        return (
            F.when(~self.in_run | F.col("removes"), F.lit("removed"))
            .when(~self.was_there, F.lit("added"))
            .otherwise(F.lit("changed"))
        )

    @property
    def state(self) -> Column:
        """The snapshot's op_type: added, changed (other fields) or unchanged (same, or not sent)."""
        return (
            F.when(~self.in_run, F.lit("unchanged"))
            .when(~self.was_there, F.lit("added"))
            .when(~prev("fields_hash").eqNullSafe(F.col("fields_hash")), F.lit("changed"))
            .otherwise(F.lit("unchanged"))
        )

    @property
    def repeated(self) -> Column:
        """A row sent again exactly as before, succeeding as it did before: nothing to log."""
        same = prev("fields_hash").eqNullSafe(F.col("fields_hash")) & ~F.col("removes")
        succeeded = (F.col("status") == "succeeded") & (prev("status") == "succeeded")
        return self.in_run & self.was_there & same & succeeded

    @property
    def logged(self) -> Column:
        """Rows the changelog records: the run's records but repeated ones, and rows that left."""
        return (self.in_run & ~self.repeated) | self.left_model

    @property
    def kept(self) -> Column:
        """Rows of the next snapshot: one per identified row the run did not remove, plus the
        previous rows the run did not mention (unless the run holds the whole model)."""
        from_run = self.in_run & F.col(_FIRST) & ~F.col("removes") & F.col("row_id").isNotNull()
        return from_run | (~self.in_run & ~F.lit(self.full_model))

    @property
    def touched(self) -> Column:
        """Rows whose snapshot row this run replaces or removes (one per row id)."""
        return (self.in_run & F.col(_FIRST) & F.col("row_id").isNotNull()) | self.left_model

    def pick(self, name: str, default: Column | None = None) -> Column:
        """The run's value of column `name` for rows in the run, else the previous (or `default`)."""
        return F.when(self.in_run, F.col(name)).otherwise(prev(name) if default is None else default)


def diff(records: DataFrame, previous: DataFrame, *, full_model: bool, order: Sequence[Column]) -> Diff:
    """Join the run's `records` to the `previous` snapshot of their sync, on `row_id`.

    `records` need `row_id` (NULL for records without one: they match nothing), `removes`,
    `fields_hash`, `status`, and what `order` reads: the first record of a row id in that order
    stands for the row in the snapshot; `previous` needs `row_id`, `fields_hash` and `status`.
    """
    first = F.row_number().over(Window.partitionBy("row_id").orderBy(*order)) == 1
    ranked = records.withColumn(_FIRST, first).withColumn(_IN_RUN, F.lit(True))
    before = previous.select([F.col(c).alias(PREVIOUS + c) for c in previous.columns])
    # A sort-merge join: the planner would broadcast a side it guesses small (a filtered diff
    # joins like an outer join), which collects a whole run or snapshot to the driver.
    joined = ranked.hint("merge").join(before, ranked["row_id"] == before[PREVIOUS + "row_id"], "full_outer")
    return Diff(joined, full_model)
