"""Staged files as JSON lines (`FileFormat.JSON_LINES`): the encoder, and the writers that use it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from pyspark.sql import SparkSession

from synclog.capabilities import FileFormat
from synclog.storage.json_lines import encode
from synclog.storage.location import Location
from synclog.targets.staging import FileStageWriter, fill_from_frame, fill_from_table
from synclog.targets.tables import Column, ColumnType, TableSpec

LATER = datetime(2026, 3, 1, 8, 0, 0, 123456, tzinfo=UTC)
BEFORE_1970 = datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
TABLE = TableSpec(
    layout="probe",
    schema="probe",
    name="staged",
    columns=(
        Column("id", ColumnType.BIGINT),
        Column("note", ColumnType.STRING),
        Column("payload", ColumnType.JSON),
        Column("at", ColumnType.TIMESTAMP),
        Column("ok", ColumnType.BOOLEAN),
    ),
    replace_key=("id",),
)
STAGED = pa.schema([f.with_type(pa.json_()) if f.name == "payload" else f for f in TABLE.arrow_schema()])
"""How a target that loads JSON lines stages `TABLE`: its JSON column typed as Arrow's JSON."""


def lines(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.decode().split("\n")[:-1]]


def test_values_are_json_and_nulls_leave_their_key_out() -> None:
    batch = pa.record_batch(
        {
            "id": pa.array([1, None, -(2**63)], pa.int64()),
            "note": ['q"uote \\ back\nline\t\x00 é', None, ""],
            "payload": pa.array(['{"a": [1, 2.5, "é"],\n "b": null}', "null", None], pa.json_()),
            "at": pa.array([LATER, None, BEFORE_1970], pa.timestamp("us", tz="UTC")),
            "ok": [True, None, False],
        }
    )
    data = encode(batch).to_pybytes()
    assert data.count(b"\n") == 3, "one object per line, also where the JSON text had a line break"
    assert lines(data) == [
        {
            "id": 1,
            "note": 'q"uote \\ back\nline\t\x00 é',
            "payload": {"a": [1, 2.5, "é"], "b": None},
            "at": "2026-03-01T08:00:00.123456Z",
            "ok": True,
        },
        {"payload": None},
        {"id": -(2**63), "note": "", "at": "1969-12-31T23:59:59.999999Z", "ok": False},
    ]


def test_a_slice_and_an_empty_batch() -> None:
    batch = pa.record_batch({"id": pa.array([1, 2, 3], pa.int64()), "n": pa.nulls(3)})
    assert lines(encode(batch.slice(1, 2)).to_pybytes()) == [{"id": 2}, {"id": 3}]
    assert encode(batch.slice(0, 0)).to_pybytes() == b""


def test_a_type_without_a_json_form_is_refused() -> None:
    with pytest.raises(TypeError, match="column 'x' of type double cannot be written as JSON"):
        encode(pa.record_batch({"x": pa.array([1.5])}))


def stored(location: Location, path: str) -> bytes:
    with location.filesystem().open_input_stream(location.path(path)) as stream:
        return bytes(stream.read())


def test_rows_of_a_frame_are_staged_as_json_lines(spark: SparkSession, tmp_path: Path) -> None:
    location = Location.parse(str(tmp_path / "storage"))
    frame = spark.createDataFrame(
        [(i, f"n{i}", f'{{"i": {i}}}', LATER, i % 2 == 0) for i in range(10)], TABLE.spark_schema()
    ).repartition(3)
    writer = FileStageWriter(location, "staging/x", STAGED, FileFormat.JSON_LINES)
    manifest = writer.manifest(fill_from_frame(frame, writer))
    assert manifest.rows == 10
    assert all(f.path.startswith("staging/x/part-p") and f.path.endswith(".jsonl") for f in manifest.files)
    found = [row for f in manifest.files for row in lines(stored(location, f.path))]
    assert sorted(found, key=lambda r: r["id"]) == [
        {"id": i, "note": f"n{i}", "payload": {"i": i}, "at": "2026-03-01T08:00:00.123456Z", "ok": i % 2 == 0}
        for i in range(10)
    ]


def test_rows_built_on_the_driver_are_staged_as_json_lines(spark: SparkSession, tmp_path: Path) -> None:
    location = Location.parse(str(tmp_path / "storage"))
    rows = pa.Table.from_pylist([{"id": 7, "payload": '"s"'}, {"id": 8, "note": "x"}], TABLE.arrow_schema())
    writer = FileStageWriter(location, "staging/y", STAGED, FileFormat.JSON_LINES)
    manifest = writer.manifest(fill_from_table(rows, writer))
    (only,) = manifest.files
    assert (only.path, only.rows) == ("staging/y/part-p00000.jsonl", 2)
    assert lines(stored(location, only.path)) == [{"id": 7, "payload": "s"}, {"id": 8, "note": "x"}]


def test_parquet_stays_the_default(spark: SparkSession, tmp_path: Path) -> None:
    location = Location.parse(str(tmp_path / "storage"))
    writer = FileStageWriter(location, "staging/z", TABLE.arrow_schema())
    manifest = writer.manifest(
        fill_from_table(pa.Table.from_pylist([{"id": 1}], TABLE.arrow_schema()), writer)
    )
    (only,) = manifest.files
    assert only.path == "staging/z/part-p00000.parquet"
    assert location.filesystem().get_file_info(location.path(only.path)).type == pafs.FileType.File
