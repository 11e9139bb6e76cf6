"""Warm a Spark session up for the writes that follow: one small write through it, thrown away.

A session's first write starts its Python workers (which import pyspark, pyarrow and synclog) and
has the JVM load and compile the classes of a write's plan; the second costs a fraction of it.
`synclog spark start` warms the shared session of the server it starts, so that the first sync
after it costs what later ones do.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from synclog.config import Config
from synclog.model import Behaviour, Connection, DestinationObject, Run, SourceObject
from synclog.storage.location import Location
from synclog.writer import SyncLog


def warm_up(spark: SparkSession) -> None:
    """One run of two batches (a NULL identifier, a repeated one, a rejection) written and
    finished through `spark` into a DuckDB file, all of it removed afterwards."""
    now = datetime.now(UTC)
    run = Run(
        org_id=1,
        workspace_id=1,
        sync_id=1,
        sync_run_id=1,
        primary_key="id",
        behaviour=Behaviour.UPSERT,
        source=Connection(1, "Warm::Connection", "warm-up"),
        source_object=SourceObject(1, "Table", "warm-up"),
        destination=Connection(2, "Warm::Connection", "warm-up"),
        destination_object=DestinationObject(2, "Object", "warm-up"),
        started_at=now,
    )
    with tempfile.TemporaryDirectory(prefix="synclog-warm-up-") as folder:
        config = Config(storage=Location.parse(str(Path(folder) / "storage")))
        with SyncLog.open(f"duckdb:///{Path(folder) / 'warm-up.duckdb'}", config, spark) as log:
            for batch in range(2):
                records = [
                    {
                        "record_identifier": None if i == 3 else f"{batch}-{i % 7}",
                        "operation": "upsert",
                        "status": "rejected" if i == 5 else "succeeded",
                        "status_message": "WARM: a rejection" if i == 5 else None,
                        "record_payload": '{"n": 1}',
                        "batch_number": batch,
                        "batch_started_at": now,
                        "batch_completed_at": now,
                    }
                    for i in range(10)
                ]
                log.write(run, records)
            log.finish(run)
