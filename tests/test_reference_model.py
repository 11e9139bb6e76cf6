"""The reference model (`synclog_testing.reference`) against runs worked out by hand.

The model tests compare every target with the model; these compare the model with answers
reached without it: the seeds' columns and examples (Census' sync_log, Sync Tracking's files,
Hightouch's changelog, snapshot and sync_runs), the payload policy (docs/analysts/privacy.md,
its digests by openssl), and the choices the model states where the docs are silent (`log_id`,
the error code, the snapshot's `fields_hash`, the marker of a payload past a JSON size limit),
each worked out here, as literal rows or with its formula written out from the docs.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from synclog.errors import InputError
from synclog.layouts.hightouch import LatestRun, refuse_older
from synclog.model import Run, RunStatus
from synclog.privacy import Mask, PayloadPolicy
from synclog_testing.factories import make_run
from synclog_testing.reference import Layouts, Record, ReferenceLog, Refused
from synclog_testing.reference.hightouch import fields_hash
from synclog_testing.reference.payloads import fit_json
from synclog_testing.reference.records import error_code_of, log_id, logged

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
REJECTED = "INVALID_EMAIL_ADDRESS: Email: invalid email address"
NOT_ATTEMPTED = "Not attempted: the run ended before this record was sent"
"""docs/engines/index.md: an aborted record is `rejected`, "Not attempted: …" in census and the lake."""
US = "\x1f"
"""The unit separator U+001F that joins the parts of a `log_id`."""


def sha32(text: str) -> str:
    """The first 32 hex digits of the SHA-256 of `text` (UTF-8): how `log_id` and `fields_hash` are cut."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def record(
    identifier: str | None,
    operation: str,
    status: str,
    payload: str,
    batch: int = 0,
    message: str | None = None,
    at: datetime = T0,
    **optional: Any,
) -> Record:
    """A record of `batch`, which started `batch` minutes after `at` and took 30 seconds."""
    started = at + timedelta(minutes=batch)
    return Record(
        identifier,
        operation,
        status,
        message,
        payload,
        batch,
        started,
        started + timedelta(seconds=30),
        **optional,
    )


def rows(model: ReferenceLog, table: str) -> Counter[tuple[tuple[str, Any], ...]]:
    return model.tables()[table]


def as_rows(*dicts: dict[str, Any]) -> Counter[tuple[tuple[str, Any], ...]]:
    return Counter(tuple(sorted(d.items())) for d in dicts)


# ---- the choices the seeds leave open, each worked out from its documented formula


def test_log_id_is_the_documented_hash_of_sync_run_batch_identifier_and_occurrence() -> None:
    """docs/analysts/layouts.md: SHA-256 of sync_id, sync_run_id, batch_number, the identifier (NUL
    for none) and its occurrence joined by U+001F, its first 32 hex digits."""
    assert log_id(1234, 5678, 0, "a@example.com", 1) == "0e5218144a16b2fc76d1511003589340"
    assert sha32(f"1234{US}5678{US}0{US}a@example.com{US}1") == "0e5218144a16b2fc76d1511003589340"
    assert log_id(1234, 5678, 0, None, 1) == sha32(f"1234{US}5678{US}0{US}\x00{US}1")
    assert log_id(1234, 5678, 1, "c@example.com", 2) == "1339810a1955e061de75f4591d1b32a1"
    # Each part counts: another sync, run, batch or occurrence is another id.
    ids = {
        log_id(1234, 5678, 0, "a", 1),
        log_id(1235, 5678, 0, "a", 1),
        log_id(1234, 5679, 0, "a", 1),
        log_id(1234, 5678, 1, "a", 1),
        log_id(1234, 5678, 0, "a", 2),
        log_id(1234, 5678, 0, None, 1),
    }
    assert len(ids) == 6


