"""The Databricks targets: the in-cluster path and the SQL warehouse path, on local stand-ins.

- In-cluster (`databricks+spark://census`): `test_databricks_spark.py` in a Spark process of its
  own (the catalog confs are static), and a write through a Spark Connect server.
- SQL warehouse (`databricks://HOST?http_path=…`): the real databricks-sql-connector against the
  local Statement Execution stand-in. Emulated: its tables are Parquet behind `USING DELTA`, and
  it rewrites a whole table for a MERGE that deletes or a DELETE (not atomic, unlike Delta).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from synclog.cli.main import main
from synclog.config import Config
from synclog.errors import ConfigError, TargetError
from synclog.layouts.census import SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest
from synclog.storage.owners import host_digest
from synclog.targets.base import Target, TargetSettings
from synclog.targets.sql import STAGE_PREFIX, SqlTarget
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.conformance import TargetConformance
from synclog_testing.factories import make_records, make_run, record_rows
from synclog_testing.network import tcp_outage
from synclog_testing.outage import Outage
from synclog_testing.read_back import check_empty_read_back, check_read_back, read_back_rows

pytest.importorskip("synclog_databricks", reason="synclog-databricks is not installed")
import databricks.sql
from databricks.sql.exc import ServerOperationError
from harness.databricks_sql_server import DatabricksSqlServer, databricks_sql_server
from harness.errors import ServerUnavailable
from harness.processes import free_port
from harness.s3_server import S3Server
from harness.spark_catalogs import unity_catalog_confs
from harness.spark_cluster import spark_connect_server, subprocess_env
from harness.spark_settings import several_tasks

from synclog_databricks.sources import CopyAccess

REPO = Path(__file__).resolve().parents[1]
SEED_NAMES = {
    "CENSUS.CENSUS.SYNC_LOG": "census.census.sync_log",
    "CENSUS.CENSUS.SOURCE_OBJECTS": "census.census.source_objects",
}

# -- the in-cluster path -----------------------------------------------------------------------


@pytest.mark.timeout(3000)
def test_in_cluster_path_in_a_spark_of_its_own() -> None:
    """Runs test_databricks_spark.py (conformance, partitions, demo) in a fresh Spark process."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "integration/test_databricks_spark.py",
        ],
        cwd=REPO,
        env={**subprocess_env(), "SYNCLOG_DATABRICKS_SPARK": "1"},
        capture_output=True,
        text=True,
        timeout=2900,
        check=False,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    if done.returncode == 0 and " passed" not in summary:
        pytest.skip(f"the in-cluster suite ran nothing: {summary}")
    assert done.returncode == 0, done.stdout[-15000:] + done.stderr[-3000:]


CONNECT_CLIENT = textwrap.dedent(
    """
    import json, sys
    from synclog.config import Config
    from synclog.spark import spark_session
    from synclog.storage.location import Location
    from synclog_testing.factories import make_records, make_run, record_rows
    from synclog.writer import SyncLog

    spark = spark_session()
    run = make_run()
    with SyncLog.open("databricks+spark://census", Config(storage=Location.parse(sys.argv[1])), spark) as log:
        log.write_run(run, make_records(spark, record_rows(run)))
        rows = log.target.query(sys.argv[2]).num_rows
    print(json.dumps({"session": type(spark).__module__, "rows": rows}))
    """
)


