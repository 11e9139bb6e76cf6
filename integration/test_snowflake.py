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

import json
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest
from harness.errors import ServerUnavailable
from harness.fakesnow_server import FakesnowServer, fakesnow_patched, fakesnow_server
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.errors import ConfigError, TargetError
from synclog.layouts.census import SOURCE_OBJECTS, SYNC_LOG
from synclog.layouts.registry import LAYOUTS
from synclog.layouts.table import Column, ColumnType, TableSpec
from synclog.plugins.manager import registry
from synclog.targets.base import Target, TargetSettings
from synclog.testing.conformance import SEED_000_BY_SYNC, TargetConformance
from synclog.testing.factories import make_records, make_run, record_rows
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_snowflake.connection import connection_settings
from synclog_snowflake.target import LOAD_TABLE_PREFIX

SEED_002_COMMON_ERRORS = """select
  failure_reason,
  count(*) as c
from hightouch_audit.sync_snapshot
where failure_reason is not null
group by failure_reason
order by c desc"""

SEED_002_ENTERED_AND_EXITED = """with details as (
  select
    model_name,
    row_id,
    op_type as type,
    started_at as timestamp,
    lag(op_type) over(partition by model_name, row_id order by started_at) as lag_type
  from hightouch_audit.sync_changelog c
  join hightouch_audit.sync_runs r on c.sync_id = r.sync_id
  where op_type != 'changed'
  order by model_name, row_id
)

select
  row_id as user_id,
  model_name as audience,
  type,
  timestamp
from details
where (lag_type != type or lag_type is null)
order by model_name, row_id, timestamp"""

SEED_002_CURRENT_ROWS = """with model_names as (
  select distinct
    sync_id,
    model_name
  from hightouch_audit.sync_runs
)

select
  model_name,
  row_id as user_id
from hightouch_audit.sync_snapshot s
join model_names r on s.sync_id = r.sync_id
where s.status != 'failed'
qualify row_number() over (partition by user_id, model_name order by null) = 1
order by user_id"""

#: Every logical column type, in a schema of its own: the target is generic over TableSpecs.
EVERY_TYPE = TableSpec(
    layout="probe",
    schema="probe_audit",
    name="every_type",
    columns=(
        Column("id", ColumnType.BIGINT),
        Column("small", ColumnType.INTEGER),
        Column("label", ColumnType.STRING),
        Column("doc", ColumnType.JSON),
        Column("seen_at", ColumnType.TIMESTAMP),
        Column("flag", ColumnType.BOOLEAN),
    ),
    replace_key=("id",),
)
AT = datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


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


def record_statements(monkeypatch: pytest.MonkeyPatch, target: Target) -> list[str]:
    """Every statement `target` sends from now on."""
    sent: list[str] = []
    original = target._cursor  # type: ignore[attr-defined]

    def recording(sql: str, params: Any) -> Any:
        sent.append(sql)
        return original(sql, params)

    monkeypatch.setattr(target, "_cursor", recording)
    return sent


def fail_on(monkeypatch: pytest.MonkeyPatch, target: Target, starts: str) -> None:
    """Make the first statement of `target` that starts with `starts` fail."""
    original: Callable[[str, Any], Any] = target._cursor  # type: ignore[attr-defined]

    def failing(sql: str, params: Any) -> Any:
        if sql.startswith(starts):
            raise TargetError("Snowflake: injected failure")
        return original(sql, params)

    monkeypatch.setattr(target, "_cursor", failing)


