"""The Redshift stand-in: the real redshift_connector through the proxy to a real Postgres, S3 on moto."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from .errors import ServerUnavailable
from .postgres_server import postgres_server
from .redshift_proxy import RedshiftStandIn, redshift_stand_in
from .redshift_sql import translate
from .result_rows import compact_json
from .s3_server import s3_server

redshift_connector = pytest.importorskip("redshift_connector")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def stand_in() -> Iterator[RedshiftStandIn]:
    try:
        with postgres_server() as pg, s3_server() as s3, redshift_stand_in(pg, s3) as rs:
            yield rs
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


@pytest.fixture
def conn(stand_in: RedshiftStandIn) -> Iterator[Any]:
    connection = redshift_connector.connect(**stand_in.connect_kwargs())
    try:
        yield connection
    finally:
        connection.close()


def _s3(stand_in: RedshiftStandIn) -> Any:
    import boto3

    s3 = stand_in.s3
    return boto3.client(
        "s3",
        endpoint_url=s3.endpoint_url,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
        region_name=s3.region,
    )


def _put_parquet(client: Any, bucket: str, key: str, table: Any) -> int:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    client.put_object(Bucket=bucket, Key=key, Body=sink.getvalue())
    return len(sink.getvalue())


def _put_manifest(client: Any, bucket: str, key: str, files: dict[str, int]) -> str:
    entries = [
        {"url": url, "mandatory": True, "meta": {"content_length": size}} for url, size in files.items()
    ]
    client.put_object(Bucket=bucket, Key=key, Body=json.dumps({"entries": entries}).encode())
    return f"s3://{bucket}/{key}"


def _rows(conn: Any, sql: str, params: Any = None) -> list[list[Any]]:
    cursor = conn.cursor()
    cursor.execute(sql, params)
    return [list(row) for row in cursor.fetchall()]


# --------------------------------------------------------------------------- login and plain SQL


def test_login_select_1_and_redshift_server_version(conn: Any) -> None:
    assert _rows(conn, "SELECT 1") == [[1]]
    statuses = dict(conn.parameter_statuses)
    assert statuses[b"server_version"] == b"8.0.2"
    assert _rows(conn, "SELECT current_database()") == [["synclog"]]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the driver's own SSLContext() call
def test_ssl_default_is_refused_with_the_driver_error(stand_in: RedshiftStandIn) -> None:
    with pytest.raises(redshift_connector.InterfaceError, match="Server refuses SSL"):
        redshift_connector.connect(**stand_in.connect_kwargs(ssl=True))


def test_redshift_ddl_super_and_parameterised_insert_select(conn: Any) -> None:
    cursor = conn.cursor()
    cursor.execute(
        "CREATE TABLE ddl_events (id BIGINT IDENTITY(1,1), user_id INTEGER DISTKEY, payload SUPER, "
        "name VARCHAR(MAX) ENCODE zstd, at TIMESTAMP DEFAULT GETDATE()) "
        "DISTSTYLE KEY COMPOUND SORTKEY (at, user_id)"
    )
    cursor.execute(
        "INSERT INTO ddl_events (user_id, payload, name) VALUES (%s, JSON_PARSE(%s), %s)",
        (7, '{"email": "a@example.com", "tags": ["x", "y"], "n": 1.5}', "it's"),
    )
    cursor.execute(
        "INSERT INTO ddl_events (user_id, payload, name) VALUES (%s, JSON_PARSE(%s), %s)", (8, '"s"', None)
    )
    conn.commit()
    cursor.execute(
        "SELECT user_id, payload, payload.email, payload.tags[1], JSON_SERIALIZE(payload), name, at "
        "FROM ddl_events WHERE user_id = %s",
        (7,),
    )
    [row] = cursor.fetchall()
    names = [d[0] for d in cursor.description]
    types = [d[1] for d in cursor.description]
    assert names[:4] == ["user_id", "payload", "email", "tags"]
    assert types[1:4] == [4000, 4000, 4000]  # SUPER, as Redshift sends it
    assert row[0] == 7
    assert isinstance(row[1], str) and json.loads(row[1]) == {
        "email": "a@example.com",
        "tags": ["x", "y"],
        "n": 1.5,
    }
    assert " " not in row[1]  # compact, like Redshift's SUPER text
    assert row[2:4] == ['"a@example.com"', '"y"']  # navigation yields SUPER values: JSON strings
    assert json.loads(row[4])["email"] == "a@example.com"
    assert row[5] == "it's"
    assert row[6] is not None and row[6].tzinfo is None  # GETDATE(): a timestamp without zone
    assert _rows(conn, "SELECT payload FROM ddl_events WHERE user_id = %s", (8,)) == [['"s"']]
    assert _rows(conn, "SELECT user_id FROM ddl_events WHERE payload.email = 'a@example.com'") == [[7]]
    assert _rows(conn, "SELECT payload.email::varchar FROM ddl_events WHERE payload.n > 1") == [
        ["a@example.com"]
    ]


def test_seed_queries_run_as_written(conn: Any) -> None:
    cursor = conn.cursor()
    cursor.execute("CREATE SCHEMA census")
    cursor.execute(
        "CREATE TABLE census.sync_log (sync_id BIGINT, sync_run_id BIGINT, source_object_id BIGINT, "
        "operation VARCHAR(16), record_payload SUPER) DISTKEY(sync_run_id) SORTKEY(sync_run_id)"
    )
    cursor.execute("CREATE TABLE census.source_objects (id BIGINT, name VARCHAR(256)) DISTSTYLE ALL")
    cursor.execute(
        "INSERT INTO census.sync_log VALUES "
        "(1234, 5678, 1, 'delete', JSON_PARSE('{\"email\": \"d@x.io\"}')), "
        "(1234, 5678, 1, 'upsert', JSON_PARSE('{\"email\": \"u@x.io\"}'))"
    )
    cursor.execute("INSERT INTO census.source_objects VALUES (1, 'users')")
    cursor.execute("CREATE SCHEMA hightouch_audit")
    cursor.execute(
        "CREATE TABLE hightouch_audit.sync_snapshot (sync_id BIGINT, row_id VARCHAR(64), status VARCHAR(16))"
    )
    cursor.execute("CREATE TABLE hightouch_audit.sync_runs (sync_id BIGINT, model_name VARCHAR(64))")
    cursor.execute(
        "INSERT INTO hightouch_audit.sync_snapshot VALUES (1, 'u1', 'succeeded'), (1, 'u2', 'failed')"
    )
    cursor.execute("INSERT INTO hightouch_audit.sync_runs VALUES (1, 'm'), (1, 'm')")
    conn.commit()
    census = _rows(
        conn,
        "SELECT log.operation, source.name, log.record_payload.email FROM census.sync_log log "
        "LEFT JOIN census.source_objects source ON log.source_object_id = source.id "
        "WHERE log.sync_run_id = 5678 AND log.operation = 'delete'",
    )
    assert census == [["delete", "users", '"d@x.io"']]
    current = _rows(
        conn,
        "with model_names as (select distinct sync_id, model_name from hightouch_audit.sync_runs) "
        "select model_name, row_id as user_id from hightouch_audit.sync_snapshot s "
        "join model_names r on s.sync_id = r.sync_id where s.status != 'failed' "
        "qualify row_number() over (partition by user_id, model_name order by null) = 1 order by user_id",
    )
    assert current == [["m", "u1"]]


# --------------------------------------------------------------------------- COPY from S3


def _copy_files(stand_in: RedshiftStandIn, bucket: str) -> str:
    """Two Parquet files (id, name, JSON text, a struct) and a manifest listing both."""
    client = _s3(stand_in)
    client.create_bucket(Bucket=bucket)
    files = {}
    for part, ids in enumerate(([1, 2], [3])):
        table = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "name": [f"n{i}" for i in ids],
                "payload_text": [json.dumps({"email": f"{i}@x.io"}) for i in ids],
                "payload": pa.array([{"email": f"{i}@x.io", "n": i} for i in ids]),
            }
        )
        key = f"stage/part-{part}.parquet"
        files[f"s3://{bucket}/{key}"] = _put_parquet(client, bucket, key, table)
    return _put_manifest(client, bucket, "stage/manifest.json", files)


def test_copy_manifest_in_a_transaction_rolls_back_then_commits(stand_in: RedshiftStandIn, conn: Any) -> None:
    manifest = _copy_files(stand_in, "copy-tx")
    cursor = conn.cursor()
    cursor.execute("CREATE TABLE copied (id BIGINT, name VARCHAR(32), payload_text SUPER, payload SUPER)")
    conn.commit()
    role = stand_in.iam_role
    copy = f"COPY copied FROM '{manifest}' IAM_ROLE '{role}' FORMAT AS PARQUET MANIFEST SERIALIZETOJSON"
    cursor.execute(copy)
    assert _rows(conn, "SELECT count(*) FROM copied") == [[3]]  # visible inside the transaction
    conn.rollback()
    assert _rows(conn, "SELECT count(*) FROM copied") == [[0]]
    conn.commit()

    cursor.execute(copy)
    assert cursor.rowcount == -1  # Redshift's server_version 8.0.2: the driver counts no COPY rows
    assert any(b"Load into table 'copied' completed, 3 record(s)" in str(n).encode() for n in conn.notices)
    conn.commit()
    rows = _rows(conn, "SELECT id, name, payload_text, payload, payload.email FROM copied ORDER BY id")
    assert [r[:2] for r in rows] == [[1, "n1"], [2, "n2"], [3, "n3"]]
    # A Parquet string into SUPER is a SUPER string (the JSON text is not parsed); a struct is an object.
    assert json.loads(rows[0][2]) == '{"email": "1@x.io"}'
    assert json.loads(rows[0][3]) == {"email": "1@x.io", "n": 1}
    assert rows[2][4] == '"3@x.io"'


def test_copy_column_list_maps_by_position(stand_in: RedshiftStandIn, conn: Any) -> None:
    client = _s3(stand_in)
    client.create_bucket(Bucket="copy-columns")
    size = _put_parquet(client, "copy-columns", "f.parquet", pa.table({"x": ["a", "b"], "y": [10, 20]}))
    assert size > 0
    cursor = conn.cursor()
    cursor.execute("CREATE TABLE mapped (n BIGINT, label VARCHAR(8), extra VARCHAR(8) DEFAULT 'd')")
    cursor.execute(
        "COPY mapped (label, n) FROM 's3://copy-columns/f.parquet' "
        f"ACCESS_KEY_ID '{stand_in.s3.access_key}' SECRET_ACCESS_KEY '{stand_in.s3.secret_key}' "
        "FORMAT PARQUET"
    )
    conn.commit()
    assert _rows(conn, "SELECT n, label, extra FROM mapped ORDER BY n") == [[10, "a", "d"], [20, "b", "d"]]


@pytest.mark.timeout(60)
def test_copy_errors_come_back_as_driver_errors(stand_in: RedshiftStandIn, conn: Any) -> None:
    manifest = _copy_files(stand_in, "copy-errors")
    cursor = conn.cursor()
    cursor.execute(
        "CREATE TABLE copy_target (id BIGINT, name VARCHAR(32), payload_text SUPER, payload SUPER)"
    )
    conn.commit()
    role = stand_in.iam_role
    parquet = f"IAM_ROLE '{role}' FORMAT AS PARQUET"
    failures = [
        (
            f"copy_target FROM 's3://copy-errors/missing.manifest' {parquet} MANIFEST",
            "Problem reading manifest",
        ),
        (
            f"copy_target FROM 's3://copy-errors/nothing/' {parquet} SERIALIZETOJSON",
            "prefix 'nothing/' does not",
        ),
        (f"copy_target FROM '{manifest}' {parquet} MANIFEST", "SERIALIZETOJSON"),  # SUPER targets need it
        (
            f"copy_target (id, name, payload) FROM '{manifest}' {parquet} MANIFEST SERIALIZETOJSON",
            "Unmatched",
        ),
        (f"copy_target (id, name) FROM '{manifest}' {parquet} CSV", "FORMAT AS PARQUET|CSV"),
    ]
    for statement, message in failures:
        with pytest.raises(redshift_connector.ProgrammingError, match=message):
            cursor.execute(f"COPY {statement}")
        conn.rollback()
    with pytest.raises(redshift_connector.ProgrammingError, match="IAM_ROLE"):
        cursor.execute(f"COPY copy_target FROM '{manifest}' IAM_ROLE 'not-an-arn' FORMAT AS PARQUET MANIFEST")
    conn.rollback()
    with pytest.raises(redshift_connector.ProgrammingError, match="does not exist"):
        cursor.execute(f"COPY no_such_table FROM '{manifest}' IAM_ROLE '{role}' FORMAT AS PARQUET MANIFEST")
    conn.rollback()
    assert _rows(conn, "SELECT count(*) FROM copy_target") == [[0]]  # the connection still works


def _put_json_lines(client: Any, bucket: str, key: str, lines: list[str], *, sized: bool = True) -> str:
    """One file of JSON objects (one per line) and a manifest naming it: the manifest's URL."""
    data = "".join(line + "\n" for line in lines).encode()
    client.put_object(Bucket=bucket, Key=key, Body=data)
    entry: dict[str, Any] = {"url": f"s3://{bucket}/{key}", "mandatory": True}
    if sized:
        entry["meta"] = {"content_length": len(data)}
    client.put_object(Bucket=bucket, Key=f"{key}.manifest", Body=json.dumps({"entries": [entry]}).encode())
    return f"s3://{bucket}/{key}.manifest"


