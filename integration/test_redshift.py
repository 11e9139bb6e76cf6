"""The conformance suite and what only Redshift does: redshift_connector -> the stand-in proxy ->
PostgreSQL, with S3 on moto (storage, COPY's staged files and UNLOAD's read-backs)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.errors import ConfigError, TargetError
from synclog.layouts.census import SYNC_LOG
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.urls import TargetURL
from synclog_testing.conformance import SEED_000_BY_SYNC, TargetConformance
from synclog_testing.factories import RECORD_COLUMNS, make_records, make_run, person_rows, record_rows
from synclog_testing.network import tcp_outage
from synclog_testing.outage import Outage
from synclog_testing.read_back import READS, READS_WIDER, read_back_rows
from synclog_testing.seed_queries import SEED_002_ENTER_EXIT, SEED_002_ERRORS

pytest.importorskip("synclog_redshift", reason="synclog-redshift is not installed")
redshift_connector = pytest.importorskip("redshift_connector")
psycopg = pytest.importorskip("psycopg")
from harness.errors import ServerUnavailable  # noqa: E402
from harness.postgres_server import PostgresServer  # noqa: E402
from harness.processes import free_port  # noqa: E402
from harness.redshift_proxy import IAM_ROLE, RedshiftStandIn, redshift_stand_in  # noqa: E402
from harness.s3_server import S3Server  # noqa: E402
from harness.spark_settings import several_tasks  # noqa: E402
from psycopg import sql  # noqa: E402

from synclog_redshift.connection import (  # noqa: E402
    CONNECT_TIMEOUT_S,
    ConnectionSettings,
    S3Access,
    cluster_authority,
)
from synclog_redshift.statements import inline, literal  # noqa: E402

BUCKET = "synclog-redshift"
SUPER_OID = 4000
"""The type code redshift_connector reports for SUPER columns."""
BOTH_LAYOUTS = Config(defaults=SyncSettings(layouts=("census", "hightouch")))


@pytest.fixture(scope="session")
def stand_in(postgres: PostgresServer, s3: S3Server) -> Iterator[RedshiftStandIn]:
    """The proxy in front of the run's PostgreSQL, with the run's moto S3 as the S3 it reaches."""
    try:
        with redshift_stand_in(postgres, s3) as rs:
            s3.create_bucket(BUCKET)
            yield rs
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


def s3_storage(stand_in: RedshiftStandIn) -> Location:
    """A fresh prefix of the bucket on the stand-in's S3, reached with its endpoint and keys."""
    return Location.parse(f"s3://{BUCKET}/{uuid.uuid4().hex}", stand_in.s3.storage_options())


def connect(url: str) -> Any:
    """A plain redshift_connector connection to the database of a target URL (what an analyst uses)."""
    settings = ConnectionSettings.from_url(TargetURL.parse(url))
    connection = redshift_connector.connect(**settings.kwargs)
    connection.autocommit = True
    return connection


def rows_of(connection: Any, query: str) -> tuple[list[str], list[int], list[list[Any]]]:
    """Column names, type codes and rows of `query`, run as written."""
    cursor = connection.cursor()
    cursor.execute(query)
    return [d[0] for d in cursor.description], [d[1] for d in cursor.description], list(cursor.fetchall())


def proxy_log(stand_in: RedshiftStandIn, word: str) -> list[str]:
    """The proxy's log lines for completed COPY or UNLOAD statements, after " INFO "."""
    lines = stand_in.log_file.read_text().splitlines()
    return [line.split(" INFO ", 1)[1] for line in lines if f" INFO {word} " in line]


