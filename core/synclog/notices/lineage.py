"""OpenLineage run events of sync runs, through the official client (the `lineage` extra).

One OpenLineage run per sync run: START when its first batch is written, COMPLETE, FAIL or
ABORT when it finishes. The job is the sync (`sync-<id>` in the configured namespace, with the
`jobType` facet: BATCH); the input is the run's source object; the outputs are its destination
object (`outputStatistics`: the records it took) and synclog's own tables. The run id is a
UUID derived from (sync_id, sync_run_id), so a run written again sends the same run, and the
`synclog_run` facet (schema: SynclogRunFacet.json beside this module) holds the run's records
by status. Where events go is the client's own configuration: `OPENLINEAGE_URL`,
`openlineage.yml` or `OPENLINEAGE__TRANSPORT__*` (http, file, console, ...).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from synclog.model import Run

RUN_NAMESPACE = uuid.UUID("6f1e2d0c-5b7a-4c1e-9a55-73796e636c6f")
"""The uuid5 namespace of synclog's OpenLineage run ids."""
FACET = "synclog_run"
"""The custom run facet's key: prefixed with its producer's name, as custom facets are."""
FACET_SCHEMA_URL = "urn:synclog:openlineage:SynclogRunFacet:1-0-0#/$defs/SynclogRunFacet"
"""The facet's `_schemaURL`: the `$id` of SynclogRunFacet.json, which ships with synclog."""
EVENT_TYPES = {"succeeded": "COMPLETE", "failed": "FAIL", "partial": "FAIL", "aborted": "ABORT"}
"""The terminal event of each way a run ends (see `synclog.notices.rules.outcome`)."""


def producer() -> str:
    """The `producer` of every event: synclog and its version."""
    try:
        return f"urn:synclog:{version('synclog')}"
    except PackageNotFoundError:  # pragma: no cover - synclog run from a source tree
        return "urn:synclog"


def run_id(sync_id: int, sync_run_id: int) -> str:
    """The OpenLineage run id of a sync run: the same for every event and every replay of it."""
    return str(uuid.uuid5(RUN_NAMESPACE, f"{sync_id}/{sync_run_id}"))


def available() -> str | None:
    """None when the OpenLineage client is installed, else why not."""
    try:
        import openlineage.client  # noqa: F401
    except ImportError as exc:
        return (
            f"OpenLineage events need the lineage extra ({exc.name} is missing): "
            "pip install 'synclog[lineage]'"
        )
    return None


def run_event(
    run: Run,
    namespace: str,
    outcome: str,
    statuses: Mapping[str, int],
    tables: Sequence[tuple[str, str]],
) -> Any:
    """The RunEvent of `run`: START while it is `running`, else its terminal event.

    `tables` are synclog's own tables written for the run, as (namespace, name).
    """
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, RunEvent, RunState
    from openlineage.client.event_v2 import Run as LineageRun
    from openlineage.client.facet_v2 import job_type_job, output_statistics_output_dataset

    started = outcome == "running"
    moment = run.started_at if started else (run.finished_at or datetime.now(UTC))
    records = sum(statuses.values())
    facet = _run_facet_class()(
        syncId=run.sync_id,
        syncRunId=run.sync_run_id,
        outcome=outcome,
        records=records,
        statuses=dict(statuses),
        producer=producer(),
    )
    destination_facets: dict[str, Any] = {}
    if not started:
        taken = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=statuses.get("succeeded", 0), producer=producer()
        )
        destination_facets["outputStatistics"] = taken
    return RunEvent(
        eventType=RunState.START if started else RunState[EVENT_TYPES[outcome]],
        eventTime=moment.astimezone(UTC).isoformat(),
        run=LineageRun(runId=run_id(run.sync_id, run.sync_run_id), facets={FACET: facet}),
        job=Job(
            namespace=namespace,
            name=f"sync-{run.sync_id}",
            facets={
                "jobType": job_type_job.JobTypeJobFacet(
                    processingType="BATCH", integration="SYNCLOG", jobType="SYNC", producer=producer()
                )
            },
        ),
        inputs=[
            InputDataset(namespace=_namespace(run.source.type, run.source.id), name=run.source_object.name)
        ],
        outputs=[
            OutputDataset(
                namespace=_namespace(run.destination.type, run.destination.id),
                name=run.destination_object.name,
                outputFacets=destination_facets,
            ),
            *(OutputDataset(namespace=where, name=name) for where, name in tables),
        ],
        producer=producer(),
    )


def _namespace(connection_type: str, connection_id: int) -> str:
    """A connection as a dataset namespace: `salesforce://connection-301` for `Salesforce::Connection`."""
    kind = connection_type.split("::")[0].lower() or "connection"
    return f"{kind}://connection-{connection_id}"


_FACET_CLASS: Any = None


def _run_facet_class() -> Any:
    """The `synclog_run` facet's class (defined once the client is importable)."""
    global _FACET_CLASS
    if _FACET_CLASS is None:
        import attr
        from openlineage.client.facet_v2 import RunFacet

        @attr.define
        class SynclogRunFacet(RunFacet):
            syncId: int  # OpenLineage's camelCase
            syncRunId: int
            outcome: str
            records: int
            statuses: dict[str, int]

            @staticmethod
            def _get_schema() -> str:
                return FACET_SCHEMA_URL

        _FACET_CLASS = SynclogRunFacet
    return _FACET_CLASS


def client() -> Any:
    """The OpenLineage client, configured the client's standard way."""
    from openlineage.client import OpenLineageClient

    return OpenLineageClient()
