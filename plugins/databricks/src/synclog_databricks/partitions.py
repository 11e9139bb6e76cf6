"""The core's partitionings (`api.partitioning_of`) in Spark SQL, for the Parquet tables of the
in-cluster target.

A Parquet table cannot have rows deleted or merged by Spark; it can have whole partitions
overwritten (dynamic partition overwrite) or dropped, so it takes the core's partition replace
(`partition_replace`). Spark keeps a table's partition in a column of its own, named after the
partitioning (`_synclog_day`, `_synclog_sync`), after the table's own columns, also when columns
are added later.
"""

from __future__ import annotations

from datetime import date

from synclog.plugin_api import Partitioning, PartitionValue


def column_type(partitioning: Partitioning) -> str:
    """The Spark type of the partition column."""
    return "DATE" if partitioning.by_day else "BIGINT"


def value_sql(partitioning: Partitioning, source: str) -> str:
    """SQL of the partition value of a row whose source column is the SQL `source`."""
    if partitioning.by_day:  # the UTC day, whatever the session's time zone
        return f"DATE_FROM_UNIX_DATE(CAST(FLOOR(UNIX_MICROS({source}) / 86400000000) AS INT))"
    return source


def literal(value: PartitionValue) -> str:
    """A partition value (from a query of the core's) as a SQL literal, as partition specs take."""
    if value is None:
        return "NULL"
    if isinstance(value, date):
        return f"DATE'{value.isoformat()}'"
    return str(int(value))