def _proxy_log_lines(stand_in: RedshiftStandIn, word: str) -> list[str]:
    return [line for line in stand_in.log_file.read_text().splitlines() if f" {word} " in line]


def test_copy_json_auto_loads_values_and_super_stays_navigable(stand_in: RedshiftStandIn, conn: Any) -> None:
    client = _s3(stand_in)
    client.create_bucket(Bucket="copy-json")
    big = {"email": "big@x.io", "items": [{"n": i, "note": "x" * 60} for i in range(1500)]}
    assert len(json.dumps(big)) > 65_535  # more than VARCHAR (and JSON_PARSE) take
    lines = [
        json.dumps({"id": 1, "name": "n1", "payload": big, "at": "2026-03-01T08:00:00.123456Z", "ok": True}),
        json.dumps({"id": 2, "payload": "s", "at": "1969-12-31 23:59:59.999999+00", "extra": [1]}),
        json.dumps({"id": 3, "name": None, "payload": None, "ok": False}),
    ]
    manifest = _put_json_lines(client, "copy-json", "stage/part-0.jsonl", lines, sized=False)
    cursor = conn.cursor()
    cursor.execute(
        "CREATE TABLE copied_json (seq BIGINT IDENTITY(1,1), id BIGINT, name VARCHAR(8), payload SUPER, "
        "at TIMESTAMPTZ, ok BOOLEAN)"
    )
    before = len(_proxy_log_lines(stand_in, "COPY"))
    cursor.execute(
        f"COPY copied_json FROM '{manifest}' IAM_ROLE '{stand_in.iam_role}' "
        "FORMAT AS JSON 'auto' TIMEFORMAT 'auto' TRUNCATECOLUMNS COMPUPDATE OFF STATUPDATE OFF MANIFEST"
    )
    conn.commit()
    rows = _rows(conn, "SELECT id, name, payload.email, payload, at, ok FROM copied_json ORDER BY id")
    assert [r[:3] for r in rows] == [[1, "n1", '"big@x.io"'], [2, None, None], [3, None, None]]
    assert json.loads(rows[0][3]) == big
    assert [r[3] for r in rows[1:]] == ['"s"', "null"]  # a string stays a string; null is SUPER's null
    assert [r[4] for r in rows] == [
        datetime(2026, 3, 1, 8, 0, 0, 123456, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        None,
    ]
    assert [r[5] for r in rows] == [True, None, False]
    assert _rows(conn, "SELECT count(*) FROM copied_json WHERE seq IS NOT NULL") == [[3]]
    added = _proxy_log_lines(stand_in, "COPY")[before:]
    assert [line.split(" INFO ", 1)[1] for line in added] == ["COPY copied_json 3 rows from 1 files"]


@pytest.mark.timeout(60)
def test_copy_json_refuses_what_redshift_refuses(stand_in: RedshiftStandIn, conn: Any) -> None:
    client = _s3(stand_in)
    client.create_bucket(Bucket="copy-json-errors")
    cursor = conn.cursor()
    cursor.execute("CREATE TABLE json_target (id BIGINT, name VARCHAR(4), payload SUPER, at TIMESTAMP)")
    conn.commit()
    role = stand_in.iam_role

    def copy(lines: list[str], options: str = "FORMAT AS JSON 'auto' TIMEFORMAT 'auto'") -> None:
        manifest = _put_json_lines(client, "copy-json-errors", f"f{uuid.uuid4().hex}.jsonl", lines)
        cursor.execute(f"COPY json_target FROM '{manifest}' IAM_ROLE '{role}' {options} MANIFEST")

    oversized = '{"payload": "' + "x" * (4 * 1024 * 1024) + '"}'
    failures = [
        (['{"id": 1, "name": {"a": 1}}'], "column name: an object or array loads only into SUPER"),
        (['{"id": 1, "name": "ééé"}'], r"String length exceeds DDL length \(6 > 4\)"),
        (['{"id": "1"}'], "Invalid digit"),
        (['{"payload": {"a": ["' + "y" * 65_536 + '"]}}'], "a string of 65536 bytes exceeds SUPER's 65535"),
        (['{"at": "2026-03-01T08:00:00Z"}'], r"Invalid timestamp format", "FORMAT AS JSON 'auto'"),
        (['{"id": 1}', oversized], f"line 2: JSON object of {len(oversized)} bytes exceeds 4194304"),
        (["[1, 2]"], "needs an object, not list"),
        (['{"id": 1', "}{"], "Invalid JSON"),
        (['{"id": 1}'], "JSON 'noshred' is not supported", "FORMAT AS JSON 'noshred'"),
        (['{"id": 1}'], "SERIALIZETOJSON is not supported with FORMAT JSON", "JSON 'auto' SERIALIZETOJSON"),
        (['{"id": 1}'], "TIMEFORMAT is not supported with FORMAT PARQUET", "PARQUET TIMEFORMAT 'auto'"),
    ]
    for lines, message, *options in failures:
        with pytest.raises(redshift_connector.ProgrammingError, match=message):
            copy(lines, *options)
        conn.rollback()
    copy(['{"id": 7, "name": "ééé", "payload": {"k": null}}'], "JSON 'auto' TRUNCATECOLUMNS")
    conn.commit()
    # Cut to the column's 4 bytes at a character boundary.
    assert _rows(conn, "SELECT id, name, payload FROM json_target") == [[7, "éé", '{"k":null}']]


_VICTIM = """
import json, os, sys, time
import redshift_connector
conn = redshift_connector.connect(**json.loads(os.environ["RS_KWARGS"]))
cursor = conn.cursor()
cursor.execute(os.environ["RS_COPY"])
cursor.execute("SELECT pg_backend_pid()")
print(cursor.fetchone()[0], flush=True)
time.sleep(600)
"""


@pytest.mark.timeout(120)
def test_a_client_killed_mid_transaction_leaves_nothing_behind(stand_in: RedshiftStandIn, conn: Any) -> None:
    manifest = _copy_files(stand_in, "killed-client")
    conn.cursor().execute("CREATE TABLE killed_t (id BIGINT, name VARCHAR(32), t SUPER, p SUPER)")
    conn.commit()
    copy = f"COPY killed_t FROM '{manifest}' IAM_ROLE '{stand_in.iam_role}' PARQUET MANIFEST SERIALIZETOJSON"
    env = {**os.environ, "RS_KWARGS": json.dumps(stand_in.connect_kwargs()), "RS_COPY": copy}
    victim = subprocess.Popen([sys.executable, "-c", _VICTIM], stdout=subprocess.PIPE, env=env)
    try:
        assert victim.stdout is not None
        backend_pid = int(victim.stdout.readline())
    finally:
        victim.kill()
        victim.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _rows(conn, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (backend_pid,)) != [[0]]:
        assert time.monotonic() < deadline, "the dead client's backend is still there"
        conn.rollback()
        time.sleep(0.2)
    assert _rows(conn, "SELECT count(*) FROM killed_t") == [[0]]


# --------------------------------------------------------------------------- UNLOAD to S3


def test_unload_with_manifest_writes_the_query_rows(stand_in: RedshiftStandIn, conn: Any) -> None:
    client = _s3(stand_in)
    client.create_bucket(Bucket="unload")
    cursor = conn.cursor()
    cursor.execute(
        "CREATE TABLE unload_src (id INTEGER, label VARCHAR(16), amount DECIMAL(10,2), payload SUPER)"
    )
    cursor.execute(
        "INSERT INTO unload_src VALUES (1, 'it''s', 1.50, JSON_PARSE('{\"a\": 1}')), (2, 'b', NULL, NULL), "
        "(3, 'c', 3.25, JSON_PARSE('[1, 2]'))"
    )
    conn.commit()
    query = "SELECT id, label, amount, payload FROM unload_src WHERE label <> ''b'' ORDER BY id"
    unload = (
        f"UNLOAD ('{query}') TO 's3://unload/run_' IAM_ROLE '{stand_in.iam_role}' FORMAT AS PARQUET MANIFEST"
    )
    cursor.execute(unload)
    assert cursor.description is None

    manifest = json.loads(client.get_object(Bucket="unload", Key="run_manifest")["Body"].read())
    [entry] = manifest["entries"]
    assert entry["url"] == "s3://unload/run_0000_part_00.parquet"
    data = client.get_object(Bucket="unload", Key="run_0000_part_00.parquet")["Body"].read()
    assert entry["meta"]["content_length"] == len(data)
    unloaded = pq.read_table(io.BytesIO(data))
    expected = _rows(conn, query.replace("''", "'"))
    got = unloaded.to_pylist()
    assert [[r["id"], r["label"], r["amount"]] for r in got] == [e[:3] for e in expected]
    assert [json.loads(r["payload"]) for r in got] == [json.loads(e[3]) for e in expected]

    with pytest.raises(redshift_connector.ProgrammingError, match="not empty"):
        cursor.execute(unload)
    conn.rollback()
    cursor.execute(unload.replace("MANIFEST", "MANIFEST VERBOSE ALLOWOVERWRITE PARALLEL OFF"))
    verbose = json.loads(client.get_object(Bucket="unload", Key="run_manifest")["Body"].read())
    assert [e["url"] for e in verbose["entries"]] == ["s3://unload/run_000.parquet"]
    assert verbose["meta"]["record_count"] == 2
    assert verbose["author"]["name"] == "Amazon Redshift"


def test_unloaded_files_copy_back(stand_in: RedshiftStandIn, conn: Any) -> None:
    _s3(stand_in).create_bucket(Bucket="round-trip")
    cursor = conn.cursor()
    cursor.execute("CREATE TABLE rt_src (id BIGINT, payload SUPER)")
    cursor.execute('INSERT INTO rt_src VALUES (1, JSON_PARSE(\'{"k": [1, {"z": null}]}\')), (2, NULL)')
    cursor.execute("CREATE TABLE rt_dst (id BIGINT, payload SUPER)")
    role = stand_in.iam_role
    cursor.execute(
        f"UNLOAD ('SELECT * FROM rt_src') TO 's3://round-trip/x_' IAM_ROLE '{role}' PARQUET MANIFEST"
    )
    keys = f"aws_access_key_id={stand_in.s3.access_key};aws_secret_access_key={stand_in.s3.secret_key}"
    cursor.execute(
        f"COPY rt_dst FROM 's3://round-trip/x_manifest' CREDENTIALS '{keys}' PARQUET MANIFEST SERIALIZETOJSON"
    )
    conn.commit()
    # The SUPER column went out as Parquet JSON text and comes back as a SUPER string (not re-parsed).
    assert _rows(conn, "SELECT id, payload FROM rt_dst ORDER BY id") == [
        [1, json.dumps('{"k":[1,{"z":null}]}')],
        [2, None],
    ]


# --------------------------------------------------------------------------- the simple query protocol


def test_simple_query_protocol_is_translated_too(stand_in: RedshiftStandIn) -> None:
    """psycopg sends parameterless statements as simple Query messages; COPY/UNLOAD work there as well."""
    psycopg = pytest.importorskip("psycopg")
    manifest = _copy_files(stand_in, "simple-query")
    dsn = f"host={stand_in.host} port={stand_in.port} dbname={stand_in.database} user={stand_in.user}"
    with psycopg.connect(dsn, sslmode="disable") as pg:
        pg.execute("CREATE TABLE simple_t (id BIGINT, name VARCHAR(32), t SUPER, p SUPER) DISTSTYLE EVEN")
        role = stand_in.iam_role
        pg.execute(
            f"COPY simple_t FROM '{manifest}' IAM_ROLE '{role}' FORMAT AS PARQUET MANIFEST SERIALIZETOJSON"
        )
        cursor = pg.execute("SELECT count(*), max(p.n::int), GETDATE() FROM simple_t")
        assert cursor.fetchone()[:2] == (3, 3)
        pg.rollback()
        assert pg.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'simple_t'").fetchone() == (0,)


# --------------------------------------------------------------------------- translation units


def test_translation_keeps_placeholders_and_passes_unparseable_sql_through() -> None:
    assert translate("SELECT a FROM t WHERE b = $1 AND c = $2") == "SELECT a FROM t WHERE b = $1 AND c = $2"
    ddl = translate("CREATE TABLE t (a INT DISTKEY SORTKEY, b SUPER ENCODE zstd) DISTSTYLE AUTO SORTKEY AUTO")
    assert ddl == "CREATE TABLE t (a INT, b JSONB)"
    assert translate("VACUUM DELETE ONLY t TO 75 PERCENT") == "VACUUM DELETE ONLY t TO 75 PERCENT"
    assert translate("SELECT JSON_PARSE($1)") == "SELECT CAST($1 AS JSONB) AS json_parse"
    assert translate("SELECT r.*, r.a FROM t AS r") == "SELECT r.*, r.a AS a FROM t AS r"  # r.* has no name
    qualify = "SELECT a, b AS c FROM t QUALIFY ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) = 1 ORDER BY c"
    assert translate(qualify).endswith("WHERE _w = 1 ORDER BY c")  # the order is the outer query's
    assert compact_json('{"a": [1, 2], "b": "x, y: z"}') == '{"a":[1,2],"b":"x, y: z"}'
