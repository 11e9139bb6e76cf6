"""Invalid-record checks made before anything is written: flagged, never dropped."""

from __future__ import annotations

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from synclog.model import RecordStatus

NULL_MESSAGE = "Invalid record: the identifier is NULL"
DUPLICATE_MESSAGE = "Invalid record: the identifier appears more than once in this run"


def identifier_count() -> Column:
    """How many records of the frame share this record's identifier (a window, one shuffle)."""
    return F.count(F.lit(1)).over(Window.partitionBy("record_identifier"))


def checked_status(count_column: str) -> Column:
    """The canonical status: invalid checks first, the engine's outcome otherwise."""
    return (
        F.when(F.col("record_identifier").isNull(), F.lit(RecordStatus.INVALID_NULL.value))
        .when(F.col(count_column) > 1, F.lit(RecordStatus.INVALID_DUPLICATE.value))
        .otherwise(F.col("status"))
    )


def checked_message(count_column: str) -> Column:
    """The engine's message, or the check's message for an invalid record."""
    return (
        F.when(F.col("record_identifier").isNull(), F.lit(NULL_MESSAGE))
        .when(F.col(count_column) > 1, F.lit(DUPLICATE_MESSAGE))
        .otherwise(F.col("status_message"))
    )
