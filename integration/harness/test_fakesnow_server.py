"""The fakesnow harness runs the real Snowflake connector, in-process and over its server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .errors import ServerUnavailable
from .fakesnow_server import fakesnow_patched, fakesnow_server

SEED_000_QUERY = """SELECT * 
FROM CENSUS.CENSUS.SYNC_LOG log
LEFT JOIN CENSUS.CENSUS.SOURCE_OBJECTS source
ON log.source_object_id = source.id
WHERE log.sync_id = 1234;"""  # noqa: W291 - verbatim from the Census docs

CREATE_LOGS = """CREATE TABLE IF NOT EXISTS CENSUS.CENSUS.SYNC_LOG_DATA (
    log_id VARCHAR, sync_id NUMBER, record_payload VARIANT, batch_started_at TIMESTAMP_NTZ,
    source_object_id NUMBER)"""

# A COPY with a transform: PARSE_JSON turns the Parquet string column into a VARIANT object.
COPY_LOGS = """COPY INTO CENSUS.CENSUS.SYNC_LOG_DATA (log_id, sync_id, record_payload, batch_started_at)
FROM (SELECT $1:log_id::VARCHAR, $1:sync_id, PARSE_JSON($1:record_payload::VARCHAR), $1:batch_started_at
      FROM @SYNCLOG_STAGE/{prefix}/)
FILE_FORMAT = (TYPE = PARQUET)"""


@contextmanager
def _skip_if_unavailable() -> Iterator[None]:
    try:
        yield
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


def _write_batch(directory: Path, sync_id: int, n_files: int = 2) -> list[Path]:
    """A Spark-like output directory: part files plus a _SUCCESS marker."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "_SUCCESS").touch()
    parts = []
    for i in range(n_files):
        part = directory / f"part-{i:05d}.parquet"
        table = pa.table(
            {
                "log_id": [f"{sync_id}-{i}-a", f"{sync_id}-{i}-b"],
                "sync_id": pa.array([sync_id, sync_id], pa.int64()),
                "record_payload": [json.dumps({"email": f"u{i}@x.io", "n": {"k": [i]}}), None],
                "batch_started_at": pa.array([1_700_000_000_000_000, None], pa.timestamp("us", tz="UTC")),
            }
        )
        pq.write_table(table, part)
        parts.append(part)
    return parts


def _load(cur: Any, parts: list[Path], prefix: str) -> list[tuple[Any, ...]]:
    for part in parts:  # fakesnow's in-process PUT takes one file (no glob) per statement
        cur.execute(f"PUT 'file://{part}' @SYNCLOG_STAGE/{prefix}/ AUTO_COMPRESS = FALSE OVERWRITE = TRUE")
        assert cur.fetchall()[0][6] == "UPLOADED"
    cur.execute(COPY_LOGS.format(prefix=prefix))
    return list(cur.fetchall())


def test_patched_round_trip_view_and_seed_query() -> None:
    with _skip_if_unavailable(), fakesnow_patched(bootstrap=[("CENSUS", "CENSUS")]) as kwargs:
        import snowflake.connector

        conn = snowflake.connector.connect(**kwargs, database="CENSUS", schema="CENSUS")
        cur = conn.cursor()
        cur.execute(CREATE_LOGS)
        cur.execute("CREATE TABLE CENSUS.CENSUS.SOURCE_OBJECTS (id NUMBER, type VARCHAR, name VARCHAR)")
        # A view body naming CENSUS.CENSUS.X is an "Ambiguous reference" in DuckDB: use schema-relative names.
        cur.execute("USE SCHEMA CENSUS.CENSUS")
        cur.execute("CREATE OR REPLACE VIEW CENSUS.CENSUS.SYNC_LOG AS SELECT * FROM SYNC_LOG_DATA")
        cur.execute(
            "INSERT INTO sync_log_data (log_id, sync_id, record_payload, source_object_id) "
            "SELECT %s, %s, PARSE_JSON(%s), %s",
            ("l1", 1234, json.dumps({"a": 1}), 7),
        )
        cur.execute("INSERT INTO SOURCE_OBJECTS VALUES (7, 'DataWarehouse::Table', 'users')")
        cur.execute(SEED_000_QUERY)
        rows = cur.fetchall()
        names = [d[0] for d in cur.description]
        assert len(rows) == 1
        row = dict(zip(names, rows[0], strict=False))
        assert row["LOG_ID"] == "l1"
        assert row["NAME"] == "users"
        assert names[0] == "LOG_ID"  # unquoted identifiers fold to upper case
        cur.execute("SELECT record_payload:a::INT FROM CENSUS.CENSUS.SYNC_LOG")
        assert cur.fetchall() == [(1,)]
        conn.close()