def test_occurrences_follow_the_documented_order_not_the_order_records_arrived_in() -> None:
    """Records of one batch sharing an identifier are numbered by operation, status, payload,
    message, …, NULL first: `append` < `mirror`, and a message of None before any text."""
    mirror = record("c@example.com", "mirror", "aborted", '{"n": 1}', batch=1)
    append = record("c@example.com", "append", "succeeded", '{"n": 1}', batch=1)
    for given in ([mirror, append], [append, mirror]):
        ids = {r.record.operation: r.log_id for r in logged(1234, 5678, given)}
        assert ids == {
            "append": "f820b06b5e8a20a95e8e604079ec1a02",  # occurrence 1
            "mirror": "1339810a1955e061de75f4591d1b32a1",  # occurrence 2
        }
    no_message = record("d", "upsert", "rejected", "{}")
    with_message = record("d", "upsert", "rejected", "{}", message="boom")
    ids = {r.record.status_message: r.log_id for r in logged(1, 2, [with_message, no_message])}
    assert ids == {None: sha32(f"1{US}2{US}0{US}d{US}1"), "boom": sha32(f"1{US}2{US}0{US}d{US}2")}


@pytest.mark.parametrize(
    ("status", "message", "given", "code"),
    [
        # docs/engines/index.md's own examples of the default pattern
        ("rejected", "INVALID_EMAIL: a@b.c", None, "INVALID_EMAIL"),
        ("rejected", "429 Too Many Requests: slow down", None, "429 Too Many Requests"),
        ("rejected", "a@b.c: no such user", None, None),  # an echoed value is no code
        # at most six words of letters, digits and _.- before the first colon
        ("rejected", "one two three four five six: x", None, "one two three four five six"),
        ("rejected", "one two three four five six seven: x", None, None),
        ("rejected", "  rate.limit-2:x", None, "rate.limit-2"),
        ("rejected", "no colon at all", None, None),
        ("aborted", "QUOTA: exhausted", None, "QUOTA"),  # aborted did not succeed either
        ("succeeded", "NOTE: fine", None, None),  # a record that succeeded has no error code
        # the engine's own code wins, trimmed; an empty one is none
        ("rejected", "INVALID_EMAIL: a@b.c", " E42 ", "E42"),
        ("rejected", "INVALID_EMAIL: a@b.c", "  ", "INVALID_EMAIL"),
        ("succeeded", None, "W1", "W1"),
    ],
)
def test_error_codes_as_documented(
    status: str, message: str | None, given: str | None, code: str | None
) -> None:
    assert error_code_of(record("a", "upsert", status, "{}", message=message, error_code=given)) == code


def test_a_sync_s_own_error_code_pattern_takes_its_first_group() -> None:
    message = "HTTP 400 (code=E_BAD_PHONE): +1 555"
    assert (
        error_code_of(record("a", "upsert", "rejected", "{}", message=message), r"code=(\w+)")
        == "E_BAD_PHONE"
    )


def test_fields_hash_is_the_sha256_of_the_fields_text_with_none_as_empty() -> None:
    """The snapshot's `fields_hash`: SHA-256 of the JSON text as given, 32 hex digits; NULL hashes
    as '' (the SHA-256 of no bytes is the well-known e3b0c442…)."""
    assert fields_hash(None) == fields_hash("") == "e3b0c44298fc1c149afbf4c8996fb924"
    assert fields_hash('{"id": "a", "v": 1}') == "daa0fd7e3ec99b6261849dd19ccd215e"
    assert fields_hash('{"id": "a", "v": 1}') != fields_hash('{"v": 1, "id": "a"}'), "the text as given"


# ---- census: seed 000's sync_log, its metadata tables, synclog_runs


