"""`synclog.targets.export`: chunks of a result become row groups of one schema."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from synclog.targets.export import conformed, rows_batch, write_batches

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("small", pa.int32()),
        pa.field("fields", pa.string()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
    ]
)
AT = datetime(2026, 3, 1, 8, 0, 0, 123456, tzinfo=UTC)


def test_each_batch_is_one_row_group_of_the_schema(tmp_path: Path) -> None:
    path = str(tmp_path / "rows.parquet")
    # As a driver hands them over: other names, wider or finer types, an offset time zone.
    warehouse = pa.record_batch(
        {
            "ID": pa.array([1, 2], pa.int64()),
            "SMALL": pa.array([7, None], pa.int64()),
            "J": ['{"a":1}', None],
            "TS": pa.array([AT, None], pa.timestamp("ns", tz="Etc/UTC")),
        }
    )
    rows = rows_batch([(3, -1, "[]", AT.astimezone(timezone(timedelta(hours=2))))], SCHEMA)
    empty = rows_batch([], SCHEMA)
    assert write_batches(path, SCHEMA, [warehouse, empty, rows]) == 3
    parquet = pq.ParquetFile(path)
    assert [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)] == [2, 1]
    assert parquet.read().to_pylist() == [
        {"id": 1, "small": 7, "fields": '{"a":1}', "at": AT},
        {"id": 2, "small": None, "fields": None, "at": None},
        {"id": 3, "small": -1, "fields": "[]", "at": AT},
    ]
    assert parquet.schema_arrow == SCHEMA


def test_no_rows_make_a_file_with_the_schema_and_no_row_group(tmp_path: Path) -> None:
    path = str(tmp_path / "rows.parquet")
    assert write_batches(path, SCHEMA, iter(())) == 0
    parquet = pq.ParquetFile(path)
    assert (parquet.num_row_groups, parquet.schema_arrow) == (0, SCHEMA)


def test_a_result_of_another_width_is_refused() -> None:
    with pytest.raises(ValueError, match="the result has 1 columns, the schema 4"):
        conformed(pa.record_batch({"id": [1]}), SCHEMA)
