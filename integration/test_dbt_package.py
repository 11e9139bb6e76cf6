"""The dbt package (dbt/): `dbt build` on DuckDB, PostgreSQL and fakesnow (Snowflake) over tables
synclog wrote, each mart equal to the answer computed directly (synclog.tracking, the seeds'
queries); every model compiles for BigQuery, Redshift and Spark too, and parses in their dialect.
Marked dbt_all (minutes; `make test` leaves them out): `dbt build` through the Redshift wire proxy
and in dbt-spark's session, and BigQuery's, skipped with what its build on local-bigquery hit."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from dbt_answers import (
    Logged,
    anomalies,
    canonical,
    field_changes,
    last_synced,
    rejection_rate,
    rejections,
    run_health,
    stays,
    value,
)
from harness.dbt_package import PACKAGE, DbtPackage, dbt_executable
from harness.errors import ServerUnavailable
from harness.fakesnow_server import fakesnow_server
from harness.postgres_server import PostgresServer
from harness.redshift_proxy import redshift_stand_in
from harness.s3_server import S3Server
from psycopg import sql
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.demo import report
from synclog.demo.simulator import history, records
from synclog.layouts.hightouch import RUNS as SYNC_RUNS
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.seed_queries import SEED_002_ENTER_EXIT

SCALE = 0.0003
"""60 people per sync."""
SYNCS = (1234, 4567)
"""A mirror sync (census deletes) and a whole-model one (hightouch removals, splits)."""
RUNS = 3
"""The first runs of each: 6 runs per warehouse."""
LAYOUTS = ("census", "hightouch")
SCHEMA = "marts"
"""Where dbt builds the package's models."""
VARS = {
    "synclog_anomaly_runs": 2,
    "synclog_anomaly_min_runs": 1,
    "synclog_anomaly_volume_threshold": 0.2,
    "synclog_anomaly_rejection_rate_threshold": 0.02,
}
MARTS = (
    "rejections",
    "record_last_synced",
    "segment_membership",
    "run_health",
    "volume_anomalies",
    "field_changes",
)
COMPILED_ONLY = {"bigquery": "bigquery", "redshift": "redshift", "spark": "spark"}
"""The adapters `make test` only compiles for, by the sqlglot dialect their SQL must parse in."""


@dataclass(frozen=True)
class Built:
    """A warehouse holding synclog's tables and the package's models built over them."""

    logged: Logged
    marts: dict[str, list[dict[str, Any]]]
    target: Target
    unbuilt: dict[str, str]
    """Marts `dbt build` left out on this warehouse, with why."""

    def mart(self, name: str) -> list[dict[str, Any]]:
        """The mart's rows; the test skips where the warehouse did not build it."""
        if name in self.unbuilt:
            pytest.skip(self.unbuilt[name])
        return self.marts[name]


def write_history(url: str, spark: SparkSession, storage: Location) -> None:
    """The first RUNS runs of SYNCS in the LAYOUTS the marts read, as `synclog demo` simulates them."""
    simulated = history(datetime(2026, 11, 20, tzinfo=UTC), SCALE)
    runs = [sim for sim in simulated if sim.index < RUNS and sim.run.sync_id in SYNCS]
    config = Config(storage=storage, defaults=SyncSettings(layouts=LAYOUTS))
    with SyncLog.open(url, config, spark=spark) as log:
        for sim in runs:
            log.write_run(sim.run, records(spark, sim, SCALE))


def dbt_package(folder: Path, outputs: dict[str, dict[str, Any]]) -> DbtPackage:
    """The package with a profile of `outputs`; the test skips where .venv-dbt is missing."""
    try:
        return DbtPackage.with_outputs(folder, {k: {**v, "threads": 1} for k, v in outputs.items()})
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> DbtPackage:
    """The package with a profile of every compile-only adapter, their credentials fake."""
    folder = tmp_path_factory.mktemp("dbt")
    executable = dbt_package(folder, {"none": {"type": "duckdb"}}).executable
    outputs = {
        "bigquery": {"type": "bigquery", "method": "service-account-json", "project": "nowhere"}
        | {"dataset": SCHEMA, "keyfile_json": _fake_service_account(executable)},
        "redshift": {"type": "redshift", "host": "127.0.0.1", "port": 1, "user": "nobody"}
        | {"password": "none", "dbname": "analytics", "schema": SCHEMA},
        "spark": {"type": "spark", "method": "session", "host": "NA", "schema": SCHEMA},
    }
    return dbt_package(folder, outputs)