def census_example() -> tuple[Run, list[Record]]:
    """Run 5678 of sync 1234 (seed 000's examples): five records in two batches."""
    run = make_run(started_at=T0, finished_at=T0 + timedelta(minutes=5))
    return run, [
        record(
            "a@example.com",
            "upsert",
            "succeeded",
            '{"email": "a@example.com", "seats": 3, "tags": ["x"], "vip": true}',
        ),
        record("b@example.com", "delete", "rejected", '{"email": "b@example.com"}', message=REJECTED),
        record(None, "upsert", "succeeded", '{"email": null}'),
        record("c@example.com", "mirror", "aborted", '{"email": "c@example.com"}', batch=1),
        record("c@example.com", "append", "succeeded", '{"email": "c@example.com", "seats": 1}', batch=1),
    ]


def test_census_sync_log_of_a_run_worked_by_hand() -> None:
    run, records = census_example()
    model = ReferenceLog(Layouts(("census",)))
    model.write_run(run, records)
    b0, b1 = T0, T0 + timedelta(minutes=1)
    ids = {"destination_id": 301, "destination_object_id": 401, "source_id": 101, "source_object_id": 201}

    def row(
        log: str, who: str | None, payload: str, at: datetime, operation: str, status: str, **rest: Any
    ) -> dict[str, Any]:
        values = {"status_message": None, "invalid_reason": None, "error_code": None, **rest}
        return {
            "log_id": log,
            "sync_id": 1234,
            "sync_run_id": 5678,
            "record_identifier": who,
            "record_payload": payload,
            "batch_started_at": at,
            "batch_completed_at": at + timedelta(seconds=30),
            "operation": operation,
            "status": status,
            "batch_number": 0 if at == b0 else 1,
            **values,
            **ids,
        }

    assert rows(model, "census.sync_log") == as_rows(
        row(
            "0e5218144a16b2fc76d1511003589340",
            "a@example.com",
            records[0].record_payload,
            b0,
            "upsert",
            "succeeded",
        ),
        row(
            "d772fe8958d223cf2b77b0d65cfbcf24",
            "b@example.com",
            '{"email": "b@example.com"}',
            b0,
            "delete",
            "rejected",
            status_message=REJECTED,
            error_code="INVALID_EMAIL_ADDRESS",
        ),
        row(
            "2896dfdadb0e803a0e0c8137fb009d08",
            None,
            '{"email": null}',
            b0,
            "upsert",
            "succeeded",
            invalid_reason="NULL",
        ),
        # mirror reads upsert, an aborted record is rejected "Not attempted"; c is held twice: DUPLICATE
        row(
            "1339810a1955e061de75f4591d1b32a1",
            "c@example.com",
            '{"email": "c@example.com"}',
            b1,
            "upsert",
            "rejected",
            status_message=NOT_ATTEMPTED,
            invalid_reason="DUPLICATE",
        ),
        # append reads create; first in the occurrence order (append < mirror)
        row(
            "f820b06b5e8a20a95e8e604079ec1a02",
            "c@example.com",
            records[4].record_payload,
            b1,
            "create",
            "succeeded",
            invalid_reason="DUPLICATE",
        ),
    )
    assert rows(model, "census.source_objects") == as_rows(
        {
            "id": 201,
            "type": "DataWarehouse::FilterSegmentSource",
            "name": "High-value customers",
            "model_id": None,
            "business_object_id": None,
            "filter_segment_id": 31,
            "cohort_id": None,
        }
    )
    assert rows(model, "census.destinations") == as_rows(
        {"id": 301, "type": "Salesforce::Connection", "name": "Salesforce"}
    )
    assert rows(model, "census.destination_objects") == as_rows(
        {"id": 401, "type": "Salesforce::ObjectTypes::Contact", "name": "Contact"}
    )
    assert rows(model, "census.synclog_runs") == as_rows(
        {
            "sync_id": 1234,
            "sync_run_id": 5678,
            "status": "succeeded",
            "error": None,
            "started_at": T0,
            "finished_at": T0 + timedelta(minutes=5),
            "extra": None,
        }
    )