def test_in_cluster_path_through_spark_connect(tmp_path: Path) -> None:
    """A Spark Connect client (no SparkContext, no JVM) writes a run; seed 000's query reads it."""
    try:
        conf = {**unity_catalog_confs(["census"]), "spark.sql.warehouse.dir": str(tmp_path / "warehouse")}
        with spark_connect_server(conf=conf) as server:
            query = seed("SELECT * FROM CENSUS.CENSUS.SYNC_LOG log LEFT JOIN CENSUS.CENSUS.SOURCE_OBJECTS "
                         "source ON log.source_object_id = source.id WHERE log.sync_id = 1234")  # fmt: skip
            done = subprocess.run(
                [sys.executable, "-c", CONNECT_CLIENT, str(tmp_path / "storage"), query],
                env=subprocess_env({"SPARK_REMOTE": server.remote}),
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    assert done.returncode == 0, done.stderr[-5000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"session": "pyspark.sql.connect.session", "rows": 40}


def test_plugins_show_no_run_metadata_gap(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line.split() for line in lines if line.startswith("capability"))
    for capability in ("run_metadata_columns", "fields_column", "three_part_names"):
        values = dict(
            zip(header, next(line.split() for line in lines if line.startswith(capability)), strict=True)
        )
        assert values["databricks"] == values["databricks-spark"] == "yes", capability


def seed(sql: str) -> str:
    for snowflake_name, own in SEED_NAMES.items():
        sql = sql.replace(snowflake_name, own)
    return sql


# -- the SQL warehouse path, emulated ------------------------------------------------------------


@pytest.fixture(scope="module")
def dbx(tmp_path_factory: pytest.TempPathFactory, s3: S3Server) -> Iterator[DatabricksSqlServer]:
    """The stand-in, its `COPY INTO … FROM 's3://…'` reading moto's S3."""
    try:
        with databricks_sql_server(
            ["census"], parent_dir=tmp_path_factory.mktemp("dbx"), environment=s3.environment
        ) as server:
            yield server
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


def warehouse_url(dbx: DatabricksSqlServer, port: int | None = None, **options: str) -> str:
    """The stand-in's URL: plain HTTP, the connector's Statement Execution backend."""
    query = "&".join(f"{k}={v}" for k, v in {"scheme": "http", "use_sea": "true", **options}.items())
    return f"databricks://{dbx.host}:{port or dbx.port}?http_path={dbx.http_path}&{query}"


def drop_schemas(dbx: DatabricksSqlServer) -> None:
    with databricks.sql.connect(**dbx.connect_kwargs()) as conn, conn.cursor() as cursor:
        cursor.execute("SHOW SCHEMAS IN census")
        for (name,) in cursor.fetchall():
            if name != "default":
                cursor.execute(f"DROP SCHEMA census.`{name}` CASCADE")


def staged_files(dbx: DatabricksSqlServer) -> list[Path]:
    return [p for p in dbx.volume_root.rglob("*") if p.is_file()]


class TestDatabricksWarehouse(TargetConformance):
    """The conformance suite through the connector into the stand-in (emulated, see the module)."""

    model_examples = 1  # model sequences in make test: about 35 s each on this stand-in (make soak runs more)
    crash_sample = 1  # crash trials in make test: about 35 s each here (make faults runs all)

    seed_names = SEED_NAMES
    expected_sync_log = "census.census.sync_log"

    @pytest.fixture
    def synclog_target_url(self, dbx: DatabricksSqlServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
        monkeypatch.setenv("DATABRICKS_TOKEN", dbx.token)
        yield warehouse_url(dbx)
        drop_schemas(dbx)

    @pytest.fixture
    def outage(self, dbx: DatabricksSqlServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outage]:
        """The stand-in behind a loopback port nothing listens on until `up` forwards it."""
        monkeypatch.setenv("DATABRICKS_TOKEN", dbx.token)
        yield tcp_outage(warehouse_url(dbx, retry_seconds="2"), dbx.host, dbx.port)
        drop_schemas(dbx)

    def test_loads_put_files_in_the_volume_and_remove_them(
        self, target: Target, spark: SparkSession, dbx: DatabricksSqlServer
    ) -> None:
        run = make_run()
        log = self.log(target, spark)
        log.write_run(run, make_records(spark, record_rows(run)))
        assert (dbx.volume_dir("census", "census", "synclog_staging")).is_dir()
        assert staged_files(dbx) == []
        stages = [r for r in target.client.fetch("SHOW TABLES IN census.census") if "_synclog_stage_" in r[1]]
        assert stages == []

    def test_a_load_and_a_swap_sent_twice_leave_one_copy(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The connector replays a statement when a dropped connection lost its answer, and the
        warehouse may have run it: here every stage's CREATE, COPY INTO and MERGE runs twice."""
        once = target.client.cursor  # type: ignore[attr-defined]
        sent: list[str] = []

        @contextlib.contextmanager
        def twice(sql: str, params: Any = ()) -> Iterator[Any]:
            sent.append(sql)
            if sql.startswith(("CREATE TABLE IF NOT EXISTS", "COPY INTO", "MERGE")):
                with once(sql, params):
                    pass
            with once(sql, params) as cursor:
                yield cursor

        monkeypatch.setattr(target.client, "cursor", twice)  # type: ignore[attr-defined]
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        assert target.client.fetch("SELECT COUNT(*), COUNT(DISTINCT log_id) FROM census.census.sync_log") == [
            (40, 40)
        ]
        assert target.client.fetch("SELECT COUNT(*) FROM census.census.source_objects") == [(1,)]
        assert [s for s in sent if s.startswith("COPY INTO")] and [s for s in sent if s.startswith("MERGE")]

    def test_a_stage_the_outage_kept_from_its_drop_goes_once_the_warehouse_is_back(
        self, target: Target, spark: SparkSession, dbx: DatabricksSqlServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The connection drops at a load's `REMOVE` of its volume file: the write is kept, and the
        stage (its table and its file) is this live process's. Once the warehouse answers again, the
        flush's `ensure` drops it; the run is logged once."""
        connected = target.client.cursor  # type: ignore[attr-defined]

        @contextlib.contextmanager
        def dropping_at_remove(sql: str, params: Any = ()) -> Iterator[Any]:
            if sql.startswith("REMOVE"):
                raise TargetError("databricks: the connection was lost")
            with connected(sql, params) as cursor:
                yield cursor

        run = make_run()
        log = self.log(target, spark)
        monkeypatch.setattr(target.client, "cursor", dropping_at_remove)  # type: ignore[attr-defined]
        assert log.write_run(run, make_records(spark, record_rows(run))).pending
        assert staged_files(dbx), "the outage kept the stage's file"
        monkeypatch.undo()
        assert log.flush() == []
        assert staged_files(dbx) == []
        stages = [r[1] for r in target.client.fetch("SHOW TABLES IN census.census") if STAGE_PREFIX in r[1]]
        assert stages == []
        assert target.client.fetch("SELECT COUNT(*), COUNT(DISTINCT log_id) FROM census.census.sync_log") == [
            (40, 40)
        ]

    def test_the_sweep_removes_a_killed_writers_stage_and_its_volume_files(
        self, target: Target, dbx: DatabricksSqlServer
    ) -> None:
        """A writer killed after its `PUT` leaves a stage table and its file in the volume: the
        next writer's sweep (`ensure` runs it) removes both; a live writer's (this process's) stay."""
        ended = subprocess.Popen(["true"])
        ended.wait()
        dead = f"{host_digest()}_{ended.pid}_1"  # a compact owner tag of a process that has ended
        assert isinstance(target, SqlTarget)
        relation = target.relation(SYNC_LOG)
        killed = relation.with_name(f"_synclog_stage_0123abcd_{dead}")
        live = target.stage_relation(relation)
        catalog, schema, _ = relation.parts
        target.ensure_schema(relation)
        target.client.execute(f"CREATE VOLUME IF NOT EXISTS {relation.with_name('synclog_staging').render()}")
        part = Path(target.storage.root) / "part.parquet"
        part.parent.mkdir(parents=True)
        pq.write_table(pa.table({"n": [1]}), part)
        for stage in (killed, live):
            target.create_stage(stage, target.table_spec(SYNC_LOG))
            volume_path = f"/Volumes/{catalog}/{schema}/synclog_staging/{stage.name}/part-00000.parquet"
            target.client.execute(f"PUT '{part}' INTO '{volume_path}'")  # as a writer's load does
        assert target.sweep_stages([relation]) == [killed]
        tables = target.client.fetch(f"SHOW TABLES IN {catalog}.{schema}")
        assert [str(row[1]) for row in tables if STAGE_PREFIX in row[1]] == [live.name]
        folder = dbx.volume_dir(catalog, schema, "synclog_staging")
        assert [p.relative_to(folder).parent.name for p in staged_files(dbx)] == [live.name]

    def test_read_rows_streams_the_export_in_chunks(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(type(target.client), "chunk_rows", 3)
        check_read_back(target, spark, read_back_rows(), row_groups=[3, 3, 2])

    def test_read_rows_of_a_sync_without_rows_is_an_empty_file(
        self, target: Target, spark: SparkSession
    ) -> None:
        check_empty_read_back(target, spark)

    def test_variant_payloads(self, target_url: str, storage: Location, spark: SparkSession) -> None:
        settings = TargetSettings(storage=storage, options={"json": "variant"})
        with registry().open(TargetURL.parse(target_url), settings) as target:
            run = make_run()
            self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
            types = {r[0]: r[1] for r in target.client.fetch("DESCRIBE TABLE census.census.sync_log_records")}
            assert types["record_payload"] == "variant"
            emails = target.query("SELECT record_payload:email::string AS e FROM census.census.sync_log")
            assert "user2@example.com" in emails.column("e").to_pylist()
            check_read_back(target, spark, read_back_rows(), row_groups=[8])

    def test_sql_errors_are_not_outages(self, target: Target) -> None:
        with pytest.raises(ServerOperationError, match="TABLE_OR_VIEW_NOT_FOUND"):
            target.query("SELECT * FROM census.census.nowhere")

    def test_token_comes_from_the_environment_and_is_never_shown(
        self, dbx: DatabricksSqlServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.delenv("DATABRICKS_TOKEN", raising=False)
        with pytest.raises(ConfigError, match="no access token: set DATABRICKS_TOKEN"):
            registry().open(TargetURL.parse(warehouse_url(dbx)))
        monkeypatch.setenv("SYNCLOG_TEST_DBX_TOKEN", "dapi-s3cret")
        url = TargetURL.parse(
            warehouse_url(dbx, free_port(), retry_seconds="2"), password_env="SYNCLOG_TEST_DBX_TOKEN"
        )
        with pytest.raises(TargetError, match="cannot connect to databricks://") as failed:
            registry().open(url, TargetSettings(storage=Location.parse(str(tmp_path))))
        assert "s3cret" not in str(failed.value) + str(url) + repr(url)
        assert "\n" not in str(failed.value)

    def test_bad_urls_are_one_line_config_errors(
        self, dbx: DatabricksSqlServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("DATABRICKS_TOKEN", dbx.token)
        for url, message in (
            ("databricks://host", "expected databricks://HOST\\?http_path="),
            (warehouse_url(dbx, schema="x"), "unknown option 'schema'"),
            (warehouse_url(dbx, scheme="ftp"), "scheme must be https or http"),
            (warehouse_url(dbx, retry_seconds="soon"), "retry_seconds must be a number"),
        ):
            with pytest.raises(ConfigError, match=message):
                registry().open(TargetURL.parse(url))


class TestWarehouseReadsStorage:
    """`storage` on S3: COPY INTO reads exactly the write's files from the bucket; no PUT, and
    the driver never opens a staged file."""

    def test_a_write_copies_from_s3_without_put(
        self,
        dbx: DatabricksSqlServer,
        s3: S3Server,
        spark: SparkSession,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setenv("DATABRICKS_TOKEN", dbx.token)
        with contextlib.suppress(Exception):  # made by an earlier test of this session
            s3.create_bucket("synclog-databricks")
        storage = Location.parse(f"s3://synclog-databricks/{uuid.uuid4().hex}", s3.storage_options())
        keys = {"aws_access_key": s3.access_key, "aws_secret_key": s3.secret_key}
        settings = TargetSettings(storage=storage, options=keys)
        sent: list[str] = []

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the driver read a staged file")

        for name in ("local_paths", "batches", "dataset"):
            monkeypatch.setattr(Manifest, name, refused)
        try:
            with registry().open(TargetURL.parse(warehouse_url(dbx)), settings) as target:
                real = target.client.cursor  # type: ignore[attr-defined]
                monkeypatch.setattr(  # type: ignore[attr-defined]
                    target.client, "cursor", lambda sql, params=(): sent.append(sql) or real(sql, params)
                )
                run = make_run()
                with several_tasks(spark, 3):
                    SyncLog(target, Config(storage=storage), spark).write_run(
                        run, make_records(spark, record_rows(run))
                    )
                assert target.query("SELECT * FROM census.census.sync_log").num_rows == 40
        finally:
            drop_schemas(dbx)
        assert not [s for s in sent if s.startswith("PUT")]
        copies = [s for s in sent if s.startswith("COPY INTO")]
        assert len(copies) == 5, copies  # the log table, three metadata tables and synclog_runs
        prefix = f"FROM 's3://{storage.root}/staging/"
        assert all(prefix in c and f"AWS_SECRET_KEY = '{s3.secret_key}'" in c for c in copies)
        assert max(c.count(".parquet'") for c in copies) == 3  # one file per task, each named
        left = pafs.S3FileSystem(**s3.pyarrow_kwargs()).get_file_info(
            pafs.FileSelector(storage.path("staging"), allow_not_found=True, recursive=True)
        )
        assert [f.path for f in left if f.type == pafs.FileType.File] == []

    def test_keys_go_in_the_options_never_the_url(
        self, dbx: DatabricksSqlServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("DATABRICKS_TOKEN", dbx.token)
        storage = Location.parse("s3://bucket/logs")
        access = CopyAccess.from_options({"aws_access_key": "AKIA1", "aws_secret_key": "s3cret"}, storage)
        assert "s3cret" not in repr(access)
        assert access.clause() == " WITH (CREDENTIAL (AWS_ACCESS_KEY = 'AKIA1', AWS_SECRET_KEY = 's3cret'))"
        assert CopyAccess.from_options({}, storage).clause() == ""  # an external location grants the read
        with pytest.raises(ConfigError, match="need both"):
            CopyAccess.from_options({"aws_access_key": "AKIA1"}, storage)
        with pytest.raises(ConfigError, match="not in the URL"):
            registry().open(TargetURL.parse(warehouse_url(dbx, aws_secret_key="s3cret")))
