"""The canonical frame: invalid records flagged (never dropped), deterministic log ids."""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import SparkSession

from synclog.canonical import CANONICAL_COLUMNS, canonical_frame
from synclog.model import InvalidReason
from synclog.payloads import MAX_HEAD_CHARS, TRUNCATED_MARKER, fit_json
from synclog.records import VIOLATION
from synclog_testing.factories import RECORD_DDL, make_records, make_run, record_rows


def frame_rows(spark: SparkSession, rows: list[tuple[object, ...]]) -> list[dict[str, object]]:
    run = make_run()
    frame = canonical_frame(run, make_records(spark, rows), datetime.now(UTC))
    return [r.asDict() for r in frame.collect()]


def test_invalid_records_are_flagged_not_dropped(spark: SparkSession) -> None:
    run = make_run()
    rows = record_rows(run, count=20, null_at=(3, 4), duplicate_of={9: 8, 10: 8})
    given = {i: (row[2], row[3]) for i, row in enumerate(rows)}
    out = frame_rows(spark, rows)
    assert len(out) == 20
    flagged: dict[object, int] = {}
    for row in out:
        flagged[row["invalid_reason"]] = flagged.get(row["invalid_reason"], 0) + 1
    assert flagged == {None: 15, InvalidReason.NULL.value: 2, InvalidReason.DUPLICATE.value: 3}
    # The flag sits beside the destination's outcome: status and message stay the engine's.
    assert sorted((r["status"], r["status_message"]) for r in out) == sorted(given.values())
    assert all(r[VIOLATION] is None for r in out)
    assert list(out[0])[: len(CANONICAL_COLUMNS)] == list(CANONICAL_COLUMNS)


def test_error_codes_are_given_or_read_from_the_message(spark: SparkSession) -> None:
    run = make_run()
    base = record_rows(run, count=1)[0]
    messages = [
        ("rejected", "INVALID_EMAIL: a@b.c is not an address", None),
        ("rejected", "HTTP 503: service unavailable", None),
        ("rejected", "429 Too Many Requests: rate limit exceeded", None),
        ("rejected", "a@b.c: is not an address", None),
        ("rejected", "no code in this message", None),
        ("rejected", "INVALID_EMAIL: x", "E_MAIL"),
        ("succeeded", "NOTE: accepted with warnings", None),
    ]
    rows = [(f"r{i}", base[1], status, message, *base[4:]) for i, (status, message, _) in enumerate(messages)]
    frame = make_records(spark, rows)
    from pyspark.sql import functions as F

    codes = F.create_map(*[F.lit(x) for i, m in enumerate(messages) if m[2] for x in (f"r{i}", m[2])])
    frame = frame.withColumn("error_code", codes[F.col("record_identifier")])
    written = canonical_frame(run, frame, datetime.now(UTC)).collect()
    out = {r["record_identifier"]: r["error_code"] for r in written}
    assert out == {
        "r0": "INVALID_EMAIL",
        "r1": "HTTP 503",
        "r2": "429 Too Many Requests",
        "r3": None,  # an echoed value is no code
        "r4": None,
        "r5": "E_MAIL",
        "r6": None,
    }
    custom = canonical_frame(run, frame, datetime.now(UTC), error_code_pattern=r"^(\w+)")
    assert {r["record_identifier"]: r["error_code"] for r in custom.collect()}["r4"] == "no"


def test_log_ids_are_unique_and_stable(spark: SparkSession) -> None:
    rows = record_rows(make_run(), count=30, null_at=(1, 2), duplicate_of={5: 4})
    first = {r["log_id"] for r in frame_rows(spark, rows)}
    again = {r["log_id"] for r in frame_rows(spark, list(reversed(rows)))}
    assert len(first) == 30
    assert first == again


def test_fields_default_to_the_payload(spark: SparkSession) -> None:
    out = frame_rows(spark, record_rows(make_run(), count=3))
    assert all(r["fields"] == r["record_payload"] for r in out)


def test_a_record_without_fields_logs_its_payload_whatever_the_other_records_give(
    spark: SparkSession,
) -> None:
    """A write whose records give `fields` for some records only (a delete without the model's
    row): each record without them logs its payload, as it would in a write without the column."""
    rows = record_rows(make_run(), count=3)
    given = [(*row, '{"id": 1}' if i == 0 else None) for i, row in enumerate(rows)]
    frame = spark.createDataFrame(given, RECORD_DDL + ", fields string")
    out = canonical_frame(make_run(), frame, datetime.now(UTC)).collect()
    by_payload = {r["record_payload"]: r["fields"] for r in out}
    assert by_payload == {rows[0][4]: '{"id": 1}', rows[1][4]: rows[1][4], rows[2][4]: rows[2][4]}


def test_oversized_payloads_become_a_valid_marker(spark: SparkSession) -> None:
    import json

    # The limit is in bytes: 49 characters of 89 bytes (40 two-byte é) do not fit in 64.
    rows = [('{"a": "' + "é" * 100 + '"}',), ('{"a": 1}',), ('{"a": "' + "é" * 40 + '"}',)]
    df = spark.createDataFrame(rows, "p string")
    big, small, wide = [r[0] for r in df.select(fit_json(df["p"], 64)).collect()]
    marker = json.loads(big)
    assert marker[TRUNCATED_MARKER] is True
    assert marker["original_bytes"] == len(('{"a": "' + "é" * 100 + '"}').encode())
    assert marker["head"] == '{"a": "' + "é" * 9
    assert small == '{"a": 1}'
    assert json.loads(wide)["original_bytes"] == 89


def test_the_marker_head_of_a_large_limit_stays_a_short_string(spark: SparkSession) -> None:
    import json

    limit = 1024 * 1024
    df = spark.createDataFrame([('["' + "é" * limit + '"]',)], "p string")
    [(big,)] = df.select(fit_json(df["p"], limit)).collect()
    head = json.loads(big)["head"]
    assert len(head) == MAX_HEAD_CHARS
    assert len(head.encode()) <= 65_535