def test_a_failed_run_with_succeeded_records_is_partial_and_metadata_ids_can_be_left_out() -> None:
    run, records = census_example()
    failed = replace(run, status=RunStatus.FAILED, error="quota")
    model = ReferenceLog(Layouts(("census",), run_metadata=False))
    model.write_run(failed, records)
    (runs_row,) = rows(model, "census.synclog_runs")
    assert dict(runs_row)["status"] == "partial"
    assert all("source_id" not in dict(r) for r in rows(model, "census.sync_log"))
    assert "census.source_objects" not in model.tables(), "seed 000: not yet supported on Databricks"


def test_a_replayed_batch_replaces_its_rows_and_touches_no_other_sync_sharing_the_run_number() -> None:
    run, records = census_example()
    other = make_run(sync_id=99, sync_run_id=5678, started_at=T0)  # the same run number, another sync
    model = ReferenceLog(Layouts(("census",)))
    model.write(run, records)
    model.write(other, [record("z", "upsert", "succeeded", "{}")])
    model.write(run, [record("new@example.com", "upsert", "succeeded", "{}")])  # batch 0 again
    held = sorted(
        (dict(r)["sync_id"], dict(r)["batch_number"], dict(r)["record_identifier"])
        for r in rows(model, "census.sync_log")
    )
    assert held == [
        (99, 0, "z"),
        (1234, 0, "new@example.com"),
        (1234, 1, "c@example.com"),
        (1234, 1, "c@example.com"),
    ]


def test_retention_counts_whole_utc_days_from_the_batch_time() -> None:
    """7 days at 2026-03-10 15:00 UTC: rows whose batch started before 2026-03-03 00:00 UTC go."""
    now = datetime(2026, 3, 10, 15, tzinfo=UTC)
    model = ReferenceLog(Layouts(("census",)), retention_days=7, per_sync={99: 30})
    for sync_id, run_id, started in (
        (1234, 1, datetime(2026, 3, 2, 23, 59, tzinfo=UTC)),
        (1234, 2, datetime(2026, 3, 3, 0, 0, tzinfo=UTC)),
        (99, 3, datetime(2026, 2, 10, tzinfo=UTC)),  # 30 days for sync 99: kept until 2026-02-08
    ):
        batch = [Record("x", "upsert", "succeeded", None, "{}", 0, started, started)]
        model.write(make_run(sync_id=sync_id, sync_run_id=run_id, started_at=started), batch)
    model.cleanup(now)
    assert sorted(dict(r)["sync_run_id"] for r in rows(model, "census.sync_log")) == [2, 3]


# ---- the lake: seed 001/003's files, metadata.json and fact tables


