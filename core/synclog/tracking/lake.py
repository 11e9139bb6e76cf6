"""Sync Tracking over the lake layout's files, read by its target's `query` (the lake's DuckDB).

Records: the run's records files; sync, run and batch come from each file's path. Statuses:
succeeded as stored; NULL and DUPLICATE are invalid; a rejection with the "Not attempted"
message is aborted (the lake keeps the engine's own message for an aborted record when it gave
one: such a record reads as rejected); any other rejection is rejected.

Runs: start, end and status from each run's metadata.json (written once the run has finished),
records counted from its files. A run whose batches are written but that has not finished yet
has no metadata.json: it starts at its first batch and its status is `running`.
"""

from __future__ import annotations

import pyarrow as pa

from synclog.layouts.lake import ABORTED_MESSAGE
from synclog.tracking.base import (
    RUN_COUNTS,
    SYNCS,
    LayoutTracking,
    RunQuery,
    Source,
    Tracked,
    conform,
    counts,
    literal,
    page,
    syncs_sql,
)

_PATH = r"'/(\d+)/(\d+)/[a-z_]+\.(\d+)\.parquet$'"
"""…/SYNC_ID/SYNC_RUN_ID/<batch type>.<batch number>.parquet"""
_NUMBERS = tuple(RUN_COUNTS.names[RUN_COUNTS.names.index("records") :])
"""The counts of `RUN_COUNTS`: records, then records per state."""
_COUNTED = {
    "sync_id": "BIGINT",
    "sync_run_id": "BIGINT",
    "first_batch": "TIMESTAMPTZ",
    **dict.fromkeys(_NUMBERS, "BIGINT"),
}
_METADATA = {
    "sync_id": "BIGINT",
    "sync_run_id": "BIGINT",
    "started_at": "TIMESTAMPTZ",
    "finished_at": "TIMESTAMPTZ",
    "status": "VARCHAR",
    "extra": "VARCHAR",
}


class LakeTracking(LayoutTracking):
    """Records and runs from the lake's `sync_tracking_datasets` folder."""

    table_name = "sync_tracking_datasets"

    def _glob(self, sync_id: int | None, run: str, name: str) -> str | None:
        """The lake URI matching `name` in the sync's runs (every sync's, for None), or None when
        no file matches."""
        sync = "*" if sync_id is None else str(int(sync_id))
        pattern = self.target.uri(f"sync_tracking_datasets/*/{sync}/{run}/{name}")
        found = self.target.query("SELECT COUNT(*) FROM glob(?)", [pattern]).column(0)[0].as_py()
        return pattern if found else None

    def source(self, sync_id: int | None, sync_run_id: int | None = None) -> Source | None:
        """The records of one sync (of one run, if given), or of every sync when `sync_id` is None."""
        files = self._glob(sync_id, "*" if sync_run_id is None else str(int(sync_run_id)), "*.parquet")
        if files is None:
            return None
        tracked = (
            f"CASE WHEN status IN ('NULL', 'DUPLICATE') THEN '{Tracked.INVALID}' "
            f"WHEN status = 'succeeded' THEN '{Tracked.SUCCEEDED}' "
            f"WHEN status_message = {literal(ABORTED_MESSAGE)} THEN '{Tracked.ABORTED}' "
            f"ELSE '{Tracked.REJECTED}' END"
        )
        path = [f"CAST(regexp_extract(filename, {_PATH}, {group}) AS BIGINT)" for group in (1, 2, 3)]
        sql = (
            f"SELECT {path[0]} AS sync_id, {path[1]} AS sync_run_id, {path[2]} AS batch_number, "
            f"identifier AS record_identifier, operation, {tracked} AS tracked_status, "
            "status AS layout_status, status_message, error_code, batch_started_at, "
            "batch_ended_at AS batch_completed_at, record_payload, filename, file_row_number "
            "FROM read_parquet(?, filename = true, file_row_number = true, union_by_name = true)"
        )
        return Source(sql, [files], ("filename", "file_row_number"))

    def runs(self, query: RunQuery) -> pa.Table:
        source = self.source(query.sync_id)
        metadata = self._glob(query.sync_id, "*", "metadata.json")
        if source is None and metadata is None:
            return RUN_COUNTS.empty_table()
        params: list[object] = []
        counted = _nothing(_COUNTED)
        if source is not None:
            counted = (
                "SELECT sync_id, sync_run_id, MIN(batch_started_at) AS first_batch, COUNT(*) AS records, "
                f"{counts()} FROM ({source.sql}) t GROUP BY sync_id, sync_run_id"
            )
            params.extend(source.params)
        described = _nothing(_METADATA)
        if metadata is not None:
            described = (
                "SELECT CAST(json ->> 'sync_id' AS BIGINT) AS sync_id, "
                "CAST(json ->> 'sync_run_id' AS BIGINT) AS sync_run_id, "
                "CAST(json ->> 'sync_run_started_at' AS TIMESTAMPTZ) AS started_at, "
                "CAST(json ->> 'sync_run_finished_at' AS TIMESTAMPTZ) AS finished_at, "
                "json ->> 'sync_run_status' AS status, json ->> 'extra' AS extra "
                "FROM read_json_objects(?)"
            )
            params.append(metadata)
        numbers = ", ".join(f"COALESCE(c.{name}, 0) AS {name}" for name in _NUMBERS)
        sql = (
            f"WITH c AS ({counted}), m AS ({described}) SELECT COALESCE(m.sync_id, c.sync_id) AS sync_id, "
            "COALESCE(m.sync_run_id, c.sync_run_id) AS sync_run_id, "
            "COALESCE(m.started_at, c.first_batch) AS started_at, m.finished_at, "
            f"COALESCE(m.status, 'running') AS status, m.extra, {numbers} "
            "FROM m FULL OUTER JOIN c ON m.sync_id = c.sync_id AND m.sync_run_id = c.sync_run_id "
            f"ORDER BY started_at DESC, sync_run_id DESC{page(query.limit, query.offset)}"
        )
        return conform(self.target.query(sql, params), RUN_COUNTS)

    def syncs(self, limit: int = 1000) -> pa.Table:
        source = self.source(None)
        if source is None:
            return SYNCS.empty_table()
        runs = (
            "SELECT sync_id, sync_run_id, COUNT(*) AS records, MIN(batch_started_at) AS started_at "
            f"FROM ({source.sql}) t GROUP BY sync_id, sync_run_id"
        )
        return conform(self.target.query(syncs_sql(runs, limit), source.params), SYNCS)


def _nothing(columns: dict[str, str]) -> str:
    """A SELECT of no rows with `columns` (name → DuckDB type), standing in for files there are none of."""
    return (
        "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {name}" for name, t in columns.items()) + " WHERE false"
    )
