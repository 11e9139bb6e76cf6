"""The canonical frame: invalid records flagged (never dropped), deterministic log ids."""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import SparkSession

from synclog.canonical import CANONICAL_COLUMNS, canonical_frame
from synclog.checks import DUPLICATE_MESSAGE, NULL_MESSAGE
from synclog.model import RecordStatus
from synclog.payloads import MAX_HEAD_CHARS, TRUNCATED_MARKER, fit_json
from synclog.records import VIOLATION
from synclog.testing.factories import make_records, make_run, record_rows


def frame_rows(spark: SparkSession, rows: list[tuple[object, ...]]) -> list[dict[str, object]]:
    run = make_run()
    frame = canonical_frame(run, make_records(spark, rows), datetime.now(UTC))
    return [r.asDict() for r in frame.collect()]


def test_invalid_records_are_flagged_not_dropped(spark: SparkSession) -> None:
    rows = record_rows(make_run(), count=20, null_at=(3, 4), duplicate_of={9: 8, 10: 8})
    out = frame_rows(spark, rows)
    assert len(out) == 20
    by_status: dict[str, list[dict[str, object]]] = {}
    for row in out:
        by_status.setdefault(str(row["status"]), []).append(row)
    assert len(by_status[RecordStatus.INVALID_NULL]) == 2
    assert len(by_status[RecordStatus.INVALID_DUPLICATE]) == 3
    assert {r["status_message"] for r in by_status[RecordStatus.INVALID_NULL]} == {NULL_MESSAGE}
    assert {r["status_message"] for r in by_status[RecordStatus.INVALID_DUPLICATE]} == {DUPLICATE_MESSAGE}
    assert all(r[VIOLATION] is None for r in out)
    assert list(out[0])[: len(CANONICAL_COLUMNS)] == list(CANONICAL_COLUMNS)


def test_log_ids_are_unique_and_stable(spark: SparkSession) -> None:
    rows = record_rows(make_run(), count=30, null_at=(1, 2), duplicate_of={5: 4})
    first = {r["log_id"] for r in frame_rows(spark, rows)}
    again = {r["log_id"] for r in frame_rows(spark, list(reversed(rows)))}
    assert len(first) == 30
    assert first == again


def test_fields_default_to_the_payload(spark: SparkSession) -> None:
    out = frame_rows(spark, record_rows(make_run(), count=3))
    assert all(r["fields"] == r["record_payload"] for r in out)


def test_oversized_payloads_become_a_valid_marker(spark: SparkSession) -> None:
    import json

    df = spark.createDataFrame([('{"a": "' + "é" * 100 + '"}',), ('{"a": 1}',)], "p string")
    big, small = [r[0] for r in df.select(fit_json(df["p"], 64)).collect()]
    marker = json.loads(big)
    assert marker[TRUNCATED_MARKER] is True
    assert marker["original_bytes"] == len(('{"a": "' + "é" * 100 + '"}').encode())
    assert marker["head"] == '{"a": "' + "é" * 9
    assert small == '{"a": 1}'


def test_the_marker_head_of_a_large_limit_stays_a_short_string(spark: SparkSession) -> None:
    import json

    limit = 1024 * 1024
    df = spark.createDataFrame([('["' + "é" * limit + '"]',)], "p string")
    [(big,)] = df.select(fit_json(df["p"], limit)).collect()
    head = json.loads(big)["head"]
    assert len(head) == MAX_HEAD_CHARS
    assert len(head.encode()) <= 65_535
