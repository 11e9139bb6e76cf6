"""The dbt package (dbt/): `dbt build` on DuckDB, PostgreSQL and fakesnow (Snowflake) over tables
synclog wrote, each mart equal to the answer computed directly (synclog.tracking, the seeds'
queries); every model compiles for BigQuery, Redshift and Spark too, and parses in their dialect."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
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
from harness.dbt_package import PACKAGE, DbtPackage
from harness.errors import ServerUnavailable
from harness.fakesnow_server import fakesnow_server
from harness.postgres_server import PostgresServer
from pyspark.sql import SparkSession

from synclog.cli.demo import demo_config
from synclog.config import Config
from synclog.demo import report
from synclog.demo.simulator import history, records
from synclog.layouts.hightouch import RUNS as SYNC_RUNS
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target
from synclog.testing.seed_queries import SEED_002_ENTER_EXIT
from synclog.urls import TargetURL
from synclog.writer import SyncLog

SCALE = 0.001
"""200 people per sync."""
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
"""The adapters without a `dbt build` here, by the sqlglot dialect their compiled SQL must parse in."""


@dataclass(frozen=True)
class Built:
    """A warehouse holding synclog's tables and the package's models built over them."""

    logged: Logged
    marts: dict[str, list[dict[str, Any]]]
    target: Target


def write_history(url: str, spark: SparkSession, storage: Path) -> None:
    """The first RUNS runs of SYNCS, every layout the target holds, as `synclog demo` writes them."""
    simulated = history(datetime(2026, 11, 20, tzinfo=UTC), SCALE)
    runs = [sim for sim in simulated if sim.index < RUNS and sim.run.sync_id in SYNCS]
    config = Config(storage=Location.parse(str(storage)))
    with SyncLog.open(url, config, spark=spark) as log:
        log.config = demo_config(log.config, log.connector.capabilities.layouts)
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
    """Where synclog writes (`url`), how dbt reaches it (`output`) and where the marts land."""

    url: str
    output: dict[str, Any]
    marts: str
    """The marts' schema as a SQL prefix."""
    build: tuple[str, ...] = ()
    """What `dbt build` leaves out there."""


def warehouse(name: str, request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    """A warehouse of the `built` fixture; skips where its stand-in is missing."""
    if name == "duckdb":
        path = folder / "logs.duckdb"
        return Warehouse(f"duckdb:///{path}", {"type": "duckdb", "path": str(path), "schema": SCHEMA}, SCHEMA)
    if name == "postgres":
        pg: PostgresServer = request.getfixturevalue("postgres")
        output = {"type": "postgres", "host": pg.host, "port": pg.port, "user": pg.user, "password": ""}
        return Warehouse(pg.url, output | {"dbname": pg.database, "schema": SCHEMA}, SCHEMA)
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
    return Warehouse(url, output, f"ANALYTICS.{SCHEMA}", ("--exclude-resource-type", "unit_test"))


@pytest.fixture(scope="module", params=["duckdb", "postgres", "snowflake"])
def built(
    request: pytest.FixtureRequest,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Built]:
    """synclog's tables written on the warehouse, then `dbt build` of the package over them."""
    folder = tmp_path_factory.mktemp(request.param)
    with ExitStack() as stack:
        place = warehouse(request.param, request, folder, stack)
        runner = dbt_package(folder / "dbt", {request.param: place.output})
        write_history(place.url, spark, folder / "storage")
        if request.param == "snowflake":
            with registry().open(TargetURL.parse(place.url)) as writer:
                writer.query("CREATE DATABASE IF NOT EXISTS ANALYTICS")
        runner.run(request.param, "build", *place.build, variables=VARS).check()  # DuckDB: file closed
        target = stack.enter_context(registry().open(TargetURL.parse(place.url)))
        marts = {name: rows_of(target.query(f"SELECT * FROM {place.marts}.synclog_{name}")) for name in MARTS}
        yield Built(Logged.read(target, LAYOUTS), marts, target)


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    """Rows keyed by lower-case column names (Snowflake answers in upper case)."""
    return table.rename_columns([c.lower() for c in table.column_names]).to_pylist()


def test_rejections_per_sync_day_and_reason(built: Built) -> None:
    rows = built.marts["rejections"]
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
        for r in built.marts["record_last_synced"]
    }
    want = last_synced(built.logged)
    assert got == want
    assert any(status == "rejected" for _run, status, _ok in want.values())
    assert any(ok is not None and ok != run for run, _status, ok in want.values()), "an older success"


def test_segment_membership(built: Built) -> None:
    rows = built.marts["segment_membership"]
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
        entered = {s["change"]: s["people"] for s in seed}.get("entered", 0)
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
    rows = built.marts["run_health"]
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
        assert r["invalid_null"] > 0 and r["invalid_duplicate"] > 0


def test_volume_anomalies(built: Built) -> None:
    want = anomalies(built.logged, 2, 1, 0.2, 0.02)
    rows = built.marts["volume_anomalies"]
    assert len(rows) == len(want)
    for r in rows:
        records, rate, flag_records, flag_rate = want[(r["layout"], r["sync_id"], r["sync_run_id"])]
        assert r["median_records"] == pytest.approx(records)
        assert r["median_rejection_rate"] == pytest.approx(rate)
        assert (r["records_anomaly"], r["rejection_rate_anomaly"]) == (flag_records, flag_rate)
    assert any(r["records_anomaly"] for r in rows) and not all(r["records_anomaly"] for r in rows)


def test_field_changes(built: Built) -> None:
    rows = built.marts["field_changes"]
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
    for sql in compiled.values():
        sqlglot.parse_one(sql, read=COMPILED_ONLY[adapter])  # raises on SQL the dialect cannot read
    source = {
        "bigquery": "`nowhere`.`census`.`sync_log`",  # the profile's project
        "redshift": '"analytics"."census"."sync_log"',  # the profile's database
        "spark": "census.sync_log",
    }
    assert source[adapter] in compiled["stg_synclog__census_records"], compiled["stg_synclog__census_records"]
