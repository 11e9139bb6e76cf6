"""Invalid-record checks made before anything is written: flagged, never dropped."""

from __future__ import annotations

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from synclog.model import InvalidReason


def identifier_count(*within: str) -> Column:
    """How many records of the frame (of each group of `within` columns) share this record's
    identifier (a window, one shuffle)."""
    return F.count(F.lit(1)).over(Window.partitionBy(*within, "record_identifier"))


def invalid_reason(count_column: str) -> Column:
    """The canonical `invalid_reason`: NULL or DUPLICATE identifier, else NULL (a valid record).

    The flag sits beside the engine's outcome, never in its place: a flagged record the engine
    sent keeps the status and message the destination gave it.
    """
    return F.when(F.col("record_identifier").isNull(), F.lit(InvalidReason.NULL.value)).when(
        F.col(count_column) > 1, F.lit(InvalidReason.DUPLICATE.value)
    )
