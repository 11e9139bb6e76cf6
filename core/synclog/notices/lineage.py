"""OpenLineage run events of sync runs, through the official client (the `lineage` extra).

One OpenLineage run cycle per sync run: START when its first batch is written, COMPLETE, FAIL
or ABORT when it finishes, and nothing after that, however often the run is written again
(`synclog.notices.notify` keeps which events were sent). The job is the sync (`sync-<id>` in
the configured namespace, with the `jobType` facet: BATCH); the input is the run's source
object; the outputs are its destination object (`outputStatistics`: the records it accepted)
and synclog's own tables, each named as the OpenLineage naming spec names datasets. The run id
is a UUID derived from (sync_id, sync_run_id), so a run written again is the same run, and the
`synclog_run` facet holds the run's records by status; its schema is published with the docs
(docs/openlineage/facets/). Where events go is the client's own configuration:
`OPENLINEAGE_URL`, `openlineage.yml` or `OPENLINEAGE__TRANSPORT__*` (http, file, console, ...).
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from synclog.model import DestinationObject, Run, SourceObject, as_utc
from synclog.naming import LineageDataset
from synclog.project import DOCS_URL, release_url

RUN_NAMESPACE = uuid.UUID("6f1e2d0c-5b7a-4c1e-9a55-73796e636c6f")
"""The uuid5 namespace of synclog's OpenLineage run ids."""
FACET = "synclog_run"
"""The custom run facet's key: prefixed with its producer's name, as custom facets are."""
FACET_SCHEMA_PATH = "openlineage/facets/1-0-0/SynclogRunFacet.json"
"""Where the facet's JSON schema is on the docs site (docs/ in the repository): one path per
version of the facet, never changed once published."""
EVENT_TYPES = {"succeeded": "COMPLETE", "failed": "FAIL", "partial": "FAIL", "aborted": "ABORT"}
"""The terminal event of each way a run ends (see `synclog.notices.rules.outcome`)."""
CONSOLE_LOGGER = "openlineage.client.transport.console"
"""The logger the client's console transport writes each event to, at INFO."""


def default_schema_url() -> str:
    """The facet's schema on the docs site of synclog's releases."""
    return f"{DOCS_URL}{FACET_SCHEMA_PATH}#/$defs/SynclogRunFacet"


@dataclass(frozen=True)
class LineageSettings:
    """`[notices.openlineage]`: the job namespace, and the URLs every event names."""

    namespace: str = "synclog"
    """The jobs' namespace (the sync's job is `sync-<id>` in it)."""
    producer: str = field(default_factory=release_url)
    """Every event's and facet's `producer`: this release's source."""
    schema_url: str = field(default_factory=default_schema_url)
    """The `synclog_run` facet's `_schemaURL` (a mirror of the published schema, say)."""


def run_id(sync_id: int, sync_run_id: int) -> str:
    """The OpenLineage run id of a sync run: the same for every event and every replay of it."""
    return str(uuid.uuid5(RUN_NAMESPACE, f"{sync_id}/{sync_run_id}"))


def source_dataset(run: Run) -> LineageDataset:
    """The run's input: what its source object says, else named by synclog's ids."""
    return _engine_dataset(run.source.id, run.source_object)


def destination_dataset(run: Run) -> LineageDataset:
    """The run's destination object as an output: what it says, else named by synclog's ids."""
    return _engine_dataset(run.destination.id, run.destination_object)


def _engine_dataset(connection_id: int, thing: SourceObject | DestinationObject) -> LineageDataset:
    """The dataset the engine named, else `synclog:connection:<id>` and `object:<id>`: stable,
    and plainly no warehouse's or API's own name."""
    if thing.lineage_namespace is not None and thing.lineage_name is not None:
        return LineageDataset(thing.lineage_namespace, thing.lineage_name)
    return LineageDataset(f"synclog:connection:{connection_id}", f"object:{thing.id}")


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


def event_type(outcome: str) -> str:
    """The event of a run's `outcome`: START while it is `running`, else its terminal event."""
    return "START" if outcome == "running" else EVENT_TYPES[outcome]


def run_event(
    run: Run,
    settings: LineageSettings,
    outcome: str,
    at: datetime,
    statuses: Mapping[str, int],
    accepted: int,
    tables: Sequence[LineageDataset],
) -> Any:
    """The RunEvent of `run` at `at`: START while it is `running`, else its terminal event.

    `accepted`: the records the destination took (succeeded, flagged or not); `tables`:
    synclog's own tables written for the run.
    """
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, RunEvent, RunState
    from openlineage.client.event_v2 import Run as LineageRun
    from openlineage.client.facet_v2 import job_type_job, output_statistics_output_dataset

    producer = settings.producer
    facet = _run_facet_class()(
        syncId=run.sync_id,
        syncRunId=run.sync_run_id,
        outcome=outcome,
        records=sum(statuses.values()),
        statuses=dict(statuses),
        producer=producer,
    )
    facet._schemaURL = settings.schema_url
    destination_facets: dict[str, Any] = {}
    if outcome != "running":
        taken = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=accepted, producer=producer
        )
        destination_facets["outputStatistics"] = taken
    source, destination = source_dataset(run), destination_dataset(run)
    return RunEvent(
        eventType=RunState[event_type(outcome)],
        eventTime=as_utc(at).isoformat(),
        run=LineageRun(runId=run_id(run.sync_id, run.sync_run_id), facets={FACET: facet}),
        job=Job(
            namespace=settings.namespace,
            name=f"sync-{run.sync_id}",
            facets={
                "jobType": job_type_job.JobTypeJobFacet(
                    processingType="BATCH", integration="SYNCLOG", jobType="SYNC", producer=producer
                )
            },
        ),
        inputs=[InputDataset(namespace=source.namespace, name=source.name)],
        outputs=[
            OutputDataset(
                namespace=destination.namespace, name=destination.name, outputFacets=destination_facets
            ),
            *(OutputDataset(namespace=table.namespace, name=table.name) for table in tables),
        ],
        producer=producer,
    )


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
                return default_schema_url()

        _FACET_CLASS = SynclogRunFacet
    return _FACET_CLASS


def client() -> Any:
    """The OpenLineage client, configured the client's standard way."""
    from openlineage.client import OpenLineageClient

    return OpenLineageClient()


class _Stderr(logging.Handler):
    """Each record on the standard error stream of the moment."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")


def show_console_events() -> None:
    """Show the events of the client's console transport (INFO records of `CONSOLE_LOGGER`) on
    standard error: for the CLI, a process that configures no logging of its own."""
    logger = logging.getLogger(CONSOLE_LOGGER)
    logger.setLevel(logging.INFO)
    if not any(isinstance(handler, _Stderr) for handler in logger.handlers):
        logger.addHandler(_Stderr())
