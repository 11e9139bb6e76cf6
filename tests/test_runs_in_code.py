"""A run built in code from an engine's string ids: one stable mapping to integer ids, the names kept."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog import (
    Behaviour,
    Connection,
    DestinationObject,
    Run,
    RunStatus,
    SourceObject,
    SyncLog,
    stable_id,
)
from synclog.cli.main import main
from synclog.config import Config
from synclog.ids import id_of
from synclog.storage.location import Location

RUN_UUID = "5f0c3f8e-2d7b-4c1e-9a43-0e2b8d1c7a10"


def test_stable_id_is_pinned() -> None:
    """The mapping is a contract: these values must never change between versions."""
    assert stable_id("users_to_crm") == 2478348025318369222
    assert stable_id("") == 8203414616412130826  # SHA-256 of "" starts e3b0c44298fc1c14
    assert all(0 <= stable_id(name) < 2**63 for name in ("a", "b", RUN_UUID, "é" * 100))


def test_command_line_ids_take_a_name_or_a_number() -> None:
    assert id_of("42") == 42
    assert id_of("users_to_crm") == stable_id("users_to_crm")
    assert id_of("-1") == stable_id("-1")


def engine_run() -> Run:
    """What a Python engine that names things by strings builds, as docs/engines/index.md shows it."""
    return Run(
        org_id=stable_id("acme"),
        workspace_id=stable_id("acme/prod"),
        sync_id=stable_id("users_to_crm"),
        sync_run_id=stable_id(RUN_UUID),
        primary_key="email",
        behaviour=Behaviour.UPSERT,
        source=Connection(stable_id("warehouse"), "Postgres::Connection", "warehouse"),
        source_object=SourceObject(stable_id("public.users"), "Table", "public.users"),
        destination=Connection(stable_id("crm"), "HTTP::Connection", "crm"),
        destination_object=DestinationObject(stable_id("contacts"), "Contact", "contacts"),
        started_at=datetime(2026, 11, 25, 12, 0, tzinfo=UTC),
        finished_at=datetime(2026, 11, 25, 12, 1, tzinfo=UTC),
        status=RunStatus.SUCCEEDED,
        extra={"sync_name": "users_to_crm", "run_id": RUN_UUID},
    )


def test_a_run_in_code_is_found_by_its_sync_name(
    tmp_path: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    run = engine_run()
    records = [
        {
            "record_identifier": f"u{i}@example.com",
            "operation": "upsert",
            "status": "rejected" if i == 2 else "succeeded",
            "status_message": "INVALID_EMAIL" if i == 2 else None,
            "record_payload": json.dumps({"email": f"u{i}@example.com"}),
            "batch_number": 0,
            "batch_started_at": datetime(2026, 11, 25, 12, 0, 5),
            "batch_completed_at": datetime(2026, 11, 25, 12, 0, 9),
        }
        for i in range(4)
    ]
    lake = f"lake:///{tmp_path / 'lake'}"
    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    with SyncLog.open(lake, config, spark) as log:
        assert log.write_run(run, records).statuses == {"succeeded": 3, "rejected": 1}

    (metadata,) = (tmp_path / "lake").rglob("metadata.json")
    stored = json.loads(metadata.read_text())
    assert stored["extra"] == run.extra
    assert stored["sync_id"] == stable_id("users_to_crm")

    assert main(["runs", "--sync", "users_to_crm", "--target", lake]) == 0
    listed = capsys.readouterr().out
    assert str(stable_id(RUN_UUID)) in listed and "succeeded" in listed