def _fake_service_account(dbt: Path) -> dict[str, str]:
    """A service-account key dbt-bigquery accepts offline (a fresh RSA key, made by dbt's Python)."""
    pem = subprocess.run(
        [
            str(dbt.parent / "python"),
            "-c",
            "from cryptography.hazmat.primitives import serialization as s;"
            "from cryptography.hazmat.primitives.asymmetric import rsa;"
            "k = rsa.generate_private_key(public_exponent=65537, key_size=2048);"
            "print(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()).decode())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        "type": "service_account",
        "project_id": "nowhere",
        "private_key_id": "none",
        "private_key": pem,
        "client_email": "nobody@nowhere.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }


@dataclass(frozen=True)
class Warehouse:
    """Where synclog writes (`url`, staging files in `storage`), how dbt reaches it (`output`) and
    where the marts land."""

    url: str
    storage: Location
    output: dict[str, Any]
    marts: str
    """The marts' schema as a SQL prefix."""
    build: tuple[str, ...] = ()
    """What `dbt build` leaves out there."""
    unbuilt: tuple[str, str] | None = None
    """A mart left out there, and why."""
    publish: Callable[[], None] | None = None
    """What makes synclog's tables visible to dbt, after synclog wrote them."""
    read_mart: Callable[[Target, str], pa.Table] | None = None
    """A mart's rows where they are not in the target (default: the target's `marts` schema)."""


def duckdb(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    path = folder / "logs.duckdb"
    output = {"type": "duckdb", "path": str(path), "schema": SCHEMA}
    return Warehouse(f"duckdb:///{path}", local_storage(folder), output, SCHEMA)


def postgres(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    pg: PostgresServer = request.getfixturevalue("postgres")
    output = {"type": "postgres", "host": pg.host, "port": pg.port, "user": pg.user, "password": ""}
    return Warehouse(
        pg.url, local_storage(folder), output | {"dbname": pg.database, "schema": SCHEMA}, SCHEMA
    )


def snowflake(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    try:
        server = stack.enter_context(fakesnow_server())
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    url = f"snowflake://fake:snow@fakesnow/CENSUS?host={server.host}&port={server.port}&protocol=http"
    output = {"type": "snowflake", "account": "fakesnow", "user": "fake", "password": "snow"}
    output |= {"host": server.host, "port": server.port, "protocol": "http", "warehouse": "WH"}
    # fakesnow: a model in CENSUS reading CENSUS.CENSUS.SYNC_LOG is an ambiguous name to its
    # DuckDB binder (so is a schema named as its database), and a unit test's temporary table
    # may not have a three-part name.
    output |= {"database": "ANALYTICS", "schema": SCHEMA}
    with registry().open(TargetURL.parse(url)) as writer:
        writer.query("CREATE DATABASE IF NOT EXISTS ANALYTICS")
    return Warehouse(url, local_storage(folder), output, f"ANALYTICS.{SCHEMA}", NO_UNIT_TESTS)


def redshift(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    """The wire proxy in front of a database of its own on the run's PostgreSQL, S3 on moto."""
    pg: PostgresServer = request.getfixturevalue("postgres")
    s3: S3Server = request.getfixturevalue("s3")
    try:
        rs = stack.enter_context(redshift_stand_in(pg, s3))
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    database = f"dbt_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    s3.create_bucket(database.replace("_", "-"))
    storage = Location.parse(f"s3://{database.replace('_', '-')}/synclog", s3.storage_options())
    url = f"redshift://{rs.user}:unused@{rs.host}:{rs.port}/{database}?ssl=false"
    output = {"type": "redshift", "host": rs.host, "port": rs.port, "user": rs.user, "password": "unused"}
    output |= {"dbname": database, "schema": SCHEMA, "sslmode": "disable"}
    # dbt-redshift's unit tests read pg_get_late_binding_view_cols(), which only Redshift has
    build = (*NO_UNIT_TESTS, "--exclude", "int_synclog__payload_values+")
    return Warehouse(url, storage, output, SCHEMA, build, ("field_changes", REDSHIFT_UNPIVOT))


REDSHIFT_UNPIVOT = (
    "the Redshift proxy's translation drops PartiQL's `unpivot r.payload as j_value at j_key` from "
    "int_synclog__payload_values' FROM clause, so PostgreSQL gets `FROM appearances AS r, )`: "
    'syntax error at or near ")"'
)


def spark_session_warehouse(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    """dbt-spark's in-process session (`method: session`, Hive metastore and warehouse in `folder`).

    The session lives in dbt's process, so synclog cannot write into its catalog: synclog writes
    DuckDB, the sources' tables are copied to Parquet and declared there as Parquet tables (by
    .venv-dbt's pyspark, before `dbt build`), and the marts are read back from their Parquet files.
    """
    path = folder / "logs.duckdb"
    tables = folder / "sources"
    warehouse_dir = folder / "dbt" / "spark-warehouse"
    output = {"type": "spark", "method": "session", "host": "NA", "schema": SCHEMA}
    output["server_side_parameters"] = {"spark.sql.warehouse.dir": str(warehouse_dir)}

    def publish() -> None:
        statements = []
        with registry().open(TargetURL.parse(f"duckdb:///{path}")) as target:
            for table in SPARK_SOURCES:
                files = tables / table
                files.mkdir(parents=True)
                pq.write_table(target.query(f"SELECT * FROM {table}"), files / "part-0.parquet")
                statements += [
                    f"CREATE DATABASE IF NOT EXISTS {table.split('.')[0]}",
                    f"CREATE TABLE {table} USING parquet LOCATION '{files}'",
                ]
        declare = (
            "import json, sys; from pyspark.sql import SparkSession;"
            "s = SparkSession.builder.enableHiveSupport()"
            ".config('spark.sql.warehouse.dir', sys.argv[1]).getOrCreate();"
            "[s.sql(q) for q in json.loads(sys.argv[2])]; s.stop()"
        )
        python = dbt_executable().parent / "python"
        subprocess.run(
            [str(python), "-c", declare, str(warehouse_dir), json.dumps(statements)],
            cwd=folder / "dbt",  # where dbt's session finds the metastore (metastore_db)
            check=True,
            capture_output=True,
        )

    def read_mart(target: Target, name: str) -> pa.Table:
        table = pq.read_table(warehouse_dir / f"{SCHEMA}.db" / f"synclog_{name}")
        utc = pa.timestamp("us", "UTC")  # Spark's Parquet timestamps are UTC, read back without a zone
        return table.cast(
            pa.schema(f.with_type(utc) if pa.types.is_timestamp(f.type) else f for f in table.schema)
        )

    return Warehouse(f"duckdb:///{path}", local_storage(folder), output, SCHEMA, (), None, publish, read_mart)


BIGQUERY_CTAS = (
    "dbt build on local-bigquery (dbt-bigquery, method oauth-secrets, api_endpoint) built the 7 views, but "
    "local-bigquery answers a CREATE TABLE AS SELECT job without a destination table, so each table model "
    "and unit test fails in dbt-bigquery's client.get_table(query_job.destination): "
    "'NoneType' object has no attribute 'path'"
)
SPARK_SOURCES = ("census.sync_log", "hightouch_audit.sync_changelog", "hightouch_audit.sync_runs")
"""The tables the package's sources read."""


def local_storage(folder: Path) -> Location:
    """synclog's staging files in the test's folder."""
    return Location.parse(str(folder / "storage"))


NO_UNIT_TESTS = ("--exclude-resource-type", "unit_test")
WAREHOUSES = {
    "duckdb": duckdb,
    "postgres": postgres,
    "snowflake": snowflake,
    "redshift": redshift,
    "spark": spark_session_warehouse,
}


@pytest.fixture(
    scope="module",
    params=[
        "duckdb",
        "postgres",
        "snowflake",
        pytest.param("redshift", marks=pytest.mark.dbt_all),
        pytest.param("spark", marks=pytest.mark.dbt_all),
        pytest.param("bigquery", marks=[pytest.mark.dbt_all, pytest.mark.skip(reason=BIGQUERY_CTAS)]),
    ],
)
def built(
    request: pytest.FixtureRequest,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Built]:
    """synclog's tables written on the warehouse, then `dbt build` of the package over them."""
    folder = tmp_path_factory.mktemp(request.param)
    with ExitStack() as stack:
        place = WAREHOUSES[request.param](request, folder, stack)
        runner = dbt_package(folder / "dbt", {request.param: place.output})
        write_history(place.url, spark, place.storage)
        if place.publish:
            place.publish()
        runner.run(request.param, "build", *place.build, variables=VARS).check()  # DuckDB: file closed
        settings = TargetSettings(storage=place.storage)
        target = stack.enter_context(registry().open(TargetURL.parse(place.url), settings))
        unbuilt = dict([place.unbuilt] if place.unbuilt else [])
        read = place.read_mart or (
            lambda target, name: target.query(f"SELECT * FROM {place.marts}.synclog_{name}")
        )
        marts = {name: rows_of(read(target, name)) for name in MARTS if name not in unbuilt}
        yield Built(Logged.read(target, LAYOUTS), marts, target, unbuilt)


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    """Rows keyed by lower-case column names (Snowflake answers in upper case)."""
    return table.rename_columns([c.lower() for c in table.column_names]).to_pylist()


def test_rejections_per_sync_day_and_reason(built: Built) -> None:
    rows = built.mart("rejections")
    got = Counter(
        {(r["layout"], r["sync_id"], r["rejected_on"], r["status_message"]): r["records"] for r in rows}
    )
    assert got == rejections(built.logged)
    assert {r["layout"] for r in rows} == set(LAYOUTS)
    for r in rows:
        assert r["error_code"] == r["status_message"].split(":")[0].strip()
    assert "INVALID_USER_IDENTIFIER" in {r["error_code"] for r in rows}
    # seed 000's most common reasons, summed from the mart
    census = Counter()
    for r in rows:
        if r["layout"] == "census":
            census[r["status_message"]] += r["records"]
    top = rows_of(report.rejection_reasons(built.target))
    assert [(t["status_message"], t["records"]) for t in top] == [
        (message, census[message]) for message in [t["status_message"] for t in top]
    ]
    assert top[0]["records"] == max(census.values())


def test_record_last_synced(built: Built) -> None:
    got = {
        (r["layout"], r["sync_id"], r["record_identifier"]): (
            r["last_attempt_run_id"],
            r["last_attempt_status"],
            r["last_succeeded_run_id"],
        )
        for r in built.mart("record_last_synced")
    }
    want = last_synced(built.logged)
    assert got == want
    assert any(status == "rejected" for _run, status, _ok in want.values())
    assert any(ok is not None and ok != run for run, _status, ok in want.values()), "an older success"


def test_segment_membership(built: Built) -> None:
    rows = built.mart("segment_membership")
    got = {
        (r["layout"], r["sync_id"], r["record_identifier"], r["entered_run_id"], r["left_run_id"])
        for r in rows
    }
    want = stays(built.logged)
    assert got == want
    assert len(got) == len(rows)
    assert any(left is not None for *_k, left in want), "some records left"
    for r in rows:  # (fakesnow's server answers a NULL timestamp as 1970-01-01: compare run ids)
        assert (r["left_run_id"] is None) == r["is_current"]
        assert r["left_run_id"] is None or r["valid_to"] > r["valid_from"]
    # seed 000: who entered sync 1234's segment in each run
    for run in sorted({r["entered_run_id"] for r in rows if (r["layout"], r["sync_id"]) == ("census", 1234)}):
        seed = rows_of(report.segment_changes(built.target, 1234, run))
        entered = {s["movement"]: s["people"] for s in seed}.get("entered", 0)
        assert entered == sum(1 for r in rows if r["layout"] == "census" and r["entered_run_id"] == run)
    # seed 002: who was added to each hightouch model
    runs = built.target.relation(SYNC_RUNS).render()
    models = {r["sync_id"]: r["model_name"] for r in rows_of(built.target.query(f"SELECT * FROM {runs}"))}
    added = rows_of(built.target.query(SEED_002_ENTER_EXIT))
    want_added = {(a["user_id"], a["audience"]) for a in added if a["type"] == "added" and a["user_id"]}
    assert {(r["record_identifier"], models[r["sync_id"]]) for r in rows if r["layout"] == "hightouch"} == (
        want_added
    )


def test_run_health(built: Built) -> None:
    want = run_health(built.logged)
    rows = built.mart("run_health")
    assert len(rows) == len(want) == RUNS * len(SYNCS) * len(LAYOUTS)
    for r in rows:
        run = want[(r["layout"], r["sync_id"], r["sync_run_id"])]
        assert (r["planned"], r["succeeded"], r["rejected"], r["aborted"]) == (
            run["records"],
            run["succeeded"],
            run["rejected"],
            run["aborted"],
        )
        assert r["invalid_null"] + r["invalid_duplicate"] == run["invalid"]
        assert r["attempted"] == run["records"] - run["aborted"]
        assert (r["started_at"], r["finished_at"], r["run_status"]) == (
            run["started_at"],
            run["finished_at"],
            run["status"],
        )
        assert r["duration_seconds"] == int((run["finished_at"] - run["started_at"]).total_seconds())
        assert r["rejection_rate"] == pytest.approx(rejection_rate(run))
    # Both kinds of invalid records are in the history (the hightouch changelog leaves out a
    # duplicate sent exactly as before and succeeding again: a repeat, no operation).
    assert all(any(r[kind] for r in rows) for kind in ("invalid_null", "invalid_duplicate"))


def test_volume_anomalies(built: Built) -> None:
    want = anomalies(built.logged, 2, 1, 0.2, 0.02)
    rows = built.mart("volume_anomalies")
    assert len(rows) == len(want)
    for r in rows:
        records, rate, flag_records, flag_rate = want[(r["layout"], r["sync_id"], r["sync_run_id"])]
        assert r["median_records"] == pytest.approx(records)
        assert r["median_rejection_rate"] == pytest.approx(rate)
        assert (r["records_anomaly"], r["rejection_rate_anomaly"]) == (flag_records, flag_rate)
    assert any(r["records_anomaly"] for r in rows) and not all(r["records_anomaly"] for r in rows)


def test_field_changes(built: Built) -> None:
    rows = built.mart("field_changes")
    got = {
        (
            r["layout"],
            r["sync_id"],
            r["record_identifier"],
            r["field_name"],
            r["previous_run_id"],
            r["sync_run_id"],
            canonical(value(r["old_value"])),
            canonical(value(r["new_value"])),
        )
        for r in rows
    }
    want = field_changes(built.logged)
    assert got == want
    assert len(rows) == len(got)
    assert {f for *_k, f, _p, _r, _o, _n in want} >= {"plan", "lifetime_value", "model_version"}


@pytest.mark.parametrize("adapter", sorted(COMPILED_ONLY))
def test_every_model_compiles_for(adapter: str, package: DbtPackage) -> None:
    """`dbt compile` with no connection (fake credentials, no cache, no introspection)."""
    package.run(adapter, "compile", "--no-populate-cache", "--no-introspect").check()
    compiled = package.compiled(adapter)
    assert set(compiled) >= {p.stem for p in (PACKAGE / "models").rglob("*.sql")}
    for text in compiled.values():
        sqlglot.parse_one(text, read=COMPILED_ONLY[adapter])  # raises on SQL the dialect cannot read
    source = {
        "bigquery": "`nowhere`.`census`.`sync_log`",  # the profile's project
        "redshift": '"analytics"."census"."sync_log"',  # the profile's database
        "spark": "census.sync_log",
    }
    assert source[adapter] in compiled["stg_synclog__census_records"], compiled["stg_synclog__census_records"]
