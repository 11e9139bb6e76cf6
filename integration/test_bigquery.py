"""The conformance suite and BigQuery's specifics against local-bigquery, run as a server process.

The server venv is built by the harness on first use (about 70 s once, Python >= 3.13 needed);
without a usable Python 3.13 the server tests skip with the reason.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import pyarrow.fs as pafs
import pytest
from harness.bigquery_server import BigQueryServer, ServerUnavailable, local_bigquery_server
from harness.gcs_server import gcs_server
from harness.spark_settings import several_tasks
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings, TargetConfig
from synclog.errors import ConfigError
from synclog.layouts.census import SOURCE_OBJECTS, SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest
from synclog.targets.base import TargetSettings
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.sql import STAGE_PREFIX
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.conformance import TargetConformance
from synclog_testing.factories import make_records, make_run, record_rows
from synclog_testing.network import tcp_outage
from synclog_testing.outage import Outage
from synclog_testing.read_back import check_empty_read_back, check_read_back, read_back_rows

bigquery = pytest.importorskip("google.cloud.bigquery", reason="google-cloud-bigquery is not installed")

from google.api_core.exceptions import BadRequest  # noqa: E402

from synclog_bigquery.capabilities import CAPABILITIES  # noqa: E402
from synclog_bigquery.connection import (  # noqa: E402
    RETRY_SECONDS,
    ConnectionSettings,
    query_parameters,
)
from synclog_bigquery.loading import INLINE_ROWS  # noqa: E402
from synclog_bigquery.target import BigQueryDialect, BigQueryTarget  # noqa: E402

DAY_MS = 86_400_000


# Seed 002's first two example queries, verbatim.


@pytest.fixture(scope="session")
def bigquery_server() -> Iterator[BigQueryServer]:
    with ExitStack() as stack:
        try:
            server = stack.enter_context(local_bigquery_server())
        except ServerUnavailable as exc:
            pytest.skip(f"local-bigquery unavailable: {exc}")
        yield server


def fresh_url(server: BigQueryServer, **query: str) -> str:
    """A URL naming a project of its own, so every test starts without datasets."""
    options = "".join(f"&{key}={value}" for key, value in query.items())
    return f"bigquery://synclog-{uuid.uuid4().hex[:12]}?endpoint={server.endpoint}{options}"


def open_target(url: str, **options: Any) -> BigQueryTarget:
    from synclog.targets.base import TargetSettings

    target = registry().open(TargetURL.parse(url), TargetSettings(options=options))
    assert isinstance(target, BigQueryTarget)
    return target


class TestBigQuery(TargetConformance):
    model_examples = 1  # model sequences in make test: about 2 min each here (make soak runs more)
    crash_sample = 1  # crash trials in make test: about 25 s each here (make faults runs all)
    crash_calls = tuple(  # what the target sends through the BigQuery API, not through its client
        f"api.{call}"
        for call in (
            "create_dataset",
            "get_table",
            "update_table",
            "create_table",
            "list_tables",
            "delete_table",
            "load_table_from_file",
            "load_table_from_uri",
        )
    )

    @pytest.fixture
    def synclog_target_url(self, bigquery_server: BigQueryServer) -> Iterator[str]:
        yield fresh_url(bigquery_server)

    @pytest.fixture
    def unreachable(self, bigquery_server: BigQueryServer) -> Outage:
        """The stand-in behind a loopback port nothing listens on; calls give up after 1 s. (Not
        the suite's `outage`, whose three tests would cost CI a minute: this one covers what is
        BigQuery's own, the deadline.)"""
        host, port = bigquery_server.endpoint.removeprefix("http://").split(":")
        return tcp_outage(fresh_url(bigquery_server, retry_seconds="1"), host, int(port))

    def test_a_write_into_an_unreachable_bigquery_is_kept_for_flush_within_retry_seconds(
        self, unreachable: Outage, storage: Location, spark: SparkSession
    ) -> None:
        """The client's own retries would hold the write for 600 s: `retry_seconds` cuts every
        call short and the write keeps its batches for `flush` (the fault runs' `outage` trials
        flush them into the stand-in once it is back, bench/FAULTS.md)."""
        run = make_run()
        config = Config(targets={"down": TargetConfig(unreachable.url)}, storage=storage)
        with SyncLog.open("down", config, spark) as log:
            started = time.monotonic()
            result = log.write(run, make_records(spark, record_rows(run, count=4, batches=1)))
            waited = time.monotonic() - started
            assert result.pending, result
            assert waited < 300, waited  # Spark staging included; one call alone took 600 s before
            (kept,) = log.spool.every()
            assert (kept.run, kept.batches, kept.finished) == (run, (0,), False)

    def test_log_table_is_partitioned_clustered_and_expires(
        self, target: BigQueryTarget, spark: SparkSession
    ) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        table = target.api.get_table(target.table_ref(target.relation(SYNC_LOG)))
        partitioning = table.time_partitioning
        assert (partitioning.type_, partitioning.field) == ("DAY", "batch_started_at")
        assert partitioning.expiration_ms == 7 * DAY_MS
        assert table.clustering_fields == ["sync_id", "sync_run_id"]
        assert {f.name: f.field_type for f in table.schema}["record_payload"] == "JSON"
        view = target.api.get_table(target.table_ref(target.relation(SYNC_LOG, SYNC_LOG.view)))
        assert view.table_type == "VIEW"
        metadata = target.api.get_table(target.table_ref(target.relation(SOURCE_OBJECTS)))
        assert metadata.time_partitioning is None

    def test_cleanup_keeps_partitions_for_the_longest_retention(
        self, target: BigQueryTarget, spark: SparkSession
    ) -> None:
        config = Config(syncs={99: SyncSettings(retention_days=30)})
        log = self.log(target, spark, config)
        run = make_run()
        log.write_run(run, make_records(spark, record_rows(run)))
        log.cleanup(datetime.now(UTC).replace(hour=12))
        table = target.api.get_table(target.table_ref(target.relation(SYNC_LOG)))
        # A partition expires N days after its day starts: a day's last rows are kept 30 days.
        assert table.time_partitioning.expiration_ms == 31 * DAY_MS

    def test_expiry_option_sets_the_first_expiry(self, bigquery_server: BigQueryServer) -> None:
        with open_target(fresh_url(bigquery_server), partition_expiration_days=3) as target:
            target.ensure([SYNC_LOG])
            table = target.api.get_table(target.table_ref(target.relation(SYNC_LOG)))
        assert table.time_partitioning.expiration_ms == 3 * DAY_MS

    def test_datasets_are_made_in_the_configured_location(self, bigquery_server: BigQueryServer) -> None:
        with open_target(fresh_url(bigquery_server, location="EU")) as target:
            target.ensure([SYNC_LOG])
            dataset = target.api.get_dataset(bigquery.DatasetReference(target.project, "census"))
        assert dataset.location == "EU"

    def test_one_load_job_per_write_and_no_staging_left(
        self, target: BigQueryTarget, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        loads: list[Any] = []
        files: dict[str, int] = {}
        real_load, real_files = target.api.load_table_from_file, target.load_files

        def counted_load(*args: Any, **kwargs: Any) -> Any:
            loads.append(args[1])
            return real_load(*args, **kwargs)

        def counted_files(stage: Any, table: TableSpec, manifest: Manifest) -> int:
            files[table.name] = len(manifest.files)
            return real_files(stage, table, manifest)

        monkeypatch.setattr(target.api, "load_table_from_file", counted_load)
        monkeypatch.setattr(target, "load_files", counted_files)
        run = make_run()
        count = INLINE_ROWS + 200  # more rows than go inline
        records = make_records(spark, record_rows(run, count=count, batches=4))
        with several_tasks(spark, 6):  # several tasks stage the rows
            result = self.log(target, spark).write(run, records)
        assert result.loaded["census.sync_log"] == count
        # The executors wrote several part files; one load job took them all. The one-row
        # metadata tables went inline, without a load job.
        assert files[SYNC_LOG.name] > 1
        assert len(loads) == 1
        assert result.loaded["census.source_objects"] == 1
        tables = target.api.list_tables(bigquery.DatasetReference(target.project, "census"))
        assert not [t.table_id for t in tables if t.table_id.startswith(STAGE_PREFIX)]

    def test_a_large_driver_table_goes_through_a_load_job(
        self, target: BigQueryTarget, spark: SparkSession
    ) -> None:
        rows = [{"id": i, "type": "DataWarehouse::Table", "name": f"T{i}"} for i in range(INLINE_ROWS + 1)]
        target.ensure([SOURCE_OBJECTS])
        for some, loaded in ((rows, INLINE_ROWS + 1), (rows[:2], 2)):
            local = Rows.local(spark, SOURCE_OBJECTS, some)
            assert target.replace_rows(SOURCE_OBJECTS, local, Keys.of_rows(SOURCE_OBJECTS, local)) == loaded
        relation = target.relation(SOURCE_OBJECTS).render()
        assert target.query(f"SELECT COUNT(*) AS n FROM {relation}").to_pylist() == [{"n": INLINE_ROWS + 1}]

    def test_failed_swap_leaves_the_table_and_no_staging(
        self, target: BigQueryTarget, spark: SparkSession
    ) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        # A row in the log table's shape that replaces batch 0 but carries text that is not JSON.
        row = {c: None for c in SYNC_LOG.column_names()}
        row.update(log_id="x", sync_id=1234, sync_run_id=5678, batch_number=0, record_payload="{not json")
        frame = spark.createDataFrame([row], SYNC_LOG.spark_schema())
        # Text that is not JSON is a bug of ours, not an outage: BigQuery's error is raised as is.
        with pytest.raises(BadRequest, match="JSON"):
            target.replace_rows(
                SYNC_LOG, Rows.of(frame), Keys.of_values(SYNC_LOG.replace_key, [(1234, 5678, 0)])
            )
        assert self.count(target) == 40
        tables = target.api.list_tables(bigquery.DatasetReference(target.project, "census"))
        assert not [t.table_id for t in tables if t.table_id.startswith(STAGE_PREFIX)]

    def test_parameters_bind_in_order_after_a_with_clause(self, target: BigQueryTarget) -> None:
        rows = target.query("WITH x AS (SELECT ? AS a) SELECT a, ? AS b FROM x WHERE a < ?", [1, 2, 3])
        assert rows.to_pylist() == [{"a": 1, "b": 2}]
        with pytest.raises(ValueError, match="more markers than its 1 parameters"):
            target.query("SELECT ?, ?", [1])

    def test_read_rows_streams_the_export_page_by_page(
        self, target: BigQueryTarget, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(type(target.client), "chunk_rows", 3)
        check_read_back(target, spark, read_back_rows(), row_groups=[3, 3, 2])

    def test_read_rows_of_a_sync_without_rows_is_an_empty_file_with_the_schema(
        self, target: BigQueryTarget, spark: SparkSession
    ) -> None:
        check_empty_read_back(target, spark)


# -- without a server ------------------------------------------------------------------------


def test_url_options() -> None:
    url = TargetURL.parse("bigquery://my-project?location=EU&endpoint=http://127.0.0.1:9050")
    assert ConnectionSettings.from_url(url) == ConnectionSettings("my-project", "EU", "http://127.0.0.1:9050")
    assert ConnectionSettings.from_url(TargetURL.parse("bigquery://")).project is None
    assert ConnectionSettings.from_url(url).retry_seconds == RETRY_SECONDS
    patient = ConnectionSettings.from_url(TargetURL.parse("bigquery://my-project?retry_seconds=7.5"))
    retries = patient.retries()
    assert (patient.retry_seconds, retries.seconds, retries.call.timeout, retries.job.timeout) == (7.5,) * 4


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("bigquery://proj?region=EU", "unknown option 'region'"),
        ("bigquery://proj/census", "bigquery://PROJECT"),
        ("bigquery://proj?location=EU;DROP", "not a BigQuery location"),
        ("bigquery://?endpoint=http://127.0.0.1:1", "name the project"),
        ("bigquery://proj?endpoint=ftp://x", "not an http"),
        ("bigquery://proj?retry_seconds=soon", "retry_seconds must be a positive number"),
        ("bigquery://proj?retry_seconds=0", "retry_seconds must be a positive number"),
    ],
)
def test_bad_urls_say_why(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ConnectionSettings.from_url(TargetURL.parse(url))


def test_markers_outside_literals_and_comments_are_numbered() -> None:
    sql = 'SELECT \'?\' AS a, `b?` AS b, "\\"?" AS e, ? AS c -- ?\nFROM t WHERE d = ? /* ? */ # ?'
    assert BigQueryDialect(CAPABILITIES).bind(sql, [7, "x"]) == (
        'SELECT \'?\' AS a, `b?` AS b, "\\"?" AS e, @p0 AS c -- ?\nFROM t WHERE d = @p1 /* ? */ # ?',
        {"p0": 7, "p1": "x"},
    )


def test_query_parameters_are_typed() -> None:
    now = datetime.now(UTC)
    params = query_parameters({"p0": 1, "p1": "a", "p2": now, "p3": None, "p4": [3, 4]})
    assert [p.name for p in params] == ["p0", "p1", "p2", "p3", "p4"]
    assert [p.to_api_repr()["parameterType"].get("type") for p in params] == [
        "INT64",
        "STRING",
        "TIMESTAMP",
        "STRING",
        "ARRAY",
    ]
    with pytest.raises(TypeError, match="cannot pass a object"):
        query_parameters({"p0": object()})


class TestGcsStorage:
    """`storage` on GCS (gcp-storage-emulator): each load is one `load_table_from_uri` over the
    write's files, which local-bigquery reads from the emulator's disk; the driver reads none."""

    def test_a_write_loads_each_table_with_one_uri_job(
        self, bigquery_server: BigQueryServer, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        bucket = "synclog-bq"
        with ExitStack() as stack:
            try:
                gcs = stack.enter_context(gcs_server(bigquery_server.gcs_root, bucket=bucket))
            except ServerUnavailable as exc:
                pytest.skip(exc.reason)
            storage = Location.parse(f"gs://{bucket}/{uuid.uuid4().hex}", {"endpoint_url": gcs.endpoint_url})
            target = registry().open(
                TargetURL.parse(fresh_url(bigquery_server)), TargetSettings(storage=storage)
            )
            stack.enter_context(target)
            jobs: list[list[str]] = []
            real_load = target.api.load_table_from_uri

            def recorded(uris: list[str], *args: Any, **kwargs: Any) -> Any:
                jobs.append(list(uris))
                return real_load(uris, *args, **kwargs)

            def refused(*args: Any, **kwargs: Any) -> Any:
                raise AssertionError("the driver read or uploaded staged rows")

            monkeypatch.setattr(target.api, "load_table_from_uri", recorded)
            monkeypatch.setattr(target.api, "load_table_from_file", refused)
            for name in ("local_paths", "batches", "dataset"):
                monkeypatch.setattr(Manifest, name, refused)
            run = make_run()
            with several_tasks(spark, 3):
                result = SyncLog(target, Config(storage=storage), spark).write_run(
                    run, make_records(spark, record_rows(run))
                )
            assert result.loaded["census.sync_log"] == 40
            log_table = target.relation(SYNC_LOG, SYNC_LOG.view).render()
            assert target.query(f"SELECT COUNT(*) AS n FROM {log_table}").to_pylist() == [{"n": 40}]
            left = storage.filesystem().get_file_info(
                pafs.FileSelector(storage.path("staging"), allow_not_found=True, recursive=True)
            )
        assert len(jobs) == 5, jobs  # the log table, the three metadata tables, synclog_runs: one job each
        prefix = f"gs://{storage.root}/staging/"
        assert all(uri.startswith(prefix) and uri.endswith(".parquet") for job in jobs for uri in job)
        assert max(len(job) for job in jobs) > 1  # the log table's job names every task's file
        assert [f.path for f in left if f.type == pafs.FileType.File] == []