class TestRedshift(TargetConformance):
    model_examples = 4  # model sequences in make test: about 5 s each on this stand-in (make soak runs more)

    settings = TargetSettings(options={"iam_role": IAM_ROLE})

    @pytest.fixture
    def synclog_target_url(self, postgres: PostgresServer, stand_in: RedshiftStandIn) -> Iterator[str]:
        name = f"conformance_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        yield f"redshift://{stand_in.user}:unused@{stand_in.host}:{stand_in.port}/{name}?ssl=false"
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))

    @pytest.fixture
    def storage(self, stand_in: RedshiftStandIn) -> Location:
        return s3_storage(stand_in)

    @pytest.fixture
    def outage(self, target_url: str, stand_in: RedshiftStandIn) -> Iterator[Outage]:
        """The stand-in behind a loopback port nothing listens on until `up` forwards it."""
        yield tcp_outage(target_url, stand_in.host, stand_in.port)

    # -- DDL -----------------------------------------------------------------------------------

    def test_a_view_gains_new_columns_by_drop_and_create(
        self, target: Target, target_url: str, postgres: PostgresServer
    ) -> None:
        """Redshift's CREATE OR REPLACE VIEW takes only the identical columns (PostgreSQL also takes
        appended ones): a view whose table gained columns is dropped and created again, a current
        one is left alone. The view's OID in the stand-in's PostgreSQL tells which happened."""
        database = target_url.rsplit("/", 1)[1].split("?")[0]

        def view_oid() -> int:
            with psycopg.connect(postgres.dsn, dbname=database) as backing:
                return backing.execute("SELECT 'census.sync_log'::regclass::oid").fetchone()[0]

        target.ensure([replace(SYNC_LOG, columns=SYNC_LOG.columns[:-1])])
        older = view_oid()
        target.ensure([SYNC_LOG])
        migrated = view_oid()
        target.ensure([SYNC_LOG])
        assert migrated != older, "dropped and created again"
        assert view_oid() == migrated, "left alone"
        view = target.query("SELECT * FROM census.sync_log WHERE 1 = 0").column_names
        assert view == SYNC_LOG.column_names()

    # -- SUPER ---------------------------------------------------------------------------------

    def test_payloads_and_fields_are_super_and_fields_are_populated(
        self, target: Target, target_url: str, spark: SparkSession
    ) -> None:
        run = make_run(sync_id=91, sync_run_id=9101)
        people = [("a", "upsert", "succeeded", 1), ("b", "upsert", "rejected", 2)]
        self.log(target, spark, BOTH_LAYOUTS).write_run(run, make_records(spark, person_rows(run, people)))
        with connect(target_url) as conn:
            _, types, rows = rows_of(
                conn,
                "SELECT row_id, fields, fields.version FROM hightouch_audit.sync_changelog ORDER BY row_id",
            )
            assert types[1:] == [SUPER_OID, SUPER_OID]
            assert [(r[0], json.loads(r[1]), r[2]) for r in rows] == [
                ("a", {"id": "a", "version": 1}, "1"),
                ("b", {"id": "b", "version": 2}, "2"),
            ]
            _, types, rows = rows_of(
                conn, "SELECT record_payload, record_payload.version FROM census.sync_log"
            )
            assert types == [SUPER_OID, SUPER_OID]
            assert sorted(r[1] for r in rows) == ["1", "2"]

    def test_a_payload_above_64_kb_lands_as_a_navigable_super_object(
        self, target: Target, target_url: str, spark: SparkSession
    ) -> None:
        run = make_run()
        payload = {"email": "big@example.com", "items": [{"n": i, "note": "x" * 60} for i in range(1500)]}
        text = json.dumps(payload)
        assert 65_535 < len(text) < target.capabilities.max_json_bytes  # beyond VARCHAR and JSON_PARSE
        rows = record_rows(run, count=4, null_at=(), duplicate_of={})
        rows[0] = (*rows[0][:4], text, *rows[0][5:])
        self.log(target, spark).write_run(run, make_records(spark, rows))
        with connect(target_url) as conn:
            _, _, found = rows_of(
                conn,
                "SELECT record_payload.email::varchar, record_payload.items[1499].n, record_payload "
                f"FROM census.sync_log WHERE record_identifier = '{rows[0][0]}'",
            )
        [(email, last, stored)] = found
        assert (email, last) == ("big@example.com", "1499")
        assert json.loads(stored) == payload

    # -- the load ------------------------------------------------------------------------------

    def test_one_copy_per_table_per_write(
        self, target: Target, stand_in: RedshiftStandIn, spark: SparkSession
    ) -> None:
        run = make_run()
        records = make_records(spark, record_rows(run, count=400, batches=4))
        before = len(proxy_log(stand_in, "COPY"))
        with several_tasks(spark, 4):  # several tasks stage the rows
            self.log(target, spark).write_run(run, records)
        copies = proxy_log(stand_in, "COPY")[before:]
        stages = [line.split()[1] for line in copies]
        assert len(copies) == 5, copies  # sync_log_records, the three metadata tables, synclog_runs
        assert len(set(stages)) == 5, "each table's stage is loaded once"
        assert all(stage.startswith('"_synclog_stage_') for stage in stages)
        [log_copy] = [line for line in copies if " 400 rows " in line]
        assert int(log_copy.split(" from ")[1].split()[0]) > 1, "one COPY reads every staged file"

    def test_concurrent_swaps_into_one_table_take_turns(
        self,
        target: Target,
        target_url: str,
        storage: Location,
        postgres: PostgresServer,
        spark: SparkSession,
    ) -> None:
        """Two swaps wait for a LOCK another session holds; when it ends they run one after the other."""
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run, count=10)))
        rows = self.rows(target, SYNC_LOG)
        others = [
            registry().open(TargetURL.parse(target_url), replace(self.settings, storage=storage))
            for _ in "ab"
        ]
        holder = connect(target_url)
        holder.cursor().execute("BEGIN")
        holder.cursor().execute("LOCK census.sync_log_records")
        failures: list[BaseException] = []

        def swap(other: Target) -> None:
            try:
                loaded = Rows.local(spark, SYNC_LOG, rows)
                other.replace_rows(SYNC_LOG, loaded, Keys.of_rows(SYNC_LOG, loaded))
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=swap, args=(other,)) for other in others]
        for thread in threads:
            thread.start()
        table = "'census.sync_log_records'::regclass"
        waiting = f"SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = {table}"
        deadline = time.monotonic() + 120
        with psycopg.connect(postgres.dsn, dbname=target_url.rsplit("/", 1)[1].split("?")[0]) as backing:
            while backing.execute(waiting).fetchone() != (2,):
                assert time.monotonic() < deadline, "both swaps should wait for the table"
                time.sleep(0.1)
        holder.cursor().execute("COMMIT")
        for thread in threads:
            thread.join(120)
        holder.close()
        for other in others:
            other.close()
        assert failures == []
        assert self.count(target) == 10, "the second swap replaced the first one's rows"

    # -- read-back -----------------------------------------------------------------------------

    def test_read_back_is_an_unload_read_through_its_manifest(
        self, target: Target, stand_in: RedshiftStandIn, spark: SparkSession
    ) -> None:
        rows = read_back_rows()
        target.ensure([READS])
        loaded = Rows.local(spark, READS, rows)
        target.replace_rows(READS, loaded, Keys.of_rows(READS, loaded))
        before = len(proxy_log(stand_in, "UNLOAD"))
        with target.read_rows(READS_WIDER, 1, spark) as frame:
            assert frame is not None
            fs, exports = target.storage.filesystem(), target.storage.path("exports")
            written = [
                i.path for i in fs.get_file_info(pafs.FileSelector(exports, recursive=True)) if i.is_file
            ]
            found = [r.asDict() for r in frame.collect()]
        assert proxy_log(stand_in, "UNLOAD")[before:] == ["UNLOAD 8 rows"]
        assert sorted(p.rsplit("/", 1)[1] for p in written) == ["0000_part_00.parquet", "manifest"]
        assert frame.schema == READS_WIDER.spark_schema()
        expected = [dict.fromkeys(READS_WIDER.column_names()) | r for r in rows if r["sync_id"] == 1]
        for row in expected:  # Spark hands timestamps back as naive local times
            row["seen_at"] = row["seen_at"] and row["seen_at"].astimezone().replace(tzinfo=None)
        assert sorted(map(_parsed, found), key=str) == sorted(map(_parsed, expected), key=str)
        with target.read_rows(READS, 3, spark) as empty:
            assert empty is not None
            assert empty.schema == READS.spark_schema()
            assert empty.count() == 0

    # -- seeds, through the driver as an analyst runs them ---------------------------------------

    def test_seed_000_and_002_queries_run_through_redshift_connector(
        self, target: Target, target_url: str, spark: SparkSession
    ) -> None:
        run = make_run()
        self.log(target, spark, BOTH_LAYOUTS).write_run(run, make_records(spark, record_rows(run)))
        with connect(target_url) as conn:  # seed 000 with the names documented for Redshift
            names, _, by_sync = rows_of(conn, self.seed(SEED_000_BY_SYNC))
            _, _, errors = rows_of(conn, SEED_002_ERRORS)
            moves_names, _, moves = rows_of(conn, SEED_002_ENTER_EXIT)
        assert len(by_sync) == 40
        assert {"log_id", "record_payload", "name"} <= set(names)
        assert errors and all(count > 0 for _, count in errors)
        assert moves_names == ["user_id", "audience", "type", "timestamp"]
        assert moves

    # -- the command line ----------------------------------------------------------------------

    def test_the_command_line_writes_through_the_chain(
        self, target_url: str, storage: Location, stand_in: RedshiftStandIn, tmp_path: Path
    ) -> None:
        """`synclog write` in a process of its own: storage on S3 from synclog.toml and the
        environment, both layouts through the chain, and the password is never shown. (The
        demo's many runs go through the same write; the whole demo runs on DuckDB, tests/.)"""
        s3 = stand_in.s3
        config = f'url = "{storage.uri()}"\nendpoint_url = "{s3.endpoint_url}"\nregion = "{s3.region}"\n'
        layouts = '[defaults]\nlayouts = ["census", "hightouch"]\n'
        (tmp_path / "synclog.toml").write_text(f"[storage]\n{config}\n{layouts}")
        run = make_run()
        (tmp_path / "run.json").write_text(json.dumps(run.to_dict()))
        rows = [dict(zip(RECORD_COLUMNS, row, strict=True)) for row in record_rows(run)]
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "records.parquet")
        env = {
            **os.environ,
            **s3.environment,
            "REDSHIFT_IAM_ROLE": IAM_ROLE,
            "PYTHONPATH": os.pathsep.join(sys.path),
        }
        args = ["write", "--run", "run.json", "--records", "records.parquet", "--target", target_url]
        done = subprocess.run(
            [sys.executable, "-m", "synclog", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "logged 40 records of run 5678" in done.stdout
        assert "unused" not in done.stdout + done.stderr, "the password is never shown"
        with connect(target_url) as conn:
            _, _, [[logged]] = rows_of(conn, "SELECT count(*) FROM census.sync_log")
            _, _, [[changes]] = rows_of(conn, "SELECT count(*) FROM hightouch_audit.sync_changelog")
        assert logged == 40
        assert changes > 0

    # -- configuration and connection ----------------------------------------------------------

    def test_storage_must_be_on_s3(self, target_url: str, tmp_path: Path) -> None:
        settings = replace(self.settings, storage=Location.parse(str(tmp_path)))
        with pytest.raises(ConfigError, match=r"^storage: .*s3://bucket/prefix") as refused:
            registry().open(TargetURL.parse(target_url), settings)
        assert "\n" not in str(refused.value)

    def test_copy_and_unload_credentials(
        self, stand_in: RedshiftStandIn, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        storage = s3_storage(stand_in)
        keys = S3Access.resolve({}, storage)
        assert keys.sql().startswith(f"ACCESS_KEY_ID '{stand_in.s3.access_key}' SECRET_ACCESS_KEY ")
        assert "secret" not in repr(keys)
        monkeypatch.setenv("REDSHIFT_IAM_ROLE", IAM_ROLE)
        assert S3Access.resolve({}, storage).sql() == f"IAM_ROLE '{IAM_ROLE}'"
        assert (
            S3Access.resolve({"iam_role": "arn:aws:iam::1:role/x"}, storage).iam_role
            == "arn:aws:iam::1:role/x"
        )
        with pytest.raises(ConfigError, match="unknown option 'iam-role'"):
            S3Access.resolve({"iam-role": "x"}, storage)
        with pytest.raises(ConfigError, match="secret_access_key must be text without quotes") as quoted:
            S3Access.resolve({"access_key_id": "k", "secret_access_key": "s3cret'"}, storage)
        assert "s3cret" not in str(quoted.value)
        monkeypatch.delenv("REDSHIFT_IAM_ROLE")
        with pytest.raises(ConfigError, match="need an IAM role"):
            S3Access.resolve({}, replace(storage, access_key=None, secret_key=None))

    def test_a_password_comes_from_the_environment_and_is_never_shown(
        self, target_url: str, storage: Location, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        bare = target_url.replace(":unused@", "@")
        monkeypatch.setenv("SYNCLOG_TEST_RS_PASSWORD", "s3cret-from-env")
        url = TargetURL.parse(bare, password_env="SYNCLOG_TEST_RS_PASSWORD")
        assert ConnectionSettings.from_url(url).kwargs["password"] == "s3cret-from-env"
        assert "s3cret" not in str(url) + repr(url) + repr(ConnectionSettings.from_url(url))
        monkeypatch.setenv("REDSHIFT_PASSWORD", "s3cret-redshift")
        assert ConnectionSettings.from_url(TargetURL.parse(bare)).kwargs["password"] == "s3cret-redshift"
        monkeypatch.delenv("REDSHIFT_PASSWORD")
        with pytest.raises(ConfigError, match="no password"):
            ConnectionSettings.from_url(TargetURL.parse(bare))
        with pytest.raises(ConfigError, match="unknown option 'sll'"):
            ConnectionSettings.from_url(TargetURL.parse(bare + "&sll=false"))
        nobody_listens = TargetURL.parse(f"redshift://u:s3cret-in-url@127.0.0.1:{free_port()}/db")
        with pytest.raises(TargetError) as failed:
            registry().open(nobody_listens, replace(self.settings, storage=storage))
        assert "s3cret" not in str(failed.value)
        assert "\n" not in str(failed.value)

    @pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the driver's own SSLContext() call
    def test_a_server_that_never_answers_times_out_but_slow_statements_do_not(
        self, target_url: str, storage: Location
    ) -> None:
        settings = replace(self.settings, storage=storage)
        assert (
            ConnectionSettings.from_url(TargetURL.parse("redshift://u:p@h/db")).connect_timeout
            == CONNECT_TIMEOUT_S
        )
        with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, then says nothing
            port = silent.getsockname()[1]
            started = time.monotonic()
            with pytest.raises(TargetError, match="cannot connect"):
                registry().open(
                    TargetURL.parse(f"redshift://u:p@127.0.0.1:{port}/db?connect_timeout=1"), settings
                )
            assert time.monotonic() - started < 10
        with registry().open(TargetURL.parse(f"{target_url}&connect_timeout=1"), settings) as target:
            assert target.client.fetch("SELECT 1 FROM pg_sleep(2)") == [(1,)]

    # -- statements ----------------------------------------------------------------------------

    def test_unload_inlines_integers_only_and_quotes_its_query(self) -> None:
        assert inline('SELECT "a" FROM t WHERE "sync_id" = %s AND x = %s', [7, -2]) == (
            'SELECT "a" FROM t WHERE "sync_id" = 7 AND x = -2'
        )
        for wrong in ("7", True, 7.0, None):
            with pytest.raises(TypeError, match="only integers"):
                inline("SELECT 1 WHERE a = %s", [wrong])
        with pytest.raises(ValueError, match="1 placeholders for 2 parameters"):
            inline("SELECT 1 WHERE a = %s", [1, 2])
        assert literal("SELECT 'it''s'") == "'SELECT ''it''''s'''"
        with pytest.raises(ValueError, match="backslash"):
            literal("a\\b")


def _parsed(row: dict[str, Any]) -> dict[str, Any]:
    """`row` with its JSON text parsed (Redshift respaces what was written)."""
    return {
        k: json.loads(v) if k in ("fields", "added_later_json") and v is not None else v
        for k, v in row.items()
    }


@pytest.mark.parametrize(
    ("host", "authority"),
    [
        ("examplecluster.abc123xyz789.us-west-2.redshift.amazonaws.com", "examplecluster.us-west-2"),
        ("default.123456789012.us-east-1.redshift-serverless.amazonaws.com", "default.us-east-1"),
        ("127.0.0.1", "127.0.0.1"),  # an address, as the stand-in's: no cluster to name
        ("redshift.internal.example.com", "redshift.internal.example.com"),
    ],
)
def test_lineage_namespace_names_the_cluster_and_region(host: str, authority: str) -> None:
    """The naming spec's Redshift row: `redshift://{cluster identifier}.{region}:{port}`."""
    assert cluster_authority(host) == authority
