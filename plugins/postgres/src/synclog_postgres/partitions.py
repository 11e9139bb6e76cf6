"""Daily range partitions of the tables that have a time column: names, bounds, DDL."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from synclog.plugin_api import Relation

_SUFFIX = re.compile(r"_p(\d{8})$")


@dataclass(frozen=True)
class Partition:
    """One day of a partitioned table: rows with `start <= time < end` (UTC)."""

    relation: Relation
    day: date

    @property
    def start(self) -> datetime:
        return datetime.combine(self.day, time(), UTC)

    @property
    def end(self) -> datetime:
        return self.start + timedelta(days=1)


def partition(parent: Relation, day: date) -> Partition:
    """The partition of `parent` that holds `day`: `<table>_pYYYYMMDD` in the same schema."""
    return Partition(parent.with_name(f"{parent.parts[-1]}_p{day:%Y%m%d}"), day)


def parse(parent: Relation, name: str) -> Partition | None:
    """The partition a child table called `name` is, or None if synclog did not name it."""
    match = _SUFFIX.search(name)
    if match is None or name[: match.start()] != parent.parts[-1]:
        return None
    return partition(parent, datetime.strptime(match.group(1), "%Y%m%d").date())


def create_sql(parent: Relation, part: Partition) -> str:
    """CREATE TABLE for `part` (bounds are dates synclog computed, never caller text)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {part.relation.render()} PARTITION OF {parent.render()} "
        f"FOR VALUES FROM ('{part.start.isoformat()}') TO ('{part.end.isoformat()}')"
    )
