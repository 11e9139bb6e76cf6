"""Injected faults, counted: `python bench/faults.py` rewrites bench/FAULTS.md.

For each target (DuckDB, PostgreSQL, the lake on moto S3, and the cloud warehouses on their
stand-ins: Snowflake, Redshift, BigQuery, the Databricks SQL warehouse, and Databricks in the
cluster, through a Spark Connect server, with writers of its own) it runs N trials of
`integration/harness/faults.py`: a writer process (Spark and all) is killed with SIGKILL at a
named point of the write path or at a random time, or its connection to the target is cut
mid-write, or the target is unreachable for the whole write; then another writer flushes and,
after a kill, writes the run again, and the target, its staging and the storage folder are
checked against a write without a fault.

    python bench/faults.py                          # N = 100 per target (30 on the lake and clouds)
    python bench/faults.py --trials 10 --lake-trials 5 --until 18:05
    python bench/faults.py --targets snowflake,bigquery --cloud-trials 4 --concurrent ''

`--until HH:MM` (UTC) stops starting trials at that time and reports the N actually run.
Every trial is written to bench/FAULTS.jsonl as it ends; FAULTS.md is rewritten after each target
(`--report PATH`: that file instead, its trials in PATH with the suffix .jsonl). `--add` keeps
the report's earlier runs and adds this one below them (a run of some targets beside an earlier
run of the others).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

from harness.cloud_faults import (  # noqa: E402
    BigQueryScenario,
    DatabricksClusterScenario,
    DatabricksWarehouseScenario,
    RedshiftScenario,
    SnowflakeScenario,
)
from harness.concurrency import SYNCS, ConcurrencyResult, run_concurrently  # noqa: E402
from harness.faults import (  # noqa: E402
    KILLS,
    Driver,
    DuckDBScenario,
    LakeScenario,
    Outcome,
    PostgresScenario,
    Scenario,
    Workers,
    outcome_row,
)
from harness.postgres_server import postgres_server  # noqa: E402
from harness.s3_server import s3_server  # noqa: E402

REPORT = HERE / "FAULTS.md"
CLOUDS = ("snowflake", "redshift", "bigquery", "databricks", "databricks-cluster")
"""Targets on the stand-ins of cloud warehouses (`harness.cloud_faults`)."""
TARGETS = ("duckdb", "postgres", "lake", *CLOUDS)


def deadline(text: str | None) -> float | None:
    if not text:
        return None
    hour, minute = (int(x) for x in text.split(":"))
    now = datetime.now(UTC)
    return now.replace(hour=hour, minute=minute, second=0).timestamp()


def run_target(
    scenario: Scenario,
    workers: Workers,
    trials: int,
    until: float | None,
    seed: int,
    log: Callable,
    only: tuple[str, ...] = (),
) -> list[Outcome]:
    """`trials` trials, each of the scenario's faults in turn (of those in `only`, if given)."""
    faults = [f for f in scenario.faults if not only or f in only]
    driver = Driver(scenario, workers, seed=seed)
    driver.prepare()
    outcomes: list[Outcome] = []
    for number in range(trials):
        if (until is not None and time.time() > until) or not faults:
            break
        fault = faults[number % len(faults)]
        outcome = driver.trial(fault)
        outcomes.append(outcome)
        log(outcome)
        print(
            f"{scenario.name} {number + 1}/{trials} {fault} {outcome.where}: writer {outcome.writer}; "
            f"recovery {outcome.recovery}; lost {outcome.lost}, duplicated {outcome.duplicated}, "
            f"leftovers {len(outcome.leftovers)}, storage files {len(outcome.storage_files)} "
            f"({outcome.seconds:.0f}s: {', '.join(f'{k} {v:.0f}' for k, v in outcome.phases.items())})",
            flush=True,
        )
    scenario.close()
    return outcomes


