"""The real databricks-sql-connector (use_sea=True) against the local Statement Execution API stand-in."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .databricks_sql_server import DatabricksSqlServer, databricks_sql_server
from .errors import ServerUnavailable

sql = pytest.importorskip("databricks.sql", reason="databricks-sql-connector is not installed")
from databricks.sql.exc import OperationalError, RequestError, ServerOperationError  # noqa: E402

CREATE_LOGS = """CREATE TABLE IF NOT EXISTS census.census.sync_log_records (
    log_id STRING, sync_id BIGINT, record_payload STRING, batch_started_at TIMESTAMP, amount DECIMAL(10, 2),
    ok BOOLEAN, day DATE) USING DELTA PARTITIONED BY (day)"""


@pytest.fixture(scope="module")
def dbx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatabricksSqlServer]:
    try:
        with databricks_sql_server(["census"], parent_dir=tmp_path_factory.mktemp("dbx")) as server:
            yield server
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


@pytest.fixture
def conn(dbx: DatabricksSqlServer, tmp_path: Path) -> Iterator[Any]:
    connection = sql.connect(**dbx.connect_kwargs(catalog="census", staging_allowed_local_path=str(tmp_path)))
    cur = connection.cursor()
    cur.execute("CREATE SCHEMA IF NOT EXISTS census.census")
    cur.execute(CREATE_LOGS)
    cur.execute("CREATE VOLUME IF NOT EXISTS census.census.staging")
    cur.close()
    yield connection
    connection.close()


def _write_parquet(path: Path, start: int, n: int) -> Path:
    """Rows for sync_log_records as Spark would stage them, with one extra column and one missing."""
    table = pa.table(
        {
            "log_id": [f"l{i}" for i in range(start, start + n)],
            "sync_id": pa.array([1234] * n, pa.int64()),
            "record_payload": [json.dumps({"email": f"u{i}@x.io"}) for i in range(start, start + n)],
            "batch_started_at": pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC")),
            "day": pa.array([dt.date(2024, 1, 2)] * n, pa.date32()),
            "not_in_table": list(range(n)),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize("use_cloud_fetch", [True, False], ids=["arrow-links", "json-inline"])
def test_named_parameters_insert_and_select(
    conn: Any, use_cloud_fetch: bool, dbx: DatabricksSqlServer
) -> None:
    with sql.connect(
        **dbx.connect_kwargs(catalog="census", schema="census", use_cloud_fetch=use_cloud_fetch)
    ) as c:
        cur = c.cursor()
        log_id = f"p-{uuid.uuid4().hex[:8]}"
        row = {
            "log_id": log_id,
            "sync_id": 1234,
            "payload": json.dumps({"a": "it's"}),
            "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123000),
            "amount": decimal.Decimal("12.34"),
            "ok": True,
            "day": dt.date(2024, 1, 2),
        }
        cur.execute(
            "INSERT INTO census.census.sync_log_records "
            "VALUES (:log_id, :sync_id, :payload, :ts, :amount, :ok, :day)",
            row,
        )
        cur.execute(  # unqualified: the session's catalog and schema
            "INSERT INTO sync_log_records (log_id, sync_id, day) VALUES (:log_id, :sync_id, :day)",
            {"log_id": log_id + "-null", "sync_id": None, "day": dt.date(2024, 1, 3)},
        )
        cur.execute(
            "SELECT log_id, sync_id, record_payload, batch_started_at, amount, ok, day "
            "FROM census.census.sync_log_records WHERE log_id LIKE :prefix ORDER BY log_id",
            {"prefix": log_id + "%"},
        )
        rows = cur.fetchall()
        assert [d[0] for d in cur.description] == [
            "log_id", "sync_id", "record_payload", "batch_started_at", "amount", "ok", "day"
        ]  # fmt: skip
        assert [d[1] for d in cur.description] == [
            "string", "bigint", "string", "timestamp", "decimal", "boolean", "date"
        ]  # fmt: skip
        first, second = (tuple(r) for r in rows)
        assert first[:3] == (log_id, 1234, row["payload"])
        assert first[3].replace(tzinfo=None) == row["ts"]  # session time zone UTC
        assert first[4:] == (decimal.Decimal("12.34"), True, dt.date(2024, 1, 2))
        assert second == (log_id + "-null", None, None, None, None, None, dt.date(2024, 1, 3))


def test_put_copy_into_and_select_back(conn: Any, dbx: DatabricksSqlServer, tmp_path: Path) -> None:
    cur = conn.cursor()
    run = f"run-{uuid.uuid4().hex[:8]}"
    parts = [_write_parquet(tmp_path / run / f"part-{i}.parquet", start=i * 10, n=3) for i in range(2)]
    for part in parts:
        cur.execute(f"PUT '{part}' INTO '/Volumes/census/census/staging/{run}/{part.name}' OVERWRITE")
    assert sorted(p.name for p in (dbx.volume_dir("census", "census", "staging") / run).iterdir()) == [
        "part-0.parquet",
        "part-1.parquet",
    ]
    copy = (
        "COPY INTO census.census.sync_log_records "
        f"FROM '/Volumes/census/census/staging/{run}' FILEFORMAT = PARQUET"
    )
    cur.execute(copy)
    assert [tuple(r) for r in cur.fetchall()] == [(6, 6, 0)]
    cur.execute(copy)  # files already loaded are skipped, as on Databricks
    assert [tuple(r) for r in cur.fetchall()] == [(0, 0, 0)]
    cur.execute(copy + " PATTERN = 'part-1*' COPY_OPTIONS ('force' = 'true')")
    assert [tuple(r) for r in cur.fetchall()] == [(3, 3, 0)]
    cur.execute(
        "SELECT count(*), count(DISTINCT log_id), min(get_json_object(record_payload, '$.email')), "
        "min(batch_started_at), count(amount) FROM census.census.sync_log_records WHERE log_id IN "
        "('l0', 'l1', 'l2', 'l10', 'l11', 'l12')"
    )
    count, distinct, email, started, amounts = cur.fetchone()
    assert (count, distinct, email, amounts) == (9, 6, "u0@x.io", 0)  # amount is not in the files: NULL
    assert started == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=started.tzinfo)


def test_copy_into_files_and_merge_schema(conn: Any, tmp_path: Path) -> None:
    cur = conn.cursor()
    cur.execute("CREATE OR REPLACE TABLE census.census.copy_target (id BIGINT)")
    run = f"/Volumes/census/census/staging/evolve-{uuid.uuid4().hex[:8]}"
    for name, ids in (("a.parquet", [1, 2]), ("b.parquet", [3])):
        local = tmp_path / name
        pq.write_table(pa.table({"ID": pa.array(ids, pa.int64()), "note": [f"n{i}" for i in ids]}), local)
        cur.execute(f"PUT '{local}' INTO '{run}/{name}'")
    cur.execute(
        f"COPY INTO census.census.copy_target FROM '{run}' FILEFORMAT = PARQUET FILES = ('a.parquet')"
    )
    assert [tuple(r) for r in cur.fetchall()] == [(2, 2, 0)]
    cur.execute(  # b.parquet is new; mergeSchema adds the column "note"
        f"COPY INTO census.census.copy_target FROM '{run}' FILEFORMAT = PARQUET "
        "COPY_OPTIONS ('mergeSchema' = 'true')"
    )
    assert [tuple(r) for r in cur.fetchall()] == [(1, 1, 0)]
    cur.execute("SELECT id, note FROM census.census.copy_target ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == [(1, None), (2, None), (3, "n3")]
    with pytest.raises(ServerOperationError, match="UNSUPPORTED_COPY_INTO"):
        cur.execute(f"COPY INTO census.census.copy_target FROM '{run}' FILEFORMAT = PARQUET VALIDATE ALL")
    cur.execute("DROP TABLE census.census.copy_target")


def test_put_get_remove_round_trip(conn: Any, tmp_path: Path) -> None:
    cur = conn.cursor()
    local = tmp_path / "hello.txt"
    local.write_bytes(b"hello volume")
    remote = f"/Volumes/census/census/staging/files/{uuid.uuid4().hex}.txt"
    cur.execute(f"PUT '{local}' INTO '{remote}'")
    with pytest.raises(ServerOperationError, match="FILE_IN_STAGING_PATH_ALREADY_EXISTS"):
        cur.execute(f"PUT '{local}' INTO '{remote}'")
    back = tmp_path / "back.txt"
    cur.execute(f"GET '{remote}' TO '{back}'")
    assert back.read_bytes() == b"hello volume"
    cur.execute(f"REMOVE '{remote}'")
    with pytest.raises(OperationalError, match="Staging operation over HTTP was unsuccessful: 404"):
        cur.execute(f"GET '{remote}' TO '{back}'")
    with pytest.raises(ServerOperationError, match="does not exist"):
        cur.execute(f"PUT '{local}' INTO '/Volumes/census/census/no_such_volume/x.txt'")


def test_sql_errors_are_the_connectors_errors(conn: Any) -> None:
    cur = conn.cursor()
    with pytest.raises(ServerOperationError, match=r"TABLE_OR_VIEW_NOT_FOUND.*census.*census.*missing"):
        cur.execute("SELECT * FROM census.census.missing")
    with pytest.raises(ServerOperationError, match="PARSE_SYNTAX_ERROR"):
        cur.execute("SELEC 1")
    with pytest.raises(ServerOperationError, match="DATA_SOURCE_NOT_FOUND"):  # a JVM error pyspark keeps raw
        cur.execute("CREATE TABLE census.census.iceberg_t (a INT) USING iceberg")
    cur.execute("SELECT 1 AS still_usable")
    assert cur.fetchone()[0] == 1


def test_delete_and_insert_only_merge_are_emulated(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE IF NOT EXISTS census.census.retention (id INT, day DATE) PARTITIONED BY (day)")
    cur.execute(
        "INSERT INTO census.census.retention VALUES (1, DATE'2024-01-01'), (2, DATE'2024-01-02'), "
        "(3, DATE'2024-01-02')"
    )
    merge = (  # an exactly-once load keyed by id: run twice, inserts once
        "MERGE INTO census.census.retention AS t USING (SELECT * FROM VALUES (3, DATE'2024-01-02'), "
        "(4, DATE'2024-01-03') AS v(id, day)) AS s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    )
    cur.execute(merge)
    assert [tuple(r) for r in cur.fetchall()] == [(1, 0, 0, 1)]
    cur.execute(merge)
    assert [tuple(r) for r in cur.fetchall()] == [(0, 0, 0, 0)]
    cur.execute("DELETE FROM census.census.retention WHERE day < :cutoff", {"cutoff": dt.date(2024, 1, 2)})
    assert [tuple(r) for r in cur.fetchall()] == [(1,)]
    cur.execute("DELETE FROM census.census.retention r WHERE r.id = 3")
    assert [tuple(r) for r in cur.fetchall()] == [(1,)]
    cur.execute("SELECT id FROM census.census.retention ORDER BY id")
    assert [r[0] for r in cur.fetchall()] == [2, 4]
    with pytest.raises(ServerOperationError, match=r"does not support MERGE INTO TABLE.*emulates"):
        cur.execute(  # updates are not emulated
            "MERGE INTO census.census.retention t USING (SELECT 2 AS id, DATE'2024-01-05' AS day) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
    cur.execute("ALTER TABLE census.census.retention DROP IF EXISTS PARTITION (day = DATE'2024-01-03')")
    cur.execute("SHOW PARTITIONS census.census.retention")
    assert [r[0] for r in cur.fetchall()] == ["day=2024-01-02"]
    cur.execute("DROP TABLE census.census.retention")


def test_a_session_reads_what_another_session_wrote_since(dbx: DatabricksSqlServer, conn: Any) -> None:
    """A table read in one session, then written in another, reads the new rows in the first."""
    with sql.connect(**dbx.connect_kwargs(catalog="census")) as other, other.cursor() as writer:
        cur = conn.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS census.census.seen (id INT) USING DELTA")
        cur.execute("SELECT count(*) FROM census.census.seen")
        assert cur.fetchall()[0][0] == 0
        writer.execute("INSERT INTO census.census.seen VALUES (1), (2)")
        cur.execute("SELECT count(*) FROM census.census.seen")
        assert cur.fetchall()[0][0] == 2
        cur.execute("DROP TABLE census.census.seen")


MARKER_MERGE = (  # the shape synclog's core sends: the staged rows, and a marker row per replaced key
    "MERGE INTO census.census.swap AS t USING (SELECT id, v, FALSE AS mark FROM VALUES (2, 'new'), "
    "(2, 'newer') AS s(id, v) UNION ALL SELECT CAST(? AS INT), CAST(NULL AS STRING), TRUE) AS s "
    "ON t.id = s.id AND s.mark WHEN MATCHED THEN DELETE "
    "WHEN NOT MATCHED AND NOT s.mark THEN INSERT (id, v) VALUES (s.id, s.v)"
)


def test_merge_that_deletes_is_emulated_by_a_rewrite(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("CREATE OR REPLACE TABLE census.census.swap (id INT, v STRING, note STRING) USING DELTA")
    cur.execute("INSERT INTO census.census.swap VALUES (1, 'a', 'kept'), (2, 'old', 'x'), (3, 'c', NULL)")
    # A replay deletes what the first run inserted and inserts it again.
    for deleted in (1, 2):
        cur.execute(MARKER_MERGE, [2])
        assert [d[0] for d in cur.description][2:] == ["num_deleted_rows", "num_inserted_rows"]
        assert tuple(cur.fetchone()) == (deleted + 2, 0, deleted, 2)
        cur.execute("SELECT id, v, note FROM census.census.swap ORDER BY id, v")
        assert [tuple(r) for r in cur.fetchall()] == [
            (1, "a", "kept"),
            (2, "new", None),
            (2, "newer", None),
            (3, "c", None),
        ]
    cur.execute(  # delete-only, with a condition on the matched clause
        "MERGE INTO census.census.swap t USING (SELECT * FROM VALUES (1), (3) AS k(id)) k "
        "ON t.id = k.id WHEN MATCHED AND t.v = :v THEN DELETE",
        {"v": "c"},
    )
    assert tuple(cur.fetchone()) == (1, 0, 1, 0)
    cur.execute("SELECT id FROM census.census.swap ORDER BY id")
    assert [r[0] for r in cur.fetchall()] == [1, 2, 2]
    cur.execute("DROP TABLE census.census.swap")


@pytest.mark.parametrize("use_cloud_fetch", [True, False], ids=["arrow-links", "json-inline"])
def test_variant_values_come_back_as_json_text(dbx: DatabricksSqlServer, use_cloud_fetch: bool) -> None:
    with sql.connect(**dbx.connect_kwargs(catalog="census", use_cloud_fetch=use_cloud_fetch)) as c:
        cur = c.cursor()
        cur.execute("""SELECT PARSE_JSON('{"b": [1, "x"], "a": null}') AS j, CAST(NULL AS VARIANT) AS n""")
        assert [tuple(r) for r in cur.fetchall()] == [('{"a":null,"b":[1,"x"]}', None)]


def test_create_catalog_view_and_metadata(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("CREATE CATALOG IF NOT EXISTS mycatalog")
    cur.execute("CREATE SCHEMA IF NOT EXISTS mycatalog.hightouch_audit")
    cur.execute("CREATE OR REPLACE TABLE mycatalog.hightouch_audit.sync_changelog (id INT, op_type STRING)")
    cur.execute("INSERT INTO mycatalog.hightouch_audit.sync_changelog VALUES (1, 'added')")
    cur.execute(
        "CREATE OR REPLACE VIEW census.census.sync_log AS SELECT * FROM census.census.sync_log_records "
        "WHERE sync_id IS NOT NULL"
    )
    cur.execute("USE CATALOG mycatalog")
    cur.execute("SELECT op_type FROM hightouch_audit.sync_changelog")
    assert cur.fetchall()[0][0] == "added"
    cur.catalogs()
    assert {"census", "mycatalog"} <= {r[0] for r in cur.fetchall()}
    cur.tables(catalog_name="census", schema_name="census")
    assert {"sync_log", "sync_log_records"} <= {r[2] for r in cur.fetchall()}


def test_async_execution_polls_until_done(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute_async("SELECT count(*) FROM range(200000)")
    cur.get_async_execution_result()
    assert cur.fetchone()[0] == 200000


def test_requests_need_a_bearer_token(dbx: DatabricksSqlServer) -> None:
    request = urllib.request.Request(
        f"http://{dbx.host}:{dbx.port}/api/2.0/sql/sessions",
        data=json.dumps({"warehouse_id": "synclog-local"}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 401
    with pytest.raises(RequestError):  # a warehouse the server does not have
        sql.connect(**dbx.connect_kwargs(http_path="/sql/1.0/warehouses/other"))
    with pytest.raises(RequestError):  # the session's schema must exist
        sql.connect(**dbx.connect_kwargs(catalog="census", schema="no_such_schema"))
    assert dbx.token not in repr(dbx)


def test_server_stops_when_body_raises(tmp_path: Path) -> None:
    try:
        with pytest.raises(RuntimeError, match="boom"), databricks_sql_server([], parent_dir=tmp_path) as srv:
            pid = _server_pid(srv)
            raise RuntimeError("boom")
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    assert not srv.base_dir.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def _server_pid(srv: DatabricksSqlServer) -> int:
    with urllib.request.urlopen(f"http://{srv.host}:{srv.port}/healthz", timeout=10) as response:
        return int(json.load(response)["pid"])
