"""The conformance suite, and what only PostgreSQL does, on a real throwaway server."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from synclog.capabilities import Casefold
from synclog.config import Config, SyncSettings
from synclog.errors import TargetError
from synclog.layouts.census import SYNC_LOG
from synclog.naming import Relation
from synclog.plugins.manager import registry
from synclog.targets.base import Target
from synclog.targets.rows import Rows
from synclog.targets.tables import ColumnType
from synclog.urls import TargetURL
from synclog_testing.conformance import (
    PortableConformance,
    sync_log_frame,
    sync_log_keys,
)
from synclog_testing.factories import make_records, make_run, record_rows
from synclog_testing.network import tcp_outage
from synclog_testing.outage import Outage
from synclog_testing.privacy import (
    MASK_KEY,
    MASK_KEY_ENV,
    check_masked,
    check_tracking_cli,
    masked_demo_runs,
)
from synclog_testing.read_back import check_empty_read_back, check_read_back, read_back_rows

pytest.importorskip("synclog_postgres", reason="synclog-postgres is not installed")
import psycopg
from harness.postgres_server import PostgresServer
from psycopg import sql
from upgrade import DATA, check_upgrade, write_after_upgrade

from synclog_postgres import orphans
from synclog_postgres.connection import CONNECT_TIMEOUT_S, conninfo
from synclog_postgres.copy import CopyStageWriter, day_totals
from synclog_postgres.orphans import STAGE_PATTERN
from synclog_postgres.target import PostgresTarget

PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
BEFORE_1970 = datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
LATER = datetime(2026, 3, 1, 8, 0, 0, 123456, tzinfo=UTC)


def stage_tables(target: Target) -> list[str]:
    """Staging tables left behind (there should never be any)."""
    rows = target.query("SELECT tablename FROM pg_tables WHERE tablename LIKE '\\_synclog\\_stage\\_%'")
    return rows.column(0).to_pylist()


def partition_days(target: Target) -> list[str]:
    """The day partitions of census.sync_log_records, by name."""
    rows = target.query(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'census.sync_log_records'::regclass ORDER BY 1"
    )
    return [name.rsplit("_p", 1)[1] for name in rows.column(0).to_pylist()]


class TestPostgres(PortableConformance):  # PostgreSQL has no QUALIFY
    crash_calls = ("sweep_stages",)  # the orphaned stages' sweep talks to the connection itself

    @pytest.fixture
    def synclog_target_url(self, postgres: PostgresServer) -> Iterator[str]:
        name = f"conformance_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        yield f"postgresql://{postgres.user}@{postgres.host}:{postgres.port}/{name}"
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))

    @pytest.fixture
    def outage(self, target_url: str, postgres: PostgresServer) -> Iterator[Outage]:
        """The database behind a loopback port nothing listens on until `up` forwards it."""
        yield tcp_outage(target_url, postgres.host, postgres.port)

    # -- names, types, partitions -------------------------------------------------------------

    def test_payloads_are_jsonb_and_times_timestamptz(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        types = target.query(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'census' AND table_name = 'sync_log'"
        ).to_pylist()
        by_name = {row["column_name"]: row["data_type"] for row in types}
        assert by_name["record_payload"] == "jsonb"
        assert by_name["batch_started_at"] == "timestamp with time zone"
        seats = target.query(
            "SELECT (record_payload->>'seats')::int AS seats FROM census.sync_log "
            "WHERE record_payload->>'email' = 'user2@example.com'"
        )
        assert seats.column(0).to_pylist() == [2]

    def test_log_table_is_partitioned_by_day_on_demand(self, target: Target, spark: SparkSession) -> None:
        log = self.log(target, spark)
        for run_id, day in ((1, 1), (2, 3), (3, 3)):
            run = make_run(sync_run_id=run_id)
            started = datetime(2026, 3, day, 12, tzinfo=UTC)
            log.write(run, make_records(spark, record_rows(run, count=10, started_at=started)))
        assert partition_days(target) == ["20260301", "20260303"]
        assert stage_tables(target) == []
        kind = target.query("SELECT relkind FROM pg_class WHERE oid = 'census.sync_log_records'::regclass")
        assert kind.column(0).to_pylist() == ["p"]

    # -- loading -------------------------------------------------------------------------------

    def test_killed_executor_copy_leaves_the_table_as_it_was(
        self, target: Target, postgres: PostgresServer, spark: SparkSession
    ) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        before = self.count(target)
        dsn, database = postgres.dsn, target.url.path.lstrip("/")

        def kill_copy(i: int) -> int:
            """On an executor, at row 100: terminate the server processes COPYing into staging."""
            import psycopg

            deadline = time.monotonic() + 60
            with psycopg.connect(dsn, autocommit=True) as conn:
                while i == 100 and time.monotonic() < deadline:
                    killed = conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = %s AND query LIKE 'COPY %%_synclog_stage_%%'",
                        [database],
                    ).fetchall()
                    if any(done for (done,) in killed):
                        break
                    time.sleep(0.05)
            return i % 2

        kill = F.udf(kill_copy, "int", useArrow=False)
        # libpq reports the kill as the server's "terminating connection …" notice or, when the
        # socket closes first, as "server closed the connection unexpectedly".
        failed = r"loading census\.sync_log_records failed: .*(terminat|server closed the connection)"
        with pytest.raises(TargetError, match=failed):
            frame = Rows.of(sync_log_frame(spark, run.sync_run_id, kill("id")))
            target.replace_rows(SYNC_LOG, frame, sync_log_keys(run.sync_run_id))
        assert self.count(target) == before
        assert stage_tables(target) == []

    def test_a_retried_partition_is_staged_once(self, target: Target) -> None:
        assert isinstance(target, PostgresTarget)
        target.ensure([SYNC_LOG])
        target.client.execute("CREATE TABLE census.stage (LIKE census.sync_log_records)")
        target.client.execute("CREATE TABLE census.stage_parts (part integer PRIMARY KEY)")
        started = datetime(2026, 3, 1, 8, tzinfo=UTC)
        rows = pa.Table.from_pylist(
            [{"log_id": f"l{i}", "batch_started_at": started} for i in range(4)],
            schema=SYNC_LOG.arrow_schema(),
        )
        columns = ", ".join(f'"{c}"' for c in SYNC_LOG.column_names())
        time_index = SYNC_LOG.column_names().index("batch_started_at")
        types = tuple(c.type for c in SYNC_LOG.columns)
        schema = SYNC_LOG.arrow_schema()
        writer = CopyStageWriter(
            target.params, "census.stage", "census.stage_parts", columns, schema, types, time_index
        )
        reports = []
        for _ in range(2):  # the same partition twice: a retried task
            stage = writer.open(7)
            for batch in rows.to_batches():
                stage.write(batch)
            reports.append(stage.close())
        assert day_totals(reports[0]) == day_totals(reports[1]) == {started.date(): 4}
        assert target.client.fetch("SELECT count(*) FROM census.stage") == [(4,)]

    def test_binary_copy_round_trips_every_type(self, target: Target) -> None:
        assert isinstance(target, PostgresTarget)
        target.client.execute(
            "CREATE TABLE t (a bigint, b integer, s text, j jsonb, t timestamptz, f boolean)"
        )
        new_york = pa.timestamp("us", tz="America/New_York")
        rows = pa.table(
            {
                "a": pa.array([1, None, -(2**63), 2**63 - 1], pa.int64()),
                "b": pa.array([1, -5, None, 2**31 - 1], pa.int32()),
                "s": ["x", "", None, 'ünï\ttab\n"q"\\'],
                "j": ['{"a": [1, 2.5, "é"]}', None, '"s"', '{"n": null}'],
                "t": pa.array([PG_EPOCH, BEFORE_1970, None, LATER], new_york),
                "f": [True, False, None, True],
            }
        )
        types = [ColumnType.BIGINT, ColumnType.INTEGER, ColumnType.STRING, ColumnType.JSON]
        types += [ColumnType.TIMESTAMP, ColumnType.BOOLEAN]
        target.client.execute("CREATE TABLE t_parts (part integer PRIMARY KEY)")
        schema = pa.schema(
            [f.with_type(pa.timestamp("us", tz="UTC")) if f.name == "t" else f for f in rows.schema]
        )
        stage = CopyStageWriter(
            target.params, "t", "t_parts", "a, b, s, j, t, f", schema, tuple(types), None
        ).open(0)
        for batch in rows.to_batches(max_chunksize=3):
            stage.write(batch)
        assert day_totals(stage.close()) == {None: 4}
        got = target.client.fetch("SELECT a, b, s, j::text, t, f FROM t")
        assert got == [
            (1, 1, "x", '{"a": [1, 2.5, "é"]}', PG_EPOCH, True),
            (None, -5, "", None, BEFORE_1970, False),
            (-(2**63), None, None, '"s"', None, None),
            (2**63 - 1, 2**31 - 1, 'ünï\ttab\n"q"\\', '{"n": null}', LATER, True),
        ]

    # -- retention -----------------------------------------------------------------------------

    def test_cleanup_drops_whole_days_and_deletes_no_row(self, target: Target, spark: SparkSession) -> None:
        """7 days at noon on March 10 keep March 3 whole: whole partitions go, no row is deleted."""
        now = datetime(2026, 3, 10, 12, tzinfo=UTC)
        log = self.log(target, spark)
        for run_id, started in (
            (1, datetime(2026, 3, 1, 8, tzinfo=UTC)),
            (2, datetime(2026, 3, 2, 23, 59, tzinfo=UTC)),
            (3, datetime(2026, 3, 3, 10, 0, tzinfo=UTC)),  # older than 7 days by 2 hours, but its day is not
            (4, datetime(2026, 3, 9, 8, tzinfo=UTC)),
        ):
            run = make_run(sync_run_id=run_id)
            log.write(run, make_records(spark, record_rows(run, count=10, batches=1, started_at=started)))
        deletes_before = self.deletes(target)
        # Analyzed, the days' rows are counted from the catalogue (reltuples), not scanned.
        target.client.execute(f"ANALYZE {target.relation(target.table_spec(SYNC_LOG)).render()}")
        assert log.cleanup(now).total == 20
        assert partition_days(target) == ["20260303", "20260309"]
        assert self.count(target) == 20
        assert self.deletes(target) == deletes_before, "no row was deleted one by one"

    def deletes(self, target: Target) -> int:
        """Rows DELETE statements have removed from census.sync_log_records's partitions so far."""
        target.query("SELECT pg_stat_force_next_flush()")  # this session's counts, once it idles
        rows = target.query(
            "SELECT COALESCE(SUM(n_tup_del), 0) AS n FROM pg_stat_user_tables "
            "WHERE relname LIKE 'sync\\_log\\_records%'"
        )
        return int(rows.column(0)[0].as_py())

    def test_cleanup_keeps_days_a_longer_retention_needs(self, target: Target, spark: SparkSession) -> None:
        now = datetime(2026, 3, 10, 12, tzinfo=UTC)
        log = self.log(target, spark, Config(syncs={99: SyncSettings(retention_days=30)}))
        for sync_id, run_id in ((1234, 1), (99, 2)):
            run = make_run(sync_id=sync_id, sync_run_id=run_id)
            started = datetime(2026, 3, 1, 8, tzinfo=UTC)
            log.write(run, make_records(spark, record_rows(run, count=10, started_at=started)))
        assert log.cleanup(now).total == 10
        assert partition_days(target) == ["20260301"]
        assert self.count(target, "sync_id = 99") == 10

    # -- connection ----------------------------------------------------------------------------

    def test_password_comes_from_the_environment_and_is_never_shown(
        self, target_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("SYNCLOG_TEST_PG_PASSWORD", "s3cret-from-env")
        url = TargetURL.parse(target_url, password_env="SYNCLOG_TEST_PG_PASSWORD")
        assert conninfo(url)["password"] == "s3cret-from-env"
        assert "s3cret" not in str(url) + repr(url)
        monkeypatch.setenv("PGPASSWORD", "s3cret-pgpassword")
        assert conninfo(TargetURL.parse(target_url))["password"] == "s3cret-pgpassword"
        nobody_listens = TargetURL.parse("postgres://synclog:s3cret-in-url@127.0.0.1:1/synclog")
        with pytest.raises(TargetError) as failed:
            registry().open(nobody_listens)
        assert "s3cret" not in str(failed.value)
        assert "\n" not in str(failed.value)

    def test_a_server_that_never_answers_times_out(self) -> None:
        assert conninfo(TargetURL.parse("postgresql://u@h/db"))["connect_timeout"] == CONNECT_TIMEOUT_S
        with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, then says nothing
            port = silent.getsockname()[1]
            started = time.monotonic()
            with pytest.raises(TargetError, match="cannot connect"):
                registry().open(TargetURL.parse(f"postgresql://u@127.0.0.1:{port}/db?connect_timeout=1"))
            assert time.monotonic() - started < 10

    # -- the demo's runs under a payload policy, and Sync Tracking over them --------------------

    def test_masked_demo_runs_hold_no_raw_email_and_sync_tracking_answers(
        self,
        target_url: str,
        spark: SparkSession,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """The whole masked demo runs through `synclog demo` on DuckDB (tests/test_privacy.py);
        here the demo's last runs of sync 1234 under the same policy."""
        monkeypatch.setenv(MASK_KEY_ENV, MASK_KEY)
        config = masked_demo_runs(tmp_path, target_url, str(tmp_path / "storage"), spark)
        with registry().open(TargetURL.parse(target_url)) as target:
            check_masked(self.logged_text(target))
        for layout in ("census", "hightouch"):
            check_tracking_cli(config, target_url, layout, tmp_path, capsys)

    # -- seed 002 (the hightouch layout) -------------------------------------------------------

    # -- reading a sync back (the hightouch diff) ----------------------------------------------

    def test_read_rows_streams_the_export_in_chunks(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(type(target.client), "chunk_rows", 3)
        check_read_back(target, spark, read_back_rows(), row_groups=[3, 3, 2])

    def test_read_rows_of_a_sync_without_rows_is_an_empty_file_with_the_schema(
        self, target: Target, spark: SparkSession
    ) -> None:
        check_empty_read_back(target, spark)

    # -- staging tables a killed driver left behind --------------------------------------------

    def test_ensure_drops_only_stages_whose_session_is_gone(self, target: Target) -> None:
        assert isinstance(target, PostgresTarget)
        target.ensure([SYNC_LOG])
        alive, orphaned, lingering = (f"_synclog_stage_{uuid.uuid4().hex[:16]}" for _ in range(3))
        lookalikes = [
            ("census", "_synclog_stage_notes"),  # the prefix, but not a stage name
            ("census", "_synclog_stage_0123456789abcdef_copy"),
            ("census", "x_synclog_stage_0123456789abcdef"),
            ("census", "_synclog_stage_0123456789ABCDEF"),
            ("census", "xsynclogxstagex0123456789abcdef"),  # what an unescaped LIKE would match
            ("public", "_synclog_stage_0123456789abcdef"),  # a schema this target does not manage
        ]
        for schema, name in lookalikes:
            target.client.execute(
                f"CREATE TABLE {Relation(schema, name, casefold=Casefold.NONE).render()} (x int)"
            )
        driver = start_load(target, alive)
        end_session(target, start_load(target, orphaned))
        end_session(target, start_load(target, lingering))
        executor = psycopg.connect(**target.params)  # a killed driver's executor, mid-COPY
        executor.execute(f"INSERT INTO {Relation('census', lingering).render()} VALUES (1)")
        target.ensure([SYNC_LOG])
        assert census_stages(target) == sorted([alive, f"{alive}_parts", lingering, f"{lingering}_parts"])
        end_session(target, executor)
        end_session(target, driver)
        target.ensure([SYNC_LOG])
        assert census_stages(target) == []
        left = target.client.fetch(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE %s",
            ["%synclog%stage%"],
        )
        assert sorted(left) == sorted(lookalikes)

    def test_a_sweep_while_a_load_runs_leaves_its_stage_alone(
        self, target: Target, spark: SparkSession
    ) -> None:
        assert isinstance(target, PostgresTarget)
        target.ensure([SYNC_LOG])
        target.client.execute("CREATE TABLE public.seen (stages int, unlocked int, dropped int)")
        params = target.params

        def sweep_at_100(i: int) -> int:
            """On an executor, at row 100: what a concurrent run's ensure() would find and sweep."""
            if i == 100:
                with psycopg.connect(**params, autocommit=True) as conn:
                    stages = orphans.find(conn, ["census"])
                    unlocked = sum(orphans.try_lock(conn, stage) for stage in stages)
                    conn.execute("SELECT pg_advisory_unlock_all()")
                    dropped = orphans.sweep(conn, ["census"])
                    conn.execute(
                        "INSERT INTO public.seen VALUES (%s, %s, %s)", [len(stages), unlocked, len(dropped)]
                    )
            return i % 2

        sweep = F.udf(sweep_at_100, "int", useArrow=False)
        assert (
            target.replace_rows(SYNC_LOG, Rows.of(sync_log_frame(spark, 7, sweep("id"))), sync_log_keys(7))
            == 400
        )
        assert target.client.fetch("SELECT * FROM public.seen") == [(1, 0, 0)]
        assert stage_tables(target) == []
        held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid::bigint = %s"
        assert target.client.fetch(held, [orphans.LOCK_CLASS]) == [(0,)]


def start_load(target: PostgresTarget, name: str) -> psycopg.Connection[Any]:
    """Another session that holds `name`'s stage lock and its two tables, as a load does."""
    conn = psycopg.connect(**target.params, autocommit=True)
    stage = Relation("census", name)
    conn.execute(orphans.lock_sql("pg_advisory_lock"), orphans.stage_key(stage))
    conn.execute(f"CREATE UNLOGGED TABLE {stage.render()} (x int)")
    conn.execute(f"CREATE UNLOGGED TABLE {stage.with_name(name + '_parts').render()} (part int)")
    return conn


def end_session(target: PostgresTarget, conn: psycopg.Connection[Any]) -> None:
    """Close `conn` and wait until its server process (and with it its locks) is gone."""
    pid = conn.info.backend_pid
    conn.close()
    deadline = time.monotonic() + 10
    while target.client.fetch("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]) != [(0,)]:
        assert time.monotonic() < deadline, f"backend {pid} did not exit"
        time.sleep(0.02)


def census_stages(target: PostgresTarget) -> list[str]:
    """The stage tables (and ledgers) in census, by name."""
    rows = target.client.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'census' AND tablename ~ %s",
        [STAGE_PATTERN.pattern],
    )
    return sorted(name for (name,) in rows)


def test_a_database_of_the_previous_release_keeps_working(
    postgres: PostgresServer, tmp_path: Path, spark: SparkSession
) -> None:
    """Opened by this release: each replace-key index is made again on the key with sync_id, sync
    303's run 1 leaves sync 101's run 1 alone, and sync 202's next run diffs against its old snapshot."""
    name = f"previous_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = f"postgresql://{postgres.user}@{postgres.host}:{postgres.port}/{name}"
    dump = (DATA / "previous-postgres.sql").read_text(encoding="utf-8")
    with psycopg.connect(**conninfo(TargetURL.parse(url)), autocommit=True) as conn:
        conn.execute(dump.encode())

    def index(table: str) -> list[str]:
        rows = target.query(
            "SELECT a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(n, position) ON true "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n "
            "WHERE c.relname = %s ORDER BY k.position",
            [f"{table}_replace_key"],
        )
        return rows.column(0).to_pylist()

    target = registry().open(TargetURL.parse(url))
    try:
        assert index("sync_log_records") == ["sync_run_id", "batch_number"]  # as the dump has it
        write_after_upgrade(url, tmp_path / "storage", spark)
        check_upgrade(target)
        assert index("sync_log_records") == ["sync_id", "sync_run_id", "batch_number"]
        assert index("sync_changelog") == ["sync_id", "sync_run_id"]
        assert index("sync_runs") == ["sync_id", "sync_run_id"]
    finally:
        target.close()