def table(results: dict[str, list[Outcome]]) -> str:
    lines = [
        "| target | fault | injected | struck mid-write | lost rows | duplicated rows | "
        "staging left | storage files left | trials failing a check |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for target, outcomes in results.items():
        by_fault: dict[str, list[Outcome]] = {}
        for outcome in outcomes:
            by_fault.setdefault(outcome.fault, []).append(outcome)
        for fault, group in [*by_fault.items(), ("**all**", outcomes)]:
            lines.append(
                f"| {target} | {fault} | {len(group)} | {sum(o.landed for o in group)} | "
                f"{sum(o.lost for o in group)} | {sum(o.duplicated for o in group)} | "
                f"{sum(len(o.leftovers) for o in group)} | {sum(len(o.storage_files) for o in group)} | "
                f"{sum(not o.ok for o in group)} |"
            )
    return "\n".join(lines)


def points(results: dict[str, list[Outcome]]) -> str:
    lines = ["| target | where the kills struck (point #occurrence: trials) |", "|---|---|"]
    for target, outcomes in results.items():
        struck = Counter(
            f"{o.where.split(' #')[0]}{' (behind)' if o.fault.startswith('behind') else ''}"
            for o in outcomes
            if o.fault.endswith("@point") and o.landed
        )
        endings = Counter(o.writer.split(":")[0] for o in outcomes if not o.fault.startswith(KILLS))
        ended = f"; cut/outage writers ended: {', '.join(f'{e}: {n}' for e, n in sorted(endings.items()))}"
        lines.append(
            f"| {target} | {', '.join(f'{p}: {n}' for p, n in sorted(struck.items()))}"
            f"{ended if endings else ''} |"
        )
    return "\n".join(lines)


def costs(results: dict[str, list[Outcome]]) -> str:
    """Median seconds of a trial and of its phases, per target and fault."""
    phases = ("target", "fault", "recovery", "check")
    lines = [
        "| target | fault | median trial s | " + " | ".join(f"median {p} s" for p in phases) + " |",
        "|---|---|---:|" + "---:|" * len(phases),
    ]
    for target, outcomes in results.items():
        by_fault: dict[str, list[Outcome]] = {}
        for outcome in outcomes:
            by_fault.setdefault(outcome.fault, []).append(outcome)
        for fault, group in [*by_fault.items(), ("**all**", outcomes)] if outcomes else []:
            cells = [statistics.median(o.phases.get(p, 0.0) for o in group) for p in phases]
            lines.append(
                f"| {target} | {fault} | {statistics.median(o.seconds for o in group):.1f} | "
                + " | ".join(f"{c:.1f}" for c in cells)
                + " |"
            )
    return "\n".join(lines)


def concurrency(results: list[ConcurrencyResult]) -> str:
    if not results:
        return "The 8-writer run was not run this time."
    runs = ", ".join(f"{s}/{r}" for s, r in SYNCS)
    lines = [
        "## Eight writers at once, with cleanup meanwhile",
        "",
        f"Writers (sync/run): {runs}, all ready before any write is sent; a ninth process runs "
        "`cleanup` in a loop until they end. Before: an expired run (8900/89001, 30 days old, "
        "retention 7 days) and a recent one (8901/89011).",
        "",
        "| target | writers | seconds | writers' endings | cleanups run | rows found | problems |",
        "|---|---:|---:|---|---:|---|---|",
    ]
    for r in results:
        endings = ", ".join(f"{e}: {n}" for e, n in Counter(r.endings).items())
        rows = "; ".join(f"{k}: {v}" for k, v in r.rows.items())
        problems = "; ".join(r.problems) or "none"
        lines.append(
            f"| {r.target} | {r.writers} | {r.seconds:.0f} | {endings} | {r.cleanups} | {rows} | {problems} |"
        )
    return "\n".join(lines)


def commit() -> str:
    """The checkout's commit (`+` when its files differ from it), or `?` outside a git checkout."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "?"
    return head + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")


def write_report(
    report: Path,
    results: dict[str, list[Outcome]],
    args: argparse.Namespace,
    started: datetime,
    concurrent: list[ConcurrencyResult],
    earlier: str = "",
) -> None:
    """Rewrite `report`: the `earlier` runs' text (if any), then this run's."""
    failing = [o for outcomes in results.values() for o in outcomes if not o.ok]
    command = "python bench/faults.py " + shlex.join(sys.argv[1:])
    heading = f"## Run of {started:%Y-%m-%d %H:%M} UTC" if earlier else "# Injected faults (bench/faults.py)"
    text = f"""{heading}

Run {started:%Y-%m-%d %H:%M} UTC of commit {commit()} on {platform.node()} ({platform.machine()}, Python
{platform.python_version()}), with `{command.strip()}`; {args.count} records in {args.batches}
batches per run; trials asked per target: {args.trials} (lake: {args.lake_trials}; {", ".join(CLOUDS)}:
{args.cloud_trials}). Every trial
is a fresh target and storage folder; see bench/README.md for what a trial does and checks.

{table(results)}

{points(results)}

What a trial cost (target: make a fresh one; fault: the faulted write; recovery: `flush` and,
after a kill or an error, the write again; check: read and compare everything):

{costs(results)}

Trials failing a check: {len(failing)}.
"""
    for outcome in failing[:20]:
        text += f"\n- {json.dumps(outcome_row(outcome), default=str)[:600]}"
    report.write_text(earlier + text + "\n\n" + concurrency(concurrent) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=100, help="trials per target (default 100)")
    parser.add_argument("--lake-trials", type=int, default=30, help="trials on the lake (default 30)")
    parser.add_argument("--count", type=int, default=40, help="records per run (default 40)")
    parser.add_argument("--batches", type=int, default=2, help="batches per run (default 2)")
    parser.add_argument(
        "--cloud-trials", type=int, default=30, help=f"trials on {', '.join(CLOUDS)} (default 30)"
    )
    parser.add_argument(
        "--targets", default=",".join(TARGETS), help="comma-separated, of: " + ", ".join(TARGETS)
    )
    parser.add_argument(
        "--until", help="HH:MM UTC: start no trial after it (each target gets an equal share of the time)"
    )
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--layouts", default="", help="layouts on DuckDB and PostgreSQL (default: census,hightouch)"
    )
    parser.add_argument(
        "--concurrent", default="postgres,lake", help="targets of the 8-writer run (empty: none)"
    )
    parser.add_argument(
        "--faults", default="", help="comma-separated: only these faults (default: every fault a target has)"
    )
    parser.add_argument(
        "--report", type=Path, default=REPORT, help="the report to write (default: FAULTS.md)"
    )
    parser.add_argument(
        "--add", action="store_true", help="keep the report's earlier runs; add this run below them"
    )
    args = parser.parse_args()
    names = [n for n in args.targets.split(",") if n]
    unknown = sorted(set(names) - set(TARGETS))
    if unknown:
        parser.error(f"unknown target {unknown[0]!r} (known: {', '.join(TARGETS)})")
    # Stopped with SIGTERM, stop the servers and writer processes it started too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    until = deadline(args.until)
    layouts = tuple(args.layouts.split(",")) if args.layouts else None
    started = datetime.now(UTC)
    earlier = args.report.read_text().rstrip() + "\n\n" if args.add and args.report.exists() else ""
    results: dict[str, list[Outcome]] = {}
    concurrent: list[ConcurrencyResult] = []
    with (
        tempfile.TemporaryDirectory(prefix="synclog-faults-") as folder,
        args.report.with_suffix(".jsonl").open("a") as log_file,
        postgres_server() as pg,
        s3_server() as s3,
    ):
        root = Path(folder)
        # Writers reach storage on moto S3 with its keys (the clouds' storage is there).
        workers = Workers(root / "logs", env=s3.environment)

        def log(outcome: Outcome) -> None:
            log_file.write(json.dumps({"at": datetime.now(UTC).isoformat(), **outcome_row(outcome)}) + "\n")
            log_file.flush()

        def bucket() -> str:
            name = f"faults-{uuid.uuid4().hex[:8]}"
            s3.create_bucket(name)
            return name

        def scenario_of(
            name: str, stack: contextlib.ExitStack, layouts: tuple[str, ...] | None = None
        ) -> Scenario:
            if name == "duckdb":
                return DuckDBScenario(root, layouts)
            if name == "postgres":
                return PostgresScenario(root, pg.host, pg.port, pg.user, pg.database, layouts)
            if name == "lake":
                return LakeScenario(root, s3.endpoint_url, s3.environment, bucket())
            return cloud_scenario(name, root, stack, pg, s3, bucket())

        try:
            for name in filter(None, args.concurrent.split(",")):
                with contextlib.ExitStack() as stack:
                    scenario = scenario_of(name, stack)
                    outcome = run_concurrently(scenario, workers, count=args.count, batches=args.batches)
                    scenario.close()
                print(outcome, flush=True)
                concurrent.append(outcome)
                write_report(args.report, results, args, started, concurrent, earlier)
            for index, name in enumerate(names):
                trials = {"lake": args.lake_trials, **dict.fromkeys(CLOUDS, args.cloud_trials)}.get(
                    name, args.trials
                )
                # An equal share of the time left to each target still to run.
                share = None if until is None else time.time() + (until - time.time()) / (len(names) - index)
                with contextlib.ExitStack() as stack:  # a cloud's stand-in runs for its trials only
                    scenario = scenario_of(name, stack, layouts)
                    own = (
                        Workers(root / "logs" / name, env={**s3.environment, **scenario.worker_env})
                        if scenario.worker_env
                        else None
                    )
                    if own is not None:
                        stack.callback(own.close)
                    only = tuple(filter(None, args.faults.split(",")))
                    results[name] = run_target(scenario, own or workers, trials, share, args.seed, log, only)
                write_report(args.report, results, args, started, concurrent, earlier)
        finally:
            workers.close()
    print(args.report.read_text())


def cloud_scenario(
    name: str, root: Path, stack: contextlib.ExitStack, pg: Any, s3: Any, bucket: str
) -> Scenario:
    """The scenario of a cloud warehouse, its stand-in started on `stack`."""
    if name == "snowflake":
        from harness.fakesnow_server import fakesnow_server

        snow = stack.enter_context(fakesnow_server(s3=s3))
        return SnowflakeScenario(root, snow.host, snow.port, s3.environment, bucket)
    if name == "redshift":
        from harness.redshift_proxy import redshift_stand_in

        proxy = stack.enter_context(redshift_stand_in(pg, s3))
        return RedshiftScenario(
            root, (pg.host, pg.port, pg.user, pg.database), (proxy.host, proxy.port), proxy.iam_role,
            s3.environment, bucket,
        )  # fmt: skip
    if name == "bigquery":
        from harness.bigquery_server import local_bigquery_server
        from harness.gcs_server import gcs_server

        bq = stack.enter_context(local_bigquery_server())
        gcs = stack.enter_context(gcs_server(bq.gcs_root, bucket=bucket))
        return BigQueryScenario(root, bq.endpoint, gcs.endpoint_url, bucket)
    if name == "databricks-cluster":
        from harness.spark_catalogs import unity_catalog_confs
        from harness.spark_cluster import spark_connect_server

        warehouse = root / "warehouse"
        conf = {**unity_catalog_confs(["census"]), "spark.sql.warehouse.dir": str(warehouse)}
        server = stack.enter_context(spark_connect_server(conf=conf))
        return DatabricksClusterScenario(root, server.remote, warehouse)
    from harness.databricks_sql_server import databricks_sql_server

    dbx = stack.enter_context(databricks_sql_server(["census"], parent_dir=root, environment=s3.environment))
    return DatabricksWarehouseScenario(root, dbx, s3.environment, bucket)


if __name__ == "__main__":
    main()
