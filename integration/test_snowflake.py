"""The conformance suite and Snowflake specifics on fakesnow (Snowflake's SQL on DuckDB).

Why fakesnow's *server* mode (`python -m fakesnow -s`, one fresh server per test): the target
runs here, in the test process, and talks to the server through the real, unpatched
`snowflake-connector-python` over HTTP: its login, its qmark (server-side) bindings, its result
decoding and, above all, its PUT file-transfer agent, which uploads the executors' Parquet files
to the stage exactly as it would to Snowflake. The patched in-process mode (what the
`fakesnow -m synclog …` launcher uses) replaces `snowflake.connector.connect` with a fake
connection, so none of the connector's code would run and PUT would be fakesnow's file copy;
`TestLauncherMode` still covers that mode once, because the demo relies on it. Spark's
executors need no connector in either mode: they only write Parquet; the driver PUTs and COPYs.

A known stand-in gap (FAKESNOW_NOTES.md): over the server a NULL TIMESTAMP reads back as
1970-01-01 (it is stored as NULL), so no test reads a NULL timestamp back.
"""

from __future__ import annotations

import re
import socket
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import Any

import pyarrow.fs as pafs
import pytest
from harness.errors import ServerUnavailable
from harness.fakesnow_server import FakesnowServer, fakesnow_patched, fakesnow_server
from harness.s3_server import S3Server
from harness.spark_settings import several_tasks
from pyspark.sql import SparkSession
from snowflake.connector.errors import ProgrammingError
from snowflake_suite import SnowflakeSuite, database, record_statements

from synclog.config import Config, SyncSettings
from synclog.demo import report
from synclog.errors import ConfigError, TargetError
from synclog.layouts.census import SOURCE_OBJECTS, SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.storage.manifest import Manifest
from synclog.storage.owners import host_digest
from synclog.targets.base import TargetSettings
from synclog.targets.sql import STAGE_PREFIX, SqlTarget
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_snowflake import target as target_module
from synclog_snowflake.connection import connection_settings
from synclog_snowflake.external import StageAccess, stage_url
from synclog_testing.conformance import SEED_000_BY_SYNC
from synclog_testing.factories import make_records, make_run, record_rows


def server_url(server: FakesnowServer, database: str = "CENSUS") -> str:
    """A target URL for fakesnow's server: the real connector, pointed at it over HTTP."""
    return (
        f"snowflake://fake:snow@fakesnow/{database}"
        f"?host={server.host}&port={server.port}&protocol=http&network_timeout=30"
    )


@pytest.fixture
def fakesnow() -> Iterator[FakesnowServer]:
    """A fresh fakesnow server: an empty warehouse per test."""
    with ExitStack() as stack:
        try:
            server = stack.enter_context(fakesnow_server())
        except ServerUnavailable as exc:
            pytest.skip(exc.reason)
        yield server


class TestSnowflake(SnowflakeSuite):
    seed_names = {
        "CENSUS.CENSUS.SYNC_LOG": "CENSUS.CENSUS.SYNC_LOG",
        "CENSUS.CENSUS.SOURCE_OBJECTS": "CENSUS.CENSUS.SOURCE_OBJECTS",
    }
    expected_sync_log = "CENSUS.CENSUS.SYNC_LOG"

    @pytest.fixture
    def synclog_target_url(self, fakesnow: FakesnowServer) -> Iterator[str]:
        yield server_url(fakesnow)

    # -- names ---------------------------------------------------------------------------------

    def test_names_are_upper_case_and_three_part(self, fakesnow: FakesnowServer) -> None:
        hightouch = TableSpec("hightouch", "hightouch_audit", "sync_changelog", (), replace_key=())
        with registry().open(TargetURL.parse(server_url(fakesnow, "analytics"))) as target:
            assert str(target.relation(SYNC_LOG, SYNC_LOG.view)) == "ANALYTICS.CENSUS.SYNC_LOG"
            assert str(target.relation(hightouch)) == "ANALYTICS.HIGHTOUCH_AUDIT.SYNC_CHANGELOG"
        settings = TargetSettings(schemas={"census": "logs"})
        with registry().open(TargetURL.parse(server_url(fakesnow)), settings) as target:
            assert target.relation(SYNC_LOG).render() == '"CENSUS"."LOGS"."SYNC_LOG_RECORDS"'