class TestSnowflake(TargetConformance):
    seed_names = {
        "CENSUS.CENSUS.SYNC_LOG": "CENSUS.CENSUS.SYNC_LOG",
        "CENSUS.CENSUS.SOURCE_OBJECTS": "CENSUS.CENSUS.SOURCE_OBJECTS",
    }
    expected_sync_log = "CENSUS.CENSUS.SYNC_LOG"

    @pytest.fixture
    def target_url(self, fakesnow: FakesnowServer) -> Iterator[str]:
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

    # -- loading -------------------------------------------------------------------------------

    def test_payloads_are_variant_objects(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        rows = target.query(
            "SELECT record_payload:email::VARCHAR AS email, record_payload:seats::INT AS seats "
            "FROM CENSUS.CENSUS.SYNC_LOG WHERE record_identifier = 'user1234-6@example.com'"
        ).to_pylist()
        assert rows == [{"EMAIL": "user6@example.com", "SEATS": 6}]
        columns = target.query(
            "SELECT column_name, data_type FROM CENSUS.INFORMATION_SCHEMA.COLUMNS "
            "WHERE table_schema = 'CENSUS' AND table_name = 'SYNC_LOG_RECORDS' "
            "AND column_name IN ('RECORD_PAYLOAD', 'BATCH_STARTED_AT')"
        ).to_pylist()
        assert {(c["COLUMN_NAME"], c["DATA_TYPE"]) for c in columns} == {
            ("RECORD_PAYLOAD", "VARIANT"),
            ("BATCH_STARTED_AT", "TIMESTAMP_TZ"),
        }

    def test_loads_go_through_the_stage(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        sent = record_statements(monkeypatch, target)
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        log_table = target.relation(SYNC_LOG).render()
        puts = [s for s in sent if s.startswith("PUT 'file://")]
        copies = [s for s in sent if s.startswith("COPY INTO")]
        assert len(puts) >= 4  # at least one Parquet file per table: the log and three metadata tables
        assert len(copies) == 4
        assert all("FROM (SELECT" in c and "@" in c for c in copies)
        assert not [s for s in sent if s.startswith(f"INSERT INTO {log_table}") and "VALUES" in s]
        leftovers = target.query(
            "SELECT COUNT(*) AS n FROM CENSUS.INFORMATION_SCHEMA.TABLES WHERE table_name LIKE ?",
            [f"{LOAD_TABLE_PREFIX}%"],
        )
        assert leftovers.column(0)[0].as_py() == 0

    def test_a_failed_replacement_changes_nothing(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        run = make_run()
        rows = record_rows(run)
        log = self.log(target, spark)
        log.write_run(run, make_records(spark, rows))
        log_table = target.relation(SYNC_LOG).render()
        fail_on(monkeypatch, target, f"INSERT INTO {log_table}")
        with pytest.raises(TargetError, match="injected failure"):
            log.write(run, make_records(spark, [r for r in rows if r[5] == 0][:5]))
        # The DELETE of batch 0 ran inside the transaction and was rolled back with it.
        assert self.count(target) == 40
        assert self.count(target, "batch_number = 0") == 20

    def test_any_table_spec_round_trips(self, target: Target, spark: SparkSession) -> None:
        target.ensure([EVERY_TYPE])
        first = pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "small": pa.array([7, None], pa.int32()),
                "label": ["one", None],
                "doc": [json.dumps({"k": [1, 2]}), None],
                "seen_at": pa.array([AT, AT], pa.timestamp("us", tz="UTC")),
                "flag": [True, None],
            }
        )
        assert target.replace_rows(EVERY_TYPE, first) == 2
        again = spark.createDataFrame(
            [(2, 9, "two", '{"k": []}', AT, False)],
            "id bigint, small int, label string, doc string, seen_at timestamp, flag boolean",
        )
        assert target.replace_rows(EVERY_TYPE, again) == 1
        relation = target.relation(EVERY_TYPE).render()
        rows = target.query(
            f'SELECT "ID", "SMALL", "LABEL", "DOC":k[1]::INT AS k, "SEEN_AT", "FLAG" FROM {relation} ORDER BY "ID"'
        ).to_pylist()
        assert [tuple(r.values()) for r in rows] == [
            (1, 7, "one", 2, AT, True),
            (2, 9, "two", None, AT, False),
        ]
        assert str(target.relation(EVERY_TYPE)) == "CENSUS.PROBE_AUDIT.EVERY_TYPE"

    # -- seed 002 ------------------------------------------------------------------------------

    def test_seed_002_queries_run_unchanged(self, target: Target, spark: SparkSession) -> None:
        if "hightouch" not in LAYOUTS:
            pytest.skip("the hightouch layout is not registered in this build")
        config = Config(defaults=SyncSettings(layouts=("hightouch",)))
        run = make_run()
        self.log(target, spark, config).write_run(run, make_records(spark, record_rows(run)))
        # Two-part names resolve against the connection's database (CENSUS, from the URL).
        errors = target.query(SEED_002_COMMON_ERRORS).to_pylist()
        entered = target.query(SEED_002_ENTERED_AND_EXITED)
        current = target.query(SEED_002_CURRENT_ROWS)
        assert errors and all(r["FAILURE_REASON"] for r in errors)
        assert entered.num_rows > 0
        assert current.num_rows > 0


class TestLauncherMode:
    """fakesnow's patched, in-process mode: what `fakesnow -m synclog demo …` runs on."""

    def test_write_and_seed_000_in_the_patched_mode(self, spark: SparkSession, tmp_path: Any) -> None:
        with ExitStack() as stack:
            try:
                stack.enter_context(fakesnow_patched())
            except ServerUnavailable as exc:
                pytest.skip(exc.reason)
            url = TargetURL.parse("snowflake://fake:snow@fakesnow/CENSUS")
            with registry().open(url) as target:
                config = Config(state_dir=str(tmp_path / "runs"))
                run = make_run()
                SyncLog(target, config, spark).write_run(run, make_records(spark, record_rows(run)))
                assert target.query(SEED_000_BY_SYNC).num_rows == 40
                sources = target.query(f"SELECT name FROM {target.relation(SOURCE_OBJECTS).render()}")
                assert sources.column(0).to_pylist() == ["High-value customers"]


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