def test_lake_files_of_a_run_worked_by_hand() -> None:
    run, records = census_example()
    model = ReferenceLog(Layouts(("lake",)))
    model.write_run(run, records)
    folder = "sync_tracking_datasets/1/1234/5678"
    b0, b1 = T0, T0 + timedelta(minutes=1)

    def row(
        path: str,
        who: str | None,
        payload: str,
        at: datetime,
        operation: str,
        status: str,
        outcome: str,
        **rest: Any,
    ) -> dict[str, Any]:
        return {
            "path": f"{folder}/{path}",
            "identifier": who,
            "record_payload": payload,
            "operation": operation,
            "status": status,
            "status_message": None,
            "batch_started_at": at,
            "batch_ended_at": at + timedelta(seconds=30),
            "destination_status": outcome,
            "error_code": None,
            **rest,
        }

    assert rows(model, "lake.records") == as_rows(
        row(
            "records_upserted.0.parquet",
            "a@example.com",
            records[0].record_payload,
            b0,
            "upsert",
            "succeeded",
            "succeeded",
        ),
        row(
            "records_deleted.0.parquet",
            "b@example.com",
            records[1].record_payload,
            b0,
            "delete",
            "rejected",
            "rejected",
            status_message=REJECTED,
            error_code="INVALID_EMAIL_ADDRESS",
        ),
        row("records_upserted.0.parquet", None, '{"email": null}', b0, "upsert", "NULL", "succeeded"),
        row(
            "records_mirrored.1.parquet",
            "c@example.com",
            records[3].record_payload,
            b1,
            "mirror",
            "DUPLICATE",
            "rejected",
            status_message=NOT_ATTEMPTED,
        ),
        row(
            "records_appended.1.parquet",
            "c@example.com",
            records[4].record_payload,
            b1,
            "append",
            "DUPLICATE",
            "succeeded",
        ),
    )
    assert rows(model, "lake.metadata") == as_rows(
        {
            "path": f"{folder}/metadata.json",
            "organization_id": 1,
            "workspace_id": 11,
            "sync_id": 1234,
            "sync_run_id": 5678,
            "sync_behaviour": "mirror",
            "primary_key": "email",
            "source_type": "Snowflake::Connection",
            "source_id": 101,
            "source_object_type": "DataWarehouse::FilterSegmentSource",
            "source_object_id": 201,
            "destination_type": "Salesforce::Connection",
            "destination_id": 301,
            "destination_object_type": "Salesforce::ObjectTypes::Contact",
            "destination_object_id": 401,
            "sync_run_started_at": T0,
            "sync_run_finished_at": T0 + timedelta(minutes=5),
            "sync_run_status": "succeeded",
            # seed 001: field → JSON type (string, number, boolean, array); a NULL takes the others' type
            "record_payload_schema": (
                '{"email": "string", "seats": "number", "tags": "array", "vip": "boolean"}'
            ),
            "extra": None,
        }
    )
    assert rows(model, "lake.destinations") == as_rows(
        {
            "path": "metadata/1/destinations/301.parquet",
            "id": 301,
            "type": "Salesforce::Connection",
            "name": "Salesforce",
        }
    )


def test_a_lake_batch_written_again_replaces_its_files_and_retention_drops_whole_run_folders() -> None:
    run, records = census_example()
    model = ReferenceLog(Layouts(("lake",)), retention_days=7)
    model.write(run, records)
    model.write(run, [record("a@example.com", "create", "succeeded", "{}")])  # batch 0 again, as append
    paths = sorted({dict(r)["path"].rsplit("/", 1)[1] for r in rows(model, "lake.records")})
    assert paths == ["records_appended.0.parquet", "records_appended.1.parquet", "records_mirrored.1.parquet"]
    model.finish(run)
    model.cleanup(T0 + timedelta(days=8))  # cutoff 2026-03-02 00:00: the run's batches are older
    assert not rows(model, "lake.records") and not rows(model, "lake.metadata")


# ---- hightouch: seed 002's changelog, snapshot and sync_runs over three runs


def person(
    identifier: str, operation: str, status: str, version: int, message: str | None = None, at: datetime = T0
) -> Record:
    """A record of batch 0 started `at`, whose payload is the person's `version` of their fields."""
    fields = f'{{"id": "{identifier}", "v": {version}}}'
    return record(identifier, operation, status, fields, message=message, at=at)