def test_patched_put_copy_into_variant(tmp_path: Path) -> None:
    with _skip_if_unavailable(), fakesnow_patched(bootstrap=[("CENSUS", "CENSUS")]) as kwargs:
        import fakesnow.transforms.stage as fs_stage
        import snowflake.connector

        conn = snowflake.connector.connect(**kwargs, database="CENSUS", schema="CENSUS")
        cur = conn.cursor()
        cur.execute(CREATE_LOGS)
        cur.execute("CREATE TEMPORARY STAGE SYNCLOG_STAGE")
        loaded = _load(cur, _write_batch(tmp_path / "run-1", sync_id=1), prefix="run-1")
        assert [(r[1], r[2]) for r in loaded] == [("LOADED", 2), ("LOADED", 2)]
        # Same file names under a new prefix (the next batch) load too.
        loaded = _load(cur, _write_batch(tmp_path / "run-2", sync_id=2, n_files=1), prefix="run-2")
        assert [(r[1], r[2]) for r in loaded] == [("LOADED", 2)]

        cur.execute(
            "SELECT log_id, record_payload:email::VARCHAR, record_payload:n.k[0]::INT, "
            "record_payload IS NULL, batch_started_at FROM SYNC_LOG_DATA ORDER BY log_id"
        )
        rows = cur.fetchall()
        assert len(rows) == 6
        assert rows[0][:4] == ("1-0-a", "u0@x.io", 0, False)
        assert rows[0][4].isoformat() == "2023-11-14T22:13:20"
        assert rows[1][3:] == (True, None)  # NULL payload and NULL timestamp stay NULL
        conn.close()
        assert any(Path(fs_stage.LOCAL_BUCKET_PATH).rglob("*.parquet"))
    assert not any(Path(fs_stage.LOCAL_BUCKET_PATH).rglob("*.parquet"))


def test_patched_db_path_persists(tmp_path: Path) -> None:
    db_dir = tmp_path / "db"
    with _skip_if_unavailable(), fakesnow_patched(db_dir, bootstrap=[("CENSUS", "CENSUS")]) as kwargs:
        import snowflake.connector

        with snowflake.connector.connect(**kwargs, database="CENSUS", schema="CENSUS") as conn:
            conn.cursor().execute("CREATE TABLE T (id INT)")
            conn.cursor().execute("INSERT INTO T VALUES (1), (2)")
    assert (db_dir / "CENSUS.db").is_file()
    with (
        fakesnow_patched(db_dir, bootstrap=[("CENSUS", "CENSUS")]) as kwargs,
        snowflake.connector.connect(**kwargs) as conn,  # no database: needs the bootstrap attach
    ):
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM CENSUS.CENSUS.T")
        assert cur.fetchall() == [(2,)]


_CLIENT = textwrap.dedent(
    """
    import json, sys
    import snowflake.connector
    kwargs = json.loads(sys.argv[1])
    with snowflake.connector.connect(**kwargs) as conn:
        cur = conn.cursor()
        cur.execute("SELECT log_id, record_payload:email::VARCHAR FROM SYNC_LOG_DATA ORDER BY log_id")
        print(json.dumps(cur.fetchall()))
    """
)


def test_server_put_copy_and_other_process(tmp_path: Path) -> None:
    with _skip_if_unavailable(), fakesnow_server() as srv:
        import snowflake.connector

        with snowflake.connector.connect(**srv.connect_kwargs()) as conn:
            cur = conn.cursor()
            cur.execute("CREATE DATABASE CENSUS")
            cur.execute("CREATE SCHEMA CENSUS.CENSUS")
        with snowflake.connector.connect(**srv.connect_kwargs("CENSUS", "CENSUS")) as conn:
            cur = conn.cursor()
            cur.execute(CREATE_LOGS)
            cur.execute("CREATE TEMPORARY STAGE SYNCLOG_STAGE")
            parts = _write_batch(tmp_path / "run-1", sync_id=1)
            # Over the server the connector uploads the files itself, so a glob works.
            cur.execute(
                f"PUT 'file://{tmp_path}/run-1/*.parquet' @SYNCLOG_STAGE/run-1/ AUTO_COMPRESS = FALSE"
            )
            assert sorted(r[0] for r in cur.fetchall()) == [p.name for p in parts]
            cur.execute(COPY_LOGS.format(prefix="run-1"))
            assert [r[1] for r in cur.fetchall()] == ["LOADED", "LOADED"]

        out = subprocess.run(
            [sys.executable, "-c", _CLIENT, json.dumps(srv.connect_kwargs("CENSUS", "CENSUS"))],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout.strip().splitlines()[-1])
        assert rows[0] == ["1-0-a", "u0@x.io"]
        assert len(rows) == 4
    with pytest.raises(OSError):
        srv.log_path.read_text()


def test_server_stops_when_body_raises() -> None:
    with _skip_if_unavailable():
        with pytest.raises(RuntimeError, match="boom"), fakesnow_server() as srv:
            raise RuntimeError("boom")
        with pytest.raises(ProcessLookupError):
            os.kill(srv.pid, 0)
