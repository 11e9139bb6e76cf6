"""The local-bigquery harness: the real google-cloud-bigquery client against the server."""

from __future__ import annotations

import datetime as dt
import io
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from .bigquery_server import (
    BigQueryServer,
    ServerUnavailable,
    default_cache_dir,
    ensure_local_bigquery_venv,
    local_bigquery_server,
)

bigquery = pytest.importorskip("google.cloud.bigquery", reason="google-cloud-bigquery is not installed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DAY_MS = 86_400_000
BATCH_STARTED_AT = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def server() -> Iterator[BigQueryServer]:
    with ExitStack() as stack:
        try:
            running = stack.enter_context(local_bigquery_server())
        except ServerUnavailable as exc:
            pytest.skip(f"local-bigquery unavailable: {exc}")
        yield running


@pytest.fixture(scope="module")
def client(server: BigQueryServer) -> Iterator[Any]:
    from google.auth.credentials import AnonymousCredentials

    bq = bigquery.Client(
        project=server.project,
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": server.endpoint},
    )
    yield bq
    bq.close()


def _rows(client: Any, sql: str, **params: Any) -> list[dict[str, Any]]:
    query_parameters = [
        bigquery.ScalarQueryParameter(name, "INT64" if isinstance(value, int) else "STRING", value)
        for name, value in params.items()
    ]
    job = client.query(sql, job_config=bigquery.QueryJobConfig(query_parameters=query_parameters))
    return [dict(row.items()) for row in job.result()]


def _create_dataset(client: Any, name: str) -> None:
    dataset = bigquery.Dataset(f"{client.project}.{name}")
    dataset.location = "US"
    client.create_dataset(dataset, exists_ok=True)


def _parquet_batch(n: int, *, sync_id: int, sync_run_id: int) -> io.BytesIO:
    table = pa.table(
        {
            "log_id": [f"{sync_run_id}-{i}" for i in range(n)],
            "sync_id": pa.array([sync_id] * n, pa.int64()),
            "sync_run_id": pa.array([sync_run_id] * n, pa.int64()),
            # JSON text in a Parquet STRING column loads straight into a JSON column.
            "record_payload": [json.dumps({"email": f"u{i}@example.com", "n": i}) for i in range(n)],
            "batch_started_at": pa.array([BATCH_STARTED_AT] * n, pa.timestamp("us", tz="UTC")),
            "status": ["succeeded"] * (n - 1) + ["rejected"],
        }
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    buffer.seek(0)
    return buffer


def test_round_trip(client: Any) -> None:
    _create_dataset(client, "census")
    assert client.get_dataset(f"{client.project}.census").location == "US"
    client.query("CREATE TABLE census.round_trip (id INT64, name STRING, payload JSON)").result()
    client.query(
        """INSERT INTO census.round_trip (id, name, payload)
           VALUES (1, 'a', JSON '{"k": 1}'), (2, 'b', NULL)"""
    ).result()

    rows = _rows(
        client,
        "SELECT id, name, JSON_VALUE(payload, '$.k') AS k FROM census.round_trip WHERE id = @id",
        id=1,
    )

    assert rows == [{"id": 1, "name": "a", "k": "1"}]


def test_parquet_load_into_partitioned_table(client: Any, server: BigQueryServer) -> None:
    _create_dataset(client, "census")
    table = bigquery.Table(
        f"{client.project}.census.sync_log_records",
        schema=[
            bigquery.SchemaField("log_id", "STRING", mode="REQUIRED"),
            bigquery.SchemaField("sync_id", "INT64"),
            bigquery.SchemaField("sync_run_id", "INT64"),
            bigquery.SchemaField("record_payload", "JSON"),
            bigquery.SchemaField("batch_started_at", "TIMESTAMP"),
            bigquery.SchemaField("status", "STRING"),
        ],
    )
    table.time_partitioning = bigquery.TimePartitioning(
        type_=bigquery.TimePartitioningType.DAY, field="batch_started_at", expiration_ms=7 * DAY_MS
    )
    table.clustering_fields = ["sync_id", "sync_run_id"]
    client.create_table(table)
    append = bigquery.LoadJobConfig(
        source_format=bigquery.SourceFormat.PARQUET,
        write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
    )

    job = client.load_table_from_file(
        _parquet_batch(5, sync_id=1234, sync_run_id=1), table.reference, job_config=append
    )
    job.result()
    gcs_file = server.gcs_root / "staging" / "run-2" / "records.0.parquet"
    gcs_file.parent.mkdir(parents=True)
    gcs_file.write_bytes(_parquet_batch(3, sync_id=1234, sync_run_id=2).getvalue())
    uri_job = client.load_table_from_uri(server.gcs_uri(gcs_file), table.reference, job_config=append)
    uri_job.result()

    assert (job.output_rows, uri_job.output_rows) == (5, 3)
    stored = client.get_table(table.reference)
    assert stored.time_partitioning.type_ == "DAY"
    assert stored.time_partitioning.field == "batch_started_at"
    assert stored.time_partitioning.expiration_ms == 7 * DAY_MS
    assert stored.clustering_fields == ["sync_id", "sync_run_id"]
    assert [f.field_type for f in stored.schema if f.name == "record_payload"] == ["JSON"]
    assert stored.num_rows == 8
    rows = _rows(
        client,
        """SELECT sync_run_id, count(*) AS n, countif(status = 'rejected') AS rejected,
                  min(JSON_VALUE(record_payload, '$.email')) AS first_email
           FROM census.sync_log_records WHERE sync_id = @sync_id
           GROUP BY sync_run_id ORDER BY sync_run_id""",
        sync_id=1234,
    )
    assert rows == [
        {"sync_run_id": 1, "n": 5, "rejected": 1, "first_email": "u0@example.com"},
        {"sync_run_id": 2, "n": 3, "rejected": 1, "first_email": "u0@example.com"},
    ]


def test_seed_query_over_view(client: Any) -> None:
    _create_dataset(client, "census")
    client.query(
        """CREATE TABLE census.seed_log (log_id STRING, sync_id INT64, sync_run_id INT64,
             operation STRING, source_object_id INT64)"""
    ).result()
    client.query("CREATE VIEW census.sync_log AS SELECT * FROM census.seed_log").result()
    client.query("CREATE TABLE census.source_objects (id INT64, type STRING, name STRING)").result()
    client.query(
        """BEGIN TRANSACTION;
           INSERT INTO census.seed_log VALUES ('a', 1234, 1, 'upsert', 7), ('b', 99, 2, 'delete', 7);
           INSERT INTO census.source_objects VALUES (7, 'DataWarehouse::Query', 'users');
           COMMIT TRANSACTION;"""
    ).result()

    rows = _rows(
        client,
        """SELECT *
           FROM census.sync_log log
           LEFT JOIN census.source_objects source
           ON log.source_object_id = source.id
           WHERE log.sync_id = 1234""",
    )

    assert client.get_table(f"{client.project}.census.sync_log").table_type == "VIEW"
    assert [(r["log_id"], r["name"]) for r in rows] == [("a", "users")]


def test_server_is_stopped_and_cleaned_up() -> None:
    try:
        with local_bigquery_server(project="other-project") as other:
            url = f"{other.endpoint}/bigquery/v2/projects/{other.project}/datasets"
            with urllib.request.urlopen(url, timeout=10) as response:
                assert response.status == 200
            base_dir = other.base_dir
            assert other.data_dir.is_dir()
    except ServerUnavailable as exc:
        pytest.skip(f"local-bigquery unavailable: {exc}")

    assert not base_dir.exists()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)


def test_venv_is_reused(server: BigQueryServer) -> None:
    started = time.monotonic()
    venv = ensure_local_bigquery_venv(default_cache_dir())
    assert venv == default_cache_dir().absolute()
    assert time.monotonic() - started < 30  # a smoke check, not a rebuild


def test_unusable_python_raises_server_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ServerUnavailable, match="not a usable Python"):
        ensure_local_bigquery_venv(tmp_path / "venv", python=tmp_path / "no-such-python")
