"""The run description: parsed from JSON/TOML with one clear error for what is wrong."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest

from synclog.errors import InputError
from synclog.model import Behaviour, Run
from synclog_testing.factories import make_run


def run_dict() -> dict[str, object]:
    return make_run().to_dict()


def test_round_trip_through_json(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_dict()))
    run = Run.from_file(path)
    assert run == make_run(started_at=run.started_at)
    assert run.behaviour is Behaviour.MIRROR
    assert run.started_at.tzinfo is UTC


def test_toml_run_file(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(
        """org_id = 1
workspace_id = 2
sync_id = 3
sync_run_id = 4
primary_key = "email"
behaviour = "upsert"
started_at = 2026-11-20T10:00:00Z
source = { id = 5, type = "Snowflake::Connection" }
source_object = { id = 6, type = "DataWarehouse::Table", name = "USERS" }
destination = { id = 7, type = "Braze::Connection" }
destination_object = { id = 8, type = "Braze::ObjectTypes::User", name = "User" }
"""
    )
    run = Run.from_file(path)
    assert (run.sync_id, run.destination_object.name) == (3, "User")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sync_id": None}, "'sync_id' must be an integer"),
        ({"sync_id": "12"}, "'sync_id' must be an integer, got '12'"),
        ({"behaviour": "teleport"}, "'behaviour' is 'teleport', expected one of update"),
        ({"started_at": "yesterday"}, "'started_at' must be an ISO-8601 timestamp"),
        ({"colour": "blue"}, "unknown key 'colour'"),
        ({"source": {"id": 1}}, "missing key 'source.type'"),
        ({"source_object": "x"}, "'source_object' must be an object"),
    ],
)
def test_bad_run_descriptions_name_the_problem(change: dict[str, object], message: str) -> None:
    data = {**run_dict(), **change}
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        Run.from_dict(data)


def test_missing_key_is_named() -> None:
    data = run_dict()
    del data["primary_key"]
    with pytest.raises(InputError, match="missing key 'primary_key'"):
        Run.from_dict(data)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read run description"):
        Run.from_file(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="is not valid"):
        Run.from_file(bad)
