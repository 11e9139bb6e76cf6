"""The lake layout's mapping of the canonical frame: statuses, operations, batch types, metadata."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from synclog.canonical import canonical_frame
from synclog.capabilities import Capabilities
from synclog.config import Config
from synclog.layouts.base import LayoutContext
from synclog.layouts.lake import (
    ABORTED_MESSAGE,
    DESTINATION_OBJECTS,
    DESTINATIONS,
    FILES,
    RECORDS,
    RUN_METADATA,
    SOURCE_OBJECTS,
    LakeLayout,
)
from synclog.layouts.registry import layout
from synclog.payload_schema import payload_schema
from synclog.records import VIOLATION
from synclog.storage.location import Location
from synclog.targets.lake_files import PathTemplate
from synclog.writer import SyncLog
from synclog_testing.factories import make_records, make_run, record_rows

CAPS = Capabilities(json_type="STRING", layouts=("lake",))


def lake_records(spark: SparkSession, rows: list[tuple[object, ...]]) -> list[dict[str, object]]:
    run = make_run()
    frame = canonical_frame(run, make_records(spark, rows), datetime.now(UTC)).drop(VIOLATION)
    (load,) = LakeLayout().batch_rows(LayoutContext(run, frame, CAPS))
    assert load.table is RECORDS
    return [row.asDict() for row in load.rows.frame().collect()]


def test_the_lake_layout_is_registered() -> None:
    assert isinstance(layout("lake"), LakeLayout)
    assert set(LakeLayout.tables) == set(FILES)


def test_statuses_operations_and_batch_types(spark: SparkSession) -> None:
    run = make_run()
    base = record_rows(run, count=6, null_at=(5,), duplicate_of={4: 3})
    given = [
        ("upsert", "succeeded", None),
        ("update", "rejected", "Bad email"),
        ("create", "aborted", None),
        ("delete", "aborted", "Run cancelled"),  # also a duplicate: the check's flag is the status
        ("append", "succeeded", None),  # the other duplicate
        ("mirror", "succeeded", None),  # NULL identifier
    ]
    rows = [(r[0], *g, *r[4:]) for r, g in zip(base, given, strict=True)]
    got = [
        (r["operation"], r["batch_type"], r["status"], r["status_message"], r["destination_status"])
        for r in lake_records(spark, rows)
    ]
    assert sorted(got, key=str) == sorted(
        [
            ("upsert", "records_upserted", "succeeded", None, "succeeded"),
            ("update", "records_updated", "rejected", "Bad email", "rejected"),
            ("append", "records_appended", "rejected", ABORTED_MESSAGE, "rejected"),
            ("delete", "records_deleted", "DUPLICATE", "Run cancelled", "rejected"),
            ("append", "records_appended", "DUPLICATE", None, "succeeded"),
            ("mirror", "records_mirrored", "NULL", None, "succeeded"),
        ],
        key=str,
    )


def test_an_aborted_record_keeps_the_engines_message(spark: SparkSession) -> None:
    run = make_run()
    (row,) = record_rows(run, count=1, null_at=())
    records = lake_records(spark, [(row[0], "upsert", "aborted", "Run cancelled by user", *row[4:])])
    assert [(r["status"], r["status_message"]) for r in records] == [("rejected", "Run cancelled by user")]


def test_records_rows_carry_the_file_columns_and_their_placement(spark: SparkSession) -> None:
    run = make_run()
    (record,) = lake_records(spark, record_rows(run, count=1, null_at=()))
    placement = set(PathTemplate(FILES[RECORDS]).fields)
    assert set(record) == set(RECORDS.column_names()) | placement
    assert placement == {"org_id", "sync_id", "sync_run_id", "batch_type", "batch_number"}
    assert record["batch_ended_at"] > record["batch_started_at"]
    assert record["identifier"] == "user1234-0@example.com"


def test_run_rows_are_the_metadata_and_the_facts(spark: SparkSession) -> None:
    run = make_run(org_id=7)
    frame = canonical_frame(run, make_records(spark, record_rows(run, count=4)), datetime.now(UTC))
    loads = LakeLayout().run_rows(LayoutContext(run, frame.drop(VIOLATION), CAPS))
    out = {load.table: load.rows.frame() for load in loads}
    assert list(out) == [RUN_METADATA, SOURCE_OBJECTS, DESTINATIONS, DESTINATION_OBJECTS]
    (metadata,) = [row.asDict() for row in out[RUN_METADATA].collect()]
    assert metadata["organization_id"] == 7
    assert json.loads(str(metadata["record_payload_schema"])) == {
        "email": "string",
        "plan": "string",
        "seats": "number",
    }
    for fact in (SOURCE_OBJECTS, DESTINATIONS, DESTINATION_OBJECTS):
        assert [row["org_id"] for row in out[fact].collect()] == [7]
        assert out[fact].columns == [*fact.column_names(), "org_id"]


@pytest.mark.parametrize(
    ("payloads", "expected"),
    [
        (['{"a": 1, "b": 2.5, "c": "x"}'], {"a": "number", "b": "number", "c": "string"}),
        (['{"a": [1], "b": {"c": 1}, "d": false}'], {"a": "array", "b": "object", "d": "boolean"}),
        (['{"a": null}', '{"a": "x"}'], {"a": "string"}),
        (['{"a": null}'], {"a": "null"}),
        (['{"a": 1}', '{"a": "1"}', '{"a": true}'], {"a": ["boolean", "number", "string"]}),
        (["[1, 2]", '"text"', None], {}),
    ],
)
def test_payload_schema(spark: SparkSession, payloads: list[str | None], expected: dict[str, object]) -> None:
    frame = spark.createDataFrame([(p,) for p in payloads], "record_payload string")
    assert payload_schema(frame) == expected


def test_writes_compute_the_payload_schema_of_the_batches_kept(spark: SparkSession, tmp_path: Path) -> None:
    """metadata.json's schema comes from the writes' own tasks (no pass of its own) and equals a
    pass over the batches kept: a batch written again drops what its earlier copy held."""
    run = make_run()
    rows = record_rows(run, count=8, batches=2)

    def with_payload(batch: int, payload: str) -> list[tuple[object, ...]]:
        return [(*r[:4], payload, *r[5:]) for r in rows if r[5] == batch]

    config = Config(storage=Location.parse(str(tmp_path / "storage")))
    with SyncLog.open(f"lake:///{tmp_path / 'lake'}", config, spark) as log:
        log.write(run, make_records(spark, with_payload(0, '{"a": 1, "gone": true}')))
        log.write(run, make_records(spark, with_payload(1, '{"a": "x", "b": null}')))
        log.write(run, make_records(spark, with_payload(0, '{"a": 2, "c": {"d": 1}}')))  # replaces batch 0
        recorded = log.store.payload_schema(run)
        expected = payload_schema(log.store.read(spark, run))
        log.finish(run)
    assert recorded == expected == {"a": ["number", "string"], "b": "null", "c": "object"}
    (metadata,) = (tmp_path / "lake").rglob("metadata.json")
    assert json.loads(metadata.read_text())["record_payload_schema"] == expected