class TestOutages:
    """Only the connector's connection and server failures are outages (TargetError)."""

    def test_sql_snowflake_rejects_passes_through(self, fakesnow: FakesnowServer) -> None:
        target = registry().open(TargetURL.parse(server_url(fakesnow)))
        with target, pytest.raises(ProgrammingError, match="NO_SUCH_TABLE"):
            target.query("SELECT * FROM CENSUS.CENSUS.NO_SUCH_TABLE")

    def test_a_server_gone_mid_session_is_an_outage(self) -> None:
        with ExitStack() as stack:
            try:
                server = stack.enter_context(fakesnow_server())
            except ServerUnavailable as exc:
                pytest.skip(exc.reason)
            url = TargetURL.parse(server_url(server)).with_query(network_timeout="5")
            target = registry().open(url)
            assert target.query("SELECT 1 AS n").to_pylist() == [{"N": 1}]
        with pytest.raises(TargetError, match=r"^Snowflake: ") as caught:
            target.query("SELECT 1 AS n")
        assert "\n" not in str(caught.value)
        target.close()


class TestLauncherMode:
    """fakesnow's patched, in-process mode: what `fakesnow -m synclog demo …` runs on."""

    def test_write_and_seed_000_in_the_patched_mode(self, spark: SparkSession, tmp_path: Any) -> None:
        with ExitStack() as stack:
            try:
                stack.enter_context(fakesnow_patched())
            except ServerUnavailable as exc:
                pytest.skip(exc.reason)
            url = TargetURL.parse("snowflake://fake:snow@fakesnow/CENSUS")
            storage = Location.parse(str(tmp_path / "storage"))
            with registry().open(url, TargetSettings(storage=storage)) as target:
                config = Config(storage=storage)
                run = make_run()
                SyncLog(target, config, spark).write_run(run, make_records(spark, record_rows(run)))
                assert target.query(SEED_000_BY_SYNC).num_rows == 40
                sources = target.query(f"SELECT name FROM {target.relation(SOURCE_OBJECTS).render()}")
                assert sources.column(0).to_pylist() == ["High-value customers"]

    def test_the_demo_report_counts_are_integers(self, spark: SparkSession, tmp_path: Any) -> None:
        """fakesnow answers a SUM as a float: the demo printed `6343.0` on Snowflake."""
        with ExitStack() as stack:
            try:
                stack.enter_context(fakesnow_patched())
            except ServerUnavailable as exc:
                pytest.skip(exc.reason)
            url = TargetURL.parse("snowflake://fake:snow@fakesnow/CENSUS")
            storage = Location.parse(str(tmp_path / "storage"))
            with registry().open(url, TargetSettings(storage=storage)) as target:
                config = Config(storage=storage, defaults=SyncSettings(layouts=("census", "hightouch")))
                run = make_run()
                SyncLog(target, config, spark).write_run(run, make_records(spark, record_rows(run)))
                for answer in (report.audience_moves(target), report.current_members(target)):
                    assert answer.num_rows > 0
                    for row in answer.to_pylist():
                        counts = [v for k, v in row.items() if k.lower() not in {"audience", "run_status"}]
                        assert counts and all(type(v) is int for v in counts), row