def test_hightouch_tables_over_three_runs_worked_by_hand() -> None:
    first = make_run(sync_id=77, sync_run_id=701, started_at=T0)
    second = replace(first, sync_run_id=702, started_at=T0 + timedelta(minutes=10))
    third = replace(first, sync_run_id=703, started_at=T0 + timedelta(minutes=20), full_model=True)
    model = ReferenceLog(Layouts(("hightouch",)))
    hashes = {  # fields_hash of each person's fields, worked out with sha256sum
        ("a", 1): "daa0fd7e3ec99b6261849dd19ccd215e",
        ("b", 1): "aba00f991fa785a3a80ae43a8db2d9a4",
        ("b", 2): "99bd6e14630ec6b2432cdc0bed41c6e0",
        ("c", 1): "dba4c6fa4912cc5bd5f76a37cea8a72b",
        ("e", 1): "1791a401792e96dec184c50492c6f348",
    }

    def change(
        run: Run, op_type: str, who: str, status: str | None, v: int, at: datetime = T0, **rest: Any
    ) -> dict[str, Any]:
        values = {
            "failure_reason": None,
            "invalid_reason": None,
            "error_code": None,
            "split_group": None,
            **rest,
        }
        fields = f'{{"id": "{who}", "v": {v}}}'
        return {
            "sync_id": 77,
            "sync_run_id": run.sync_run_id,
            "op_type": op_type,
            "row_id": who,
            "status": status,
            "fields": fields,
            "batch_started_at": at,
            **values,
        }

    def kept(who: str, op_type: str, status: str, v: int, last: int, **rest: Any) -> dict[str, Any]:
        values = {
            "failure_reason": None,
            "invalid_reason": None,
            "error_code": None,
            "split_group": None,
            **rest,
        }
        return {
            "sync_id": 77,
            "row_id": who,
            "op_type": op_type,
            "status": status,
            "fields": f'{{"id": "{who}", "v": {v}}}',
            "fields_hash": hashes[(who, v)],
            "last_sync_run_id": last,
            **values,
        }

    def counts(**given: int) -> dict[str, int]:
        names = [
            f"num_{s}_{o}"
            for s in ("planned", "attempted", "succeeded", "failed")
            for o in ("add", "change", "remove")
        ]
        return {name: given.get(name, 0) for name in names}

    def runs_row(run: Run, **given: int) -> dict[str, Any]:
        return {
            "sync_id": 77,
            "sync_run_id": run.sync_run_id,
            "primary_key": "email",
            "destination": "Salesforce",
            "model_name": "High-value customers",
            "model_id": 51,
            "status": "succeeded",
            "error": None,
            "started_at": run.started_at,
            "finished_at": None,
            "extra": None,
            **counts(**given),
        }

    failed = {"failure_reason": REJECTED, "error_code": "INVALID_EMAIL_ADDRESS"}
    model.write_run(
        first,
        [
            person("a", "upsert", "succeeded", 1),
            person("b", "upsert", "succeeded", 1),
            person("c", "upsert", "rejected", 1, REJECTED),
        ],
    )
    model.write_run(
        second,
        [
            person(
                "a", "upsert", "succeeded", 1, at=second.started_at
            ),  # sent again as before, succeeded as before: no operation
            person("b", "upsert", "succeeded", 2, at=second.started_at),  # other fields: changed
            person(
                "c", "upsert", "succeeded", 1, at=second.started_at
            ),  # failed before, now succeeded: a retry, changed
            person("d", "delete", "succeeded", 1, at=second.started_at),  # a delete: removed
            person("e", "upsert", "aborted", 1, at=second.started_at),  # new, never attempted: added, aborted
        ],
    )
    two = T0 + timedelta(minutes=10)
    changed = [
        change(first, "added", "a", "succeeded", 1),
        change(first, "added", "b", "succeeded", 1),
        change(first, "added", "c", "failed", 1, **failed),
        change(second, "changed", "b", "succeeded", 2, two),
        change(second, "changed", "c", "succeeded", 1, two),
        change(second, "removed", "d", "succeeded", 1, two),
        change(second, "added", "e", "aborted", 1, two),
    ]
    assert rows(model, "hightouch.sync_changelog") == as_rows(*changed)
    assert rows(model, "hightouch.sync_snapshot") == as_rows(
        kept("a", "unchanged", "succeeded", 1, 702),
        kept("b", "changed", "succeeded", 2, 702),
        kept("c", "unchanged", "succeeded", 1, 702),  # its fields did not change
        kept("e", "added", "aborted", 1, 702),
    )
    # planned = attempted + aborted, attempted = succeeded + failed, per op_type
    counted = [
        runs_row(first, num_planned_add=3, num_attempted_add=3, num_succeeded_add=2, num_failed_add=1),
        runs_row(
            second,
            num_planned_add=1,
            num_planned_change=2,
            num_attempted_change=2,
            num_succeeded_change=2,
            num_planned_remove=1,
            num_attempted_remove=1,
            num_succeeded_remove=1,
        ),
    ]
    assert rows(model, "hightouch.sync_runs") == as_rows(*counted)

    # The whole model, holding b only: a, c and e left it (removed, status NULL: nothing was sent).
    model.write_run(third, [person("b", "upsert", "succeeded", 2, at=third.started_at)])
    three = T0 + timedelta(minutes=20)
    left = [change(third, "removed", who, None, 1, three) for who in "ace"]
    assert rows(model, "hightouch.sync_changelog") == as_rows(*changed, *left)
    assert rows(model, "hightouch.sync_snapshot") == as_rows(kept("b", "unchanged", "succeeded", 2, 703))
    assert rows(model, "hightouch.sync_runs") == as_rows(*counted, runs_row(third)), "left rows count nowhere"

    before = model.tables()
    model.write_run(third, [person("b", "upsert", "succeeded", 2, at=third.started_at)])
    assert model.tables() == before, "the latest run written again changes nothing"
    earlier = replace(first, sync_run_id=700, started_at=T0 - timedelta(minutes=5))
    with pytest.raises(Refused, match="sync 77: run 700 started before run 703, which the snapshot holds"):
        model.write_run(earlier, [person("a", "upsert", "succeeded", 1)])
    assert model.tables() == before


