"""`synclog write` with a corpus of awkward and bad inputs: one line and an exit code, never a
traceback; accepted inputs land every record, refused ones land none."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from synclog.cli.main import main
from synclog.payloads import TRUNCATED_MARKER
from synclog_testing.factories import RECORD_COLUMNS, make_run, record_rows

RUN = make_run(sync_id=1234, sync_run_id=5678)
ODD = '\'; DROP TABLE census.sync_log; -- "quoted" \t tab \x01 ctrl 🚀 émoji'
"""SQL, quotes, a control character and an emoji: values, never SQL."""
BIG = 20 * 1024 * 1024


def records_table(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(RECORD_COLUMNS, row, strict=True)) for row in rows])


def base_rows() -> list[tuple[Any, ...]]:
    return record_rows(RUN, count=10, batches=1, null_at=(3,), duplicate_of={9: 8})


def pandas_nanoseconds(path: Path) -> None:
    """What pandas writes by default: nanosecond timestamps, without a time zone."""
    frame = records_table(base_rows()).to_pandas()
    for column in ("batch_started_at", "batch_completed_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True).dt.tz_localize(None) + pd.Timedelta(
            nanoseconds=789
        )
    frame.to_parquet(path)
    assert "timestamp[ns]" in str(pq.read_schema(path).field("batch_started_at").type)


def replaced(column: int, value: Any, at: int = 0) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        rows = base_rows()
        rows[at] = (*rows[at][:column], value, *rows[at][column + 1 :])
        pq.write_table(records_table(rows), path)

    return write


def table(change: Callable[[pa.Table], pa.Table]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        pq.write_table(change(records_table(base_rows())), path)

    return write


def garbage(path: Path) -> None:
    path.write_bytes(b"PAR1 this is not a Parquet file")


def corrupt_pages(path: Path) -> None:
    """A Parquet file whose footer reads (the driver sees its schema and row count) but whose
    data pages are garbage: only the executors, reading the rows, find out."""
    pq.write_table(records_table(base_rows()), path)
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    data[8 : len(data) - 8 - footer - 8] = b"\xff" * (len(data) - 8 - footer - 16)
    path.write_bytes(bytes(data))


def nothing(path: Path) -> None:
    """No records file at all."""


def empty_folder(path: Path) -> None:
    path.mkdir()


ACCEPTED: dict[str, tuple[Callable[[Path], None], int]] = {
    "zero records": (table(lambda t: t.slice(0, 0)), 0),
    "nanosecond timestamps (pandas)": (pandas_nanoseconds, 10),
    "extra columns": (table(lambda t: t.append_column("engine_note", pa.array(["x"] * 10))), 10),
    "odd identifier": (replaced(0, ODD), 10),
    "odd message": (replaced(3, ODD, at=4), 10),
    "odd payload value": (replaced(4, json.dumps({"note": ODD})), 10),
    "NULL and duplicate identifiers": (replaced(0, None, at=5), 10),
    "a 20 MB payload": (replaced(4, json.dumps({"blob": "x" * BIG})), 10),
}
"""Inputs that land: how to write records.parquet, and how many records land."""

REFUSED: dict[str, tuple[Callable[[Path], None], str]] = {
    "missing column": (table(lambda t: t.drop_columns(["status"])), "missing column 'status'"),
    "non-JSON payload": (replaced(4, "{not json"), "column 'record_payload' holds invalid JSON"),
    "unknown status": (replaced(2, "exploded"), "column 'status' has unknown value 'exploded'"),
    "unknown operation": (replaced(1, "smash"), "column 'operation' has unknown value 'smash'"),
    "batch number as text": (
        table(lambda t: t.set_column(5, "batch_number", pa.array(["0"] * 10))),
        "column 'batch_number' is string, expected integer",
    ),
    "not a Parquet file": (garbage, "cannot read records"),
    "data pages the executors cannot read": (corrupt_pages, "cannot read records"),
    "no records file": (nothing, "records file"),
    "a folder without Parquet files": (empty_folder, "holds no .parquet files"),
}
"""Inputs refused with exit 2: how to write records.parquet, and what the one line says."""


def write(tmp_path: Path, records: Callable[[Path], None], run: dict[str, Any] | None = None) -> list[str]:
    (tmp_path / "run.json").write_text(json.dumps(run or RUN.to_dict()))
    records(tmp_path / "records.parquet")
    (tmp_path / "synclog.toml").write_text(f'storage = "{tmp_path / "storage"}"\n')
    return [
        "--config", str(tmp_path / "synclog.toml"),
        "write", "--run", str(tmp_path / "run.json"), "--records", str(tmp_path / "records.parquet"),
        "--target", f"duckdb:///{tmp_path / 'logs.duckdb'}",
    ]  # fmt: skip


def logged(tmp_path: Path) -> list[tuple[Any, ...]]:
    """The census rows that landed (none when the database or its table was never made)."""
    path = tmp_path / "logs.duckdb"
    if not path.exists():
        return []
    with duckdb.connect(str(path)) as conn:
        if not conn.execute("SELECT * FROM duckdb_views() WHERE view_name = 'sync_log'").fetchall():
            return []
        return conn.execute(
            "SELECT record_identifier, status, invalid_reason, status_message, record_payload::VARCHAR, "
            "batch_started_at FROM census.sync_log ORDER BY log_id"
        ).fetchall()


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_accepted_inputs_land_every_record(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], spark: Any
) -> None:
    records, expected = ACCEPTED[case]
    assert main(write(tmp_path, records)) == 0
    out = capsys.readouterr()
    assert f"logged {expected:,} records of run 5678" in out.out
    assert "Traceback" not in out.err
    rows = logged(tmp_path)
    assert len(rows) == expected
    if case == "zero records":
        with duckdb.connect(str(tmp_path / "logs.duckdb")) as conn:
            (source,) = conn.execute("SELECT id, name FROM census.source_objects").fetchall()
        assert source == (RUN.source_object.id, RUN.source_object.name), "the run is logged without records"
    if case == "nanosecond timestamps (pandas)":
        assert {r[5].astimezone(UTC) for r in rows} == {RUN.started_at}, "truncated to microseconds"
    if case.startswith("odd"):
        values = [*(v for r in rows for v in r[:4]), *(json.loads(r[4]).get("note") for r in rows)]
        assert ODD in values, "the value round-trips exactly"
    if case == "NULL and duplicate identifiers":
        assert sorted(r[2] or "" for r in rows) == [
            "",
            "",
            "",
            "",
            "",
            "",
            "DUPLICATE",
            "DUPLICATE",
            "NULL",
            "NULL",
        ]
    if case == "a 20 MB payload":
        (marker,) = [json.loads(r[4]) for r in rows if TRUNCATED_MARKER in r[4]]
        assert marker["original_bytes"] > BIG, "the largest payloads are truncated with the marker"


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_inputs_land_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], spark: Any
) -> None:
    records, message = REFUSED[case]
    assert main(write(tmp_path, records)) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert logged(tmp_path) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sync_run_id": "5678a"}, "'sync_run_id' must be an integer, got '5678a'"),
        ({"started_at": "yesterday"}, "'started_at' must be an ISO-8601 timestamp"),
        ({"behaviour": "teleport"}, "'behaviour' is 'teleport', expected one of"),
    ],
)
def test_a_bad_run_description_lands_nothing(
    change: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], spark: Any
) -> None:
    assert main(write(tmp_path, replaced(4, "{}"), {**RUN.to_dict(), **change})) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert logged(tmp_path) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "run.json is not valid: Expecting property name"),
        (None, "cannot read run description"),
    ],
    ids=["not JSON", "a folder"],
)
def test_an_unreadable_run_description_lands_nothing(
    text: str | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], spark: Any
) -> None:
    args = write(tmp_path, replaced(4, "{}"))
    (tmp_path / "run.json").unlink()
    if text is None:
        (tmp_path / "run.json").mkdir()
    else:
        (tmp_path / "run.json").write_text(text)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert logged(tmp_path) == []


@pytest.mark.parametrize(
    ("records", "line"),
    [
        (
            replaced(2, "exploded"),
            "synclog: error: record results: column 'status' has unknown value 'exploded' "
            "(expected one of succeeded, rejected, aborted)",
        ),
        (corrupt_pages, "synclog: error: cannot read records "),
    ],
    ids=["unknown status", "pages the executors cannot read"],
)
def test_as_a_process_stderr_holds_one_line(
    records: Callable[[Path], None], line: str, tmp_path: Path
) -> None:
    """The whole process, Spark's start and its executors included, prints one line for a refused input."""
    args = write(tmp_path, records)
    done = subprocess.run(
        [sys.executable, "-m", "synclog", *args], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 2
    (only,) = done.stderr.strip().splitlines()
    assert only.startswith(line) if line.endswith(" ") else only == line
    assert done.stdout == ""
    assert logged(tmp_path) == []