class TestURL:
    """`snowflake://USER[:PASS]@ACCOUNT/DATABASE?…`, without a server."""

    def settings(self, text: str, **changes: Any) -> Any:
        return connection_settings(TargetURL.parse(text), TargetSettings(**changes))

    def test_account_database_and_options(self) -> None:
        conn = self.settings(
            "snowflake://me:s3cret@xy12345.eu-west-1/analytics?warehouse=WH&role=R&port=8080"
        )
        kwargs = conn.connect_kwargs()
        assert (kwargs["account"], kwargs["user"], kwargs["database"]) == (
            "xy12345.eu-west-1",
            "me",
            "ANALYTICS",
        )
        assert (kwargs["warehouse"], kwargs["role"], kwargs["port"]) == ("WH", "R", 8080)
        assert kwargs["password"] == "s3cret"
        assert kwargs["paramstyle"] == "qmark"
        assert kwargs["session_parameters"]["TIMEZONE"] == "UTC"
        assert "s3cret" not in repr(conn)

    def test_database_defaults_to_census(self) -> None:
        assert self.settings("snowflake://me:pw@acct").database == "CENSUS"
        assert self.settings("snowflake://me:pw@acct", database="logs").database == "LOGS"
        with pytest.raises(ConfigError, match="names database a, the settings b"):
            self.settings("snowflake://me:pw@acct/a", database="b")

    def test_password_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("SNOWFLAKE_PASSWORD", "from-env")
        assert self.settings("snowflake://me@acct/CENSUS").password == "from-env"
        monkeypatch.setenv("MY_SF_PW", "named")
        url = TargetURL.parse("snowflake://me@acct/CENSUS", password_env="MY_SF_PW")
        assert connection_settings(url, TargetSettings()).password == "named"
        monkeypatch.delenv("SNOWFLAKE_PASSWORD")
        with pytest.raises(ConfigError, match="no password"):
            self.settings("snowflake://me@acct/CENSUS")

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("snowflake://acct/CENSUS", "name the user"),
            ("snowflake://me:pw@acct/CENSUS?colour=red", "unknown option 'colour'"),
            ("snowflake://me:pw@acct/CENSUS?port=http", "port must be a whole number"),
            ("snowflake://me:pw@acct/CENSUS/LOGS", "give the schema as"),
            ("snowflake://me:pw@acct/CEN;SUS", "not a plain identifier"),
        ],
    )
    def test_bad_urls_fail_in_one_line(self, text: str, message: str) -> None:
        with pytest.raises(ConfigError, match=message) as caught:
            self.settings(text)
        assert "\n" not in str(caught.value)
        assert ":pw@" not in str(caught.value)

    def test_a_failed_login_names_account_and_user_but_no_secret(self) -> None:
        with socket.socket() as sock:  # a port nobody listens on
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        url = TargetURL.parse(f"snowflake://fake:topsecret@fakesnow/CENSUS?host=127.0.0.1&port={port}")
        url = url.with_query(protocol="http", login_timeout="5", network_timeout="5")
        with pytest.raises(
            TargetError, match="cannot connect to Snowflake account fakesnow as fake"
        ) as caught:
            registry().open(url)
        assert "topsecret" not in str(caught.value)


# -- storage in an object store: COPY from an external stage, no PUT ------------------------------

BUCKET = "synclog-snowflake"


@pytest.fixture
def fakesnow_on_s3(s3: S3Server) -> Iterator[FakesnowServer]:
    """A fresh fakesnow server whose DuckDB reads `s3://` stage files from moto's S3."""
    with ExitStack() as stack:
        try:
            server = stack.enter_context(fakesnow_server(s3=s3))
        except ServerUnavailable as exc:
            pytest.skip(exc.reason)
        yield server


@pytest.fixture
def s3_storage(s3: S3Server) -> Location:
    """A fresh folder of the bucket, reached with moto's keys."""
    with suppress(Exception):  # made by an earlier test of this session
        s3.create_bucket(BUCKET)
    return Location.parse(f"s3://{BUCKET}/{uuid.uuid4().hex}", s3.storage_options())


def driver_never_reads_staged_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test where this (the driver's) process reads a staged file's rows."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the driver read a staged file")

    for name in ("local_paths", "batches", "dataset"):
        monkeypatch.setattr(Manifest, name, refused)


