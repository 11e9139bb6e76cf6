"""Sync Tracking: a sync's logged records and its runs, read back from whichever layout holds them.

`find_records`, `find_runs` and `find_syncs` answer with Arrow tables of fixed columns
(`RECORDS`, `RUNS`, `SYNCS`), a page at a time (limit, offset), whatever the layout. Statuses
are mapped to one vocabulary (`Tracked`: succeeded, rejected, invalid, aborted; `failed` filters
rejected and invalid); each layout module says how its own statuses map.
"""

from __future__ import annotations

import pyarrow as pa

from synclog.errors import ConfigError, TargetError
from synclog.layouts.census import SYNC_LOG
from synclog.layouts.hightouch import CHANGELOG
from synclog.layouts.lake import RECORDS as LAKE_RECORDS
from synclog.targets.base import Target
from synclog.targets.tables import TableSpec
from synclog.tracking.base import RECORDS, RUNS, SYNCS, LayoutTracking, RecordQuery, RunQuery, Tracked
from synclog.tracking.lake import LakeTracking
from synclog.tracking.warehouse import CensusTracking, HightouchTracking

__all__ = [
    "RECORDS",
    "RUNS",
    "SYNCS",
    "RecordQuery",
    "RunQuery",
    "Tracked",
    "find_records",
    "find_runs",
    "find_syncs",
    "held_layouts",
    "tracking",
]

_TRACKED: dict[str, TableSpec] = {"census": SYNC_LOG, "hightouch": CHANGELOG, "lake": LAKE_RECORDS}
"""The table each layout keeps its records in."""


def find_records(target: Target, query: RecordQuery, layout: str | None = None) -> pa.Table:
    """The sync's records matching `query` (`RECORDS` columns), newest batch first."""
    return tracking(target, layout).records(query)


def find_runs(target: Target, query: RunQuery, layout: str | None = None) -> pa.Table:
    """The sync's runs (`RUNS` columns), newest first."""
    return tracking(target, layout).runs_with_errors(query)


def find_syncs(target: Target, layout: str | None = None, limit: int = 1000) -> pa.Table:
    """Every sync the layout holds (`SYNCS` columns), the one run last first."""
    return tracking(target, layout).syncs(limit)


def held_layouts(target: Target) -> list[str]:
    """The layouts whose records `target` holds, in the target's order."""
    return [name for name in target.capabilities.layouts if target.existing_tables([_TRACKED[name]])]


def tracking(target: Target, layout: str | None = None) -> LayoutTracking:
    """The queries over `layout` on `target`, or over the first layout the target holds records in.

    Raises ConfigError when the target cannot hold `layout`, TargetError when it holds no records.
    """
    held = target.capabilities.layouts
    if layout is not None and layout not in held:
        raise ConfigError(f"{target.url} cannot hold the {layout!r} layout (it holds: {', '.join(held)})")
    chosen = [layout] if layout is not None else list(held)
    for name in chosen:
        if target.existing_tables([_TRACKED[name]]):
            return _queries(target, name)
    where = ", ".join(_shown(target, name) for name in chosen)
    raise TargetError(
        f"{target.url} has no {where}: no sync has been logged there with the {' or '.join(chosen)} layout"
    )


_QUERIES: dict[str, type[LayoutTracking]] = {
    "census": CensusTracking,
    "hightouch": HightouchTracking,
    "lake": LakeTracking,
}
"""Each layout's queries: through `Target.query` on whichever target holds the layout (and, for
the lake, where its files are: `Target.uri`)."""


def _queries(target: Target, layout: str) -> LayoutTracking:
    return _QUERIES[layout](target)


def _shown(target: Target, layout: str) -> str:
    table = _TRACKED[layout]
    return str(target.relation(table, table.view))
