"""How the Parquet tables of the in-cluster target are partitioned, and the SQL that names partitions.

A Parquet table cannot have rows deleted or merged by Spark; it can have whole partitions
overwritten (dynamic partition overwrite) or dropped. So every table that grows is partitioned
by what a replace or retention touches: tables with a time column by its UTC day
(`_synclog_day`), the others with a `sync_id` by sync (`_synclog_sync`: snapshots are
replaced per sync, runs per run of one sync). Spark keeps partition columns after the table's
own columns, also when columns are added later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from synclog.plugin_api import TableSpec

DAY = "_synclog_day"
SYNC = "_synclog_sync"
COLUMNS = (DAY, SYNC)
"""Every partition column the target adds."""


@dataclass(frozen=True)
class Partitioning:
    """A partition column, its type, and the table column its value derives from."""

    column: str
    type: str
    source: str

    def value_sql(self, source: str) -> str:
        """SQL of the partition value of a row whose source column is the SQL `source`."""
        if self.column == DAY:  # the UTC day, whatever the session's time zone
            return f"DATE_FROM_UNIX_DATE(CAST(FLOOR(UNIX_MICROS({source}) / 86400000000) AS INT))"
        return source

    def literal(self, value: date | int | None) -> str:
        """A partition value (from a query of ours) as a SQL literal."""
        if value is None:
            return "NULL"
        if isinstance(value, date):
            return f"DATE'{value.isoformat()}'"
        return str(int(value))

    def among(self, column: str, values: Sequence[date | int | None]) -> str:
        """SQL that holds where the partition column `column` has one of `values` (NULL too)."""
        known = [v for v in values if v is not None]
        tests = [f"{column} IN ({', '.join(self.literal(v) for v in known)})"] if known else []
        if len(known) < len(values):
            tests.append(f"{column} IS NULL")
        return "(" + " OR ".join(tests) + ")"


def of(table: TableSpec) -> Partitioning | None:
    """How `table` is partitioned, or None (the small metadata tables)."""
    if table.time_column is not None:
        return Partitioning(DAY, "DATE", table.time_column)
    if "sync_id" in table.column_names():
        return Partitioning(SYNC, "BIGINT", "sync_id")
    return None


@dataclass(frozen=True)
class Removal:
    """The rows a rewrite leaves out: SQL over the table aliased `t`, its parameters, and a bound
    on `t` that every removed row meets (lets Spark skip partitions)."""

    sql: str
    params: list[Any] = field(default_factory=list)
    bound: str = "TRUE"