def test_a_row_sent_twice_is_represented_by_the_latest_batch_s_copy() -> None:
    run = make_run(sync_id=78, sync_run_id=1, started_at=T0)
    model = ReferenceLog(Layouts(("hightouch",)))
    late = record("a", "upsert", "rejected", '{"id": "a", "v": 9}', batch=2, message="LATE: x")
    early = record("a", "upsert", "succeeded", '{"id": "a", "v": 1}', batch=0)
    model.write_run(run, [late, early])
    ((snapshot),) = rows(model, "hightouch.sync_snapshot")
    found = dict(snapshot)
    assert (found["fields"], found["status"], found["error_code"], found["invalid_reason"]) == (
        '{"id": "a", "v": 9}',
        "failed",
        "LATE",
        "DUPLICATE",
    )


def test_an_outage_keeps_batches_until_flush_and_loads_them_once() -> None:
    run, records = census_example()
    model = ReferenceLog(Layouts(("census",)))
    model.up = False
    model.write(run, records)
    model.finish(run)
    assert model.pending() == [((1234, 5678), (0, 1), True)]
    assert not rows(model, "census.sync_log")
    model.up = True
    model.flush()
    assert model.pending() == []
    assert sum(rows(model, "census.sync_log").values()) == 5


# ---- a target's JSON size limit and a sync's payload policy


def test_a_payload_past_the_json_size_limit_becomes_the_marker() -> None:
    """32 UTF-8 bytes in 22 characters (ü is two bytes): kept whole at a limit of 32, the marker
    at 31, whose head is 16 characters (a sixteenth of the limit is less)."""
    text = '{"blob": "üüüüüüüüüü"}'
    assert fit_json(text, 32) == text
    assert json.loads(fit_json(text, 31) or "") == {
        "_synclog_truncated": True,
        "original_bytes": 32,
        "sha256": "0141726d6a4577fca19736dced8e2c8a082c5f844511c00a88e707509d6e081e",  # sha256sum
        "head": '{"blob": "üüüüüü',
    }
    model = ReferenceLog(Layouts(("census", "lake"), max_json_bytes=31))
    run = make_run(started_at=T0)
    model.write_run(run, [record("a", "upsert", "succeeded", text)])
    (row,) = rows(model, "census.sync_log")
    assert json.loads(dict(row)["record_payload"])["original_bytes"] == 32
    (file_row,) = rows(model, "lake.records")
    assert dict(file_row)["record_payload"] == text, "the lake has no such limit"