class TestExternalStage:
    """`storage` on S3: Snowflake reads the executors' files from an external stage, over FILES = (…)."""

    def test_a_write_loads_from_the_bucket_without_put(
        self,
        spark: SparkSession,
        fakesnow_on_s3: FakesnowServer,
        s3_storage: Location,
        s3: S3Server,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        settings = TargetSettings(storage=s3_storage)
        with registry().open(TargetURL.parse(server_url(fakesnow_on_s3)), settings) as target:
            sent = record_statements(monkeypatch, target)
            driver_never_reads_staged_files(monkeypatch)
            monkeypatch.setattr(target_module, "COPY_FILES", 2)  # several COPYs of one load
            run = make_run()
            with several_tasks(spark, 3):
                SyncLog(target, Config(storage=s3_storage), spark).write_run(
                    run, make_records(spark, record_rows(run))
                )
            assert target.query(SEED_000_BY_SYNC).num_rows == 40
        assert not [s for s in sent if s.startswith("PUT")]
        [create] = [s for s in sent if s.startswith("CREATE TEMPORARY STAGE")]
        assert f"URL = 's3://{s3_storage.root}/'" in create
        assert f"AWS_SECRET_KEY = '{s3.secret_key}'" in create
        copies = [s for s in sent if s.startswith("COPY INTO")]
        named = [name for copy in copies for name in re.findall(r"'(staging/[^']+)'", copy)]
        assert all("FILES = (" in c and "PURGE" not in c for c in copies)
        assert len(named) == len(set(named)) >= 6, copies  # three tasks' files of the log table, and more
        assert max(len(re.findall(r"'staging/", c)) for c in copies) == 2
        left = pafs.S3FileSystem(**s3.pyarrow_kwargs()).get_file_info(
            pafs.FileSelector(s3_storage.path("staging"), allow_not_found=True, recursive=True)
        )
        assert [f.path for f in left if f.type == pafs.FileType.File] == []

    def test_a_load_and_a_swap_sent_twice_leave_one_copy(
        self,
        spark: SparkSession,
        fakesnow_on_s3: FakesnowServer,
        s3_storage: Location,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The connector replays a statement when a dropped connection lost its answer, and the
        warehouse may have run it: here every stage's CREATE, every COPY and every swap statement
        runs twice."""
        settings = TargetSettings(storage=s3_storage)
        with registry().open(TargetURL.parse(server_url(fakesnow_on_s3)), settings) as target:
            sent = record_statements(monkeypatch, target)
            once = target.client.cursor  # type: ignore[attr-defined]

            @contextmanager
            def twice(sql: str, params: Any = ()) -> Iterator[Any]:
                if sql.startswith(("CREATE TRANSIENT TABLE", "COPY INTO", "INSERT", "DELETE")):
                    with once(sql, params):
                        pass
                with once(sql, params) as cursor:
                    yield cursor

            monkeypatch.setattr(target.client, "cursor", twice)  # type: ignore[attr-defined]
            run = make_run()
            SyncLog(target, Config(storage=s3_storage), spark).write_run(
                run, make_records(spark, record_rows(run))
            )
            assert target.query(SEED_000_BY_SYNC).num_rows == 40
            counts = target.client.fetch(
                f"SELECT COUNT(*), COUNT(DISTINCT log_id) FROM {target.relation(SYNC_LOG).render()}"
            )
            assert counts == [(40, 40)]
        inserts = [s for s in sent if s.startswith("INSERT INTO") and "_SYNCLOG_STAGE_" in s]
        assert inserts and all(" WHERE (SELECT COUNT(*) FROM " in s for s in inserts)  # insert-missing
        assert all("FORCE" not in s for s in sent if s.startswith("COPY INTO"))

    def test_a_storage_integration_replaces_the_keys(self, s3_storage: Location) -> None:
        access = StageAccess.resolve({"storage_integration": "synclog_s3"}, s3_storage)
        assert access.sql() == "STORAGE_INTEGRATION = synclog_s3"
        gcs = Location.parse("gs://bucket/logs")
        assert stage_url(gcs) == "gcs://bucket/logs/"
        with pytest.raises(ConfigError, match="needs a storage integration"):
            StageAccess.resolve({}, gcs)

    def test_keys_are_never_shown(self, s3_storage: Location, monkeypatch: pytest.MonkeyPatch) -> None:
        access = StageAccess.resolve({"aws_key_id": "AKIA1", "aws_secret_key": "s3cret"}, s3_storage)
        assert "s3cret" not in repr(access) and "AKIA1" not in repr(access)
        assert access.hide("bad credentials AKIA1/s3cret") == "bad credentials ***/***"
        with pytest.raises(ConfigError, match="unknown option 'aws_secret'"):
            StageAccess.resolve({"aws_secret": "x"}, s3_storage)
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(name, raising=False)
        with pytest.raises(ConfigError, match=r"needs a storage integration .* or keys"):
            StageAccess.resolve({}, Location.parse("s3://bucket/logs"))


def test_the_next_ensure_drops_the_stage_of_a_killed_writer(fakesnow: FakesnowServer) -> None:
    """A stage named for a writer process that is gone is dropped by the next `ensure`; the stage
    of a live writer (this process) stays."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    dead = f"{host_digest()}_{ended.pid}_1"  # a compact owner tag of a process that has ended
    with registry().open(TargetURL.parse(server_url(fakesnow))) as target:
        assert isinstance(target, SqlTarget)
        target.ensure([SYNC_LOG])
        relation = target.relation(SYNC_LOG)
        killed, live = (
            relation.with_name(f"_SYNCLOG_STAGE_0123ABCD_{dead}"),
            target.stage_relation(relation),
        )
        for stage in (killed, live):
            target.create_stage(stage, target.table_spec(SYNC_LOG))
        target.ensure([SYNC_LOG])
        stages = target.client.fetch(
            f"SELECT table_name FROM {database(target)}.INFORMATION_SCHEMA.TABLES WHERE table_name LIKE ?",
            [f"{STAGE_PREFIX.upper()}%"],
        )
    assert [name.lower() for (name,) in stages] == [live.name.lower()]
