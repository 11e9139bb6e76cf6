"""Retention: rows expire by their batch's own start time, per sync and per table, in whole days.

A cut-off is the start of a UTC day: a row is kept at least `retention_days` and is gone within
one more day. Partitioned tables then lose whole day partitions, never rows one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from synclog.config import Config
from synclog.layouts.registry import LAYOUTS
from synclog.targets.base import Cutoffs, Target
from synclog.targets.tables import TableSpec


@dataclass(frozen=True)
class CleanupResult:
    """Rows removed, per table."""

    deleted: dict[str, int]

    @property
    def total(self) -> int:
        """Rows removed in all."""
        return sum(self.deleted.values())


def cutoffs(table: TableSpec, config: Config, now: datetime) -> Cutoffs:
    """The cut-offs for `table`: the default one, and those of syncs that differ from it."""
    public = table.view or table.name
    default_days = config.defaults.retention_for(public)
    per_sync = {
        sync_id: cutoff(now, settings.retention_for(public))
        for sync_id, settings in config.syncs.items()
        if settings.retention_for(public) != default_days
    }
    return Cutoffs(default=cutoff(now, default_days), per_sync=per_sync, now=now)


def cutoff(now: datetime, days: int) -> datetime:
    """The start of the UTC day `days` days before `now`: rows before it have expired."""
    return datetime.combine((now - timedelta(days=days)).astimezone(UTC).date(), time(), UTC)


def retained_tables() -> list[TableSpec]:
    """Every framework table that retention applies to, across layouts."""
    return [t for layout in LAYOUTS.values() for t in layout.tables if t.retained]


def cleanup(target: Target, config: Config, now: datetime) -> CleanupResult:
    """Delete expired rows from the framework's own tables that exist in `target`."""
    deleted = {
        str(target.relation(table)): target.delete_expired(table, cutoffs(table, config, now))
        for table in target.existing_tables(retained_tables())
    }
    return CleanupResult(deleted)
