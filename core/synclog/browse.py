"""Sync Tracking's record view over the census `sync_log`: filter, search, sample."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import pyarrow as pa

from synclog.errors import TargetError
from synclog.layouts.census import SYNC_LOG
from synclog.targets.base import Target


class StatusFilter(StrEnum):
    """The record states the Sync Tracking view filters on."""

    SUCCEEDED = "succeeded"
    REJECTED = "rejected"
    INVALID = "invalid"


@dataclass(frozen=True)
class RecordQuery:
    """Which logged records to show."""

    sync_id: int
    sync_run_id: int | None = None
    status: StatusFilter | None = None
    identifier: str | None = None
    limit: int = 100


def find_records(target: Target, query: RecordQuery) -> pa.Table:
    """The matching rows of `sync_log`, newest batch first (values are bound, never pasted).

    Raises TargetError when the target holds no census `sync_log` to look in.
    """
    view = target.relation(SYNC_LOG, SYNC_LOG.view)
    if not target.existing_tables([SYNC_LOG]):
        raise TargetError(f"{target.url} has no {view}: no sync has been logged there with the census layout")
    p = target.placeholder
    where: list[str] = ["sync_id = " + p]
    params: list[object] = [query.sync_id]
    if query.sync_run_id is not None:
        where.append("sync_run_id = " + p)
        params.append(query.sync_run_id)
    if query.identifier is not None:
        where.append("record_identifier = " + p)
        params.append(query.identifier)
    if query.status is StatusFilter.INVALID:
        where.append("invalid_reason IS NOT NULL")
    elif query.status is not None:
        where.append(f"status = {p} AND invalid_reason IS NULL")
        params.append(query.status.value)
    sql = (
        "SELECT sync_run_id, batch_number, record_identifier, operation, status, invalid_reason, "
        f"status_message, batch_started_at, record_payload FROM {view.render()} "
        f"WHERE {' AND '.join(where)} "
        f"ORDER BY batch_started_at DESC, record_identifier LIMIT {int(query.limit)}"
    )
    return target.query(sql, params)
