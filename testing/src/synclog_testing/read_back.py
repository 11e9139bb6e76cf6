"""Checks of `Target.read_rows` that every SQL target's tests run: chunked and empty exports.

A target that exports through `synclog.targets.export` writes one Parquet row group per
chunk; its tests shrink the target's client's `chunk_rows` and call `check_read_back` with the row groups
that must come out, then `check_empty_read_back`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from synclog.targets.base import Target
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.tables import Column, ColumnType, TableSpec

READS = TableSpec(
    layout="probe",
    schema="probe_audit",
    name="reads",
    columns=(
        Column("sync_id", ColumnType.BIGINT),
        Column("row_id", ColumnType.STRING),
        Column("small", ColumnType.INTEGER),
        Column("fields", ColumnType.JSON),
        Column("seen_at", ColumnType.TIMESTAMP),
        Column("flag", ColumnType.BOOLEAN),
    ),
    replace_key=("sync_id", "row_id"),
)
"""A table read back by `read_rows`."""
READS_WIDER = replace(
    READS,
    columns=(
        *READS.columns,
        Column("added_later", ColumnType.INTEGER),
        Column("added_later_json", ColumnType.JSON),
    ),
)
"""`READS` with columns the stored table lacks: they read back as NULL (not as JSON `null`)."""

LATER = datetime(2026, 3, 1, 8, 0, 0, 123456, tzinfo=UTC)
BEFORE_1970 = datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
Y2K = datetime(2000, 1, 1, tzinfo=UTC)
"""Zero on PostgreSQL's clock (its epoch)."""


def read_back_rows(*, null_timestamps: bool = True) -> list[dict[str, Any]]:
    """Nine rows, eight of sync 1: NULLs, JSON strings and `null`, non-ASCII, times before 1970.

    `null_timestamps=False` leaves the NULL timestamp out, for a stand-in that reads it wrong.
    """
    return [
        {
            "sync_id": 1,
            "row_id": "a",
            "small": 7,
            "fields": '{"x": [1, 2.5, "é"]}',
            "seen_at": LATER,
            "flag": True,
        },
        {"sync_id": 1, "row_id": "b", "fields": None, "seen_at": None if null_timestamps else LATER},
        {"sync_id": 1, "row_id": "c", "small": -1, "fields": "null", "seen_at": BEFORE_1970, "flag": False},
        {"sync_id": 1, "row_id": None, "small": 0, "fields": '"s"', "seen_at": Y2K, "flag": True},
        *({"sync_id": 1, "row_id": f"r{i}", "fields": f'{{"n": {i}}}', "seen_at": LATER} for i in range(4)),
        {"sync_id": 2, "row_id": "other sync", "fields": "{}", "seen_at": LATER},
    ]


def check_read_back(
    target: Target, spark: SparkSession, rows: list[dict[str, Any]], row_groups: list[int]
) -> None:
    """Store `rows`, read sync 1 back: its rows in `row_groups`, every value as it was written."""
    target.ensure([READS])
    loaded = Rows.local(spark, READS, rows)
    target.replace_rows(READS, loaded, Keys.of_rows(READS, loaded))
    with target.read_rows(READS_WIDER, 1, spark) as frame:
        assert frame is not None
        parquet = exported_file(target)
        assert [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)] == row_groups
        exported = parquet.read()
        assert frame.count() == sum(row_groups)
    assert exported.schema == READS_WIDER.arrow_schema()
    expected = [row for row in rows if row["sync_id"] == 1]
    assert sorted(map(_json_parsed, exported.to_pylist()), key=str) == sorted(
        map(_json_parsed, pa.Table.from_pylist(expected, schema=READS_WIDER.arrow_schema()).to_pylist()),
        key=str,
    )


def check_empty_read_back(target: Target, spark: SparkSession) -> None:
    """A sync without rows reads back as a valid, empty file that carries the schema."""
    target.ensure([READS])
    loaded = Rows.local(spark, READS, [{"sync_id": 2, "row_id": "a", "seen_at": LATER}])
    target.replace_rows(READS, loaded, Keys.of_rows(READS, loaded))
    with target.read_rows(READS, 1, spark) as frame:
        assert frame is not None
        exported = exported_file(target).read()
        assert frame.schema == READS.spark_schema()
        assert frame.count() == 0
    assert exported.schema == READS.arrow_schema()
    assert exported.num_rows == 0


def exported_file(target: Target) -> pq.ParquetFile:
    """The one Parquet file the open `read_rows` exported into the target's storage."""
    storage = target.storage
    selector = pafs.FileSelector(storage.path("exports"), recursive=True)
    fs = storage.filesystem()
    (found,) = [info.path for info in fs.get_file_info(selector) if info.is_file]
    return pq.ParquetFile(fs.open_input_file(found))


def _json_parsed(row: dict[str, Any]) -> dict[str, Any]:
    """`row` with its JSON text made canonical (a warehouse may respace what was written)."""
    return {
        name: json.dumps(json.loads(value), sort_keys=True)
        if name in ("fields", "added_later_json") and value is not None
        else value
        for name, value in row.items()
    }