MODEL_KEY = b"model-test-key-0123456789"
"""The digests below are `printf %s VALUE | openssl dgst -sha256 -hmac model-test-key-0123456789`."""
A_DIGEST = "caecb565ec7ec5ca68f4d52ad0e2b61d993a4a572449207f78e644ae23dc9697"  # of a@example.com
TWO_DIGEST = "bdbe664684f1d1dc68be856d91139e5c8b5ec7afa64d9d6318c813bfcd51bf6d"  # of 2 (the JSON text)
ADDRESS_DIGEST = "b2f6f6117ff6db2937dfd3035a7b41e2a8fa4fe144c5e57a5248fdf2c169fbc3"  # of {"city":"Köln"}


def test_a_payload_policy_masks_identifiers_fields_and_messages_as_documented() -> None:
    """docs/analysts/privacy.md: only `log_fields` are kept, masked ones as the HMAC of their text
    (a number or object as compact JSON with sorted keys), identifiers as digests (log ids are of
    the digest), matches in messages and the run's error as "[redacted]"; the error code is read
    from the message as the policy left it. The payload is written again as compact JSON."""
    policy = PayloadPolicy(
        log_fields=("id", "v", "address"),
        mask={"v": Mask.HMAC, "address": Mask.HMAC},
        mask_key_env="UNUSED",
        redact_messages=(r"bad \w+", r"unreachable"),
        mask_identifier=Mask.HMAC,
    )
    run = replace(make_run(started_at=T0), status=RunStatus.FAILED, error="destination unreachable")
    payload = '{"id": "a@example.com", "v": 2, "plan": "pro", "address": {"city": "Köln"}}'
    model = ReferenceLog(Layouts(("census",)), policies={1234: policy}, mask_key=MODEL_KEY)
    model.write_run(
        run, [record("a@example.com", "upsert", "rejected", payload, message="INVALID_EMAIL: bad address")]
    )
    (row,) = rows(model, "census.sync_log")
    found = dict(row)
    assert found["record_identifier"] == A_DIGEST
    assert found["log_id"] == sha32(f"1234{US}5678{US}0{US}{A_DIGEST}{US}1")
    assert (
        found["record_payload"] == f'{{"id":"a@example.com","v":"{TWO_DIGEST}","address":"{ADDRESS_DIGEST}"}}'
    )
    assert (found["status_message"], found["error_code"]) == ("INVALID_EMAIL: [redacted]", "INVALID_EMAIL")
    (runs_row,) = rows(model, "census.synclog_runs")
    assert dict(runs_row)["error"] == "destination [redacted]"

    redact_code = PayloadPolicy(redact_messages=(r"^INVALID_\w+",))
    model = ReferenceLog(Layouts(("census",)), policies={1234: redact_code})
    model.write_run(
        make_run(started_at=T0), [record("b", "upsert", "rejected", '{"v": 1}', message="INVALID_EMAIL: x")]
    )
    (row,) = rows(model, "census.sync_log")
    found = dict(row)
    assert (found["record_identifier"], found["record_payload"]) == ("b", '{"v": 1}'), "as given"
    assert (found["status_message"], found["error_code"]) == ("[redacted]: x", None)


def test_a_refusal_is_expected_for_its_reason_only() -> None:
    """The model tests take synclog's InputError as the refusal the model expects only when it
    names the same sync, run and snapshot run (synclog's own wording, from `refuse_older`)."""
    older = make_run(sync_id=77, sync_run_id=700, started_at=T0)
    expected = Refused(77, 700, 703)
    with pytest.raises(InputError) as said:
        refuse_older(older, LatestRun(703, T0 + timedelta(minutes=20)))
    assert expected.explains(str(said.value))
    with pytest.raises(InputError) as other_run:
        refuse_older(replace(older, sync_run_id=701), LatestRun(703, T0 + timedelta(minutes=20)))
    assert not expected.explains(str(other_run.value))
    with pytest.raises(InputError) as other_sync:
        refuse_older(replace(older, sync_id=78), LatestRun(703, T0 + timedelta(minutes=20)))
    assert not expected.explains(str(other_sync.value))
    assert not expected.explains("record results: 'status' has unknown value 'exploded'")
