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

import socket
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from harness.errors import ServerUnavailable
from harness.fakesnow_server import FakesnowServer, fakesnow_patched, fakesnow_server
from pyspark.sql import SparkSession
from snowflake.connector.errors import ProgrammingError
from snowflake_suite import SnowflakeSuite

from synclog.config import Config, SyncSettings
from synclog.demo import report
from synclog.errors import ConfigError, TargetError
from synclog.layouts.census import SOURCE_OBJECTS, SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import TargetSettings
from synclog.targets.tables import TableSpec
from synclog.testing.conformance import SEED_000_BY_SYNC
from synclog.testing.factories import make_records, make_run, record_rows
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_snowflake.connection import connection_settings


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
